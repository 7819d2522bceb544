# syntax=docker/dockerfile:1

# ---- build stage -----------------------------------------------------------
# Pinned to the Go patch release named in go.mod so the image never has to
# fetch a different toolchain.
FROM golang:1.26.8-bookworm AS build

WORKDIR /src

# Download modules in their own layer so that source-only changes reuse it.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod \
    go mod download

COPY . .

# Static binary (no cgo) so it runs on distroless/static.
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o /out/onceledger ./cmd/onceledger

# ---- runtime stage ---------------------------------------------------------
# No shell, no package manager; runs as uid 65532 (nonroot).
FROM gcr.io/distroless/static-debian12:nonroot

COPY --from=build /out/onceledger /onceledger

USER nonroot:nonroot
# The HTTP API (ONCELEDGER_HTTP_ADDR, default :8080) and the health endpoints
# and metrics on their own listener (ONCELEDGER_HEALTH_ADDR, default :8081).
EXPOSE 8080 8081

ENTRYPOINT ["/onceledger"]
CMD ["run"]
