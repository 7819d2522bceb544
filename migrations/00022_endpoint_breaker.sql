-- +goose Up

-- A circuit breaker per endpoint, shared by every dispatcher: attempts and
-- failures are counted over a window that starts with the first attempt
-- after the last one ended; when enough of them failed the breaker opens
-- until breaker_until, and the endpoint's deliveries wait (they are neither
-- attempted nor failed). Past breaker_until it is half-open: one delivery
-- at a time probes the endpoint; a success closes the breaker, a failure
-- opens it again. See webhooks.DispatcherConfig.
ALTER TABLE webhook_endpoints ADD COLUMN breaker_until timestamptz,
                              ADD COLUMN window_start timestamptz,
                              ADD COLUMN window_attempts int NOT NULL DEFAULT 0 CHECK (window_attempts >= 0),
                              ADD COLUMN window_failures int NOT NULL DEFAULT 0 CHECK (window_failures >= 0);

-- A rate limit per endpoint, in attempts per second (NULL: none but the
-- dispatcher's in-flight bound), kept as a token bucket every dispatcher
-- draws from when it claims: rate_tokens as of rate_at, refilled at
-- rate_limit per second up to rate_limit.
ALTER TABLE webhook_endpoints ADD COLUMN rate_limit int CHECK (rate_limit BETWEEN 1 AND 10000),
                              ADD COLUMN rate_tokens double precision,
                              ADD COLUMN rate_at timestamptz;

-- +goose Down
ALTER TABLE webhook_endpoints DROP COLUMN rate_limit, DROP COLUMN rate_tokens, DROP COLUMN rate_at;
ALTER TABLE webhook_endpoints DROP COLUMN breaker_until, DROP COLUMN window_start,
                              DROP COLUMN window_attempts, DROP COLUMN window_failures;
