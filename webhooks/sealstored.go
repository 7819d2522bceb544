package webhooks

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// SealStored brings every endpoint's stored secrets under keys: a secret an
// earlier release stored readable is sealed, a secret sealed with another
// key of the ring is sealed again with its first key, and secrets past their
// grace period, which sign nothing, are dropped. It returns how many
// endpoints it changed. The worker runs it at start, and "onceledger secrets
// rotate" runs it alone; after it, the keys other than the first can be
// removed from ONCELEDGER_SECRETS_KEY.
//
// A secret that still signs but is sealed with a key the ring does not hold
// fails it, naming the key, and changes nothing: that key was removed too
// early and has to be put back (after the new one).
func SealStored(ctx context.Context, pool *pgxpool.Pool, keys *Keyring) (int, error) {
	changed := 0
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		// Only the rows that need it are locked: those with an element
		// not sealed with the first key.
		rows, err := tx.Query(ctx, `
			SELECT id::text, company_id, secrets FROM webhook_endpoints e
			 WHERE jsonb_typeof(secrets) = 'array'
			   AND EXISTS (SELECT 1 FROM jsonb_array_elements(e.secrets) s
			                WHERE NOT starts_with(coalesce(s->>'sealed', ''), $1))
			 ORDER BY id
			   FOR UPDATE`, sealedPrefix+keys.KeyID()+":")
		if err != nil {
			return fmt.Errorf("read webhook endpoint secrets: %w", err)
		}
		type update struct {
			id      string
			secrets []byte
		}
		var updates []update
		missing := map[string][]string{} // key id → endpoints
		now := time.Now()
		var id, company string
		var raw []byte
		_, err = pgx.ForEachRow(rows, []any{&id, &company, &raw}, func() error {
			var stored []storedSecret
			if err := json.Unmarshal(raw, &stored); err != nil {
				return fmt.Errorf("webhook endpoint %s secrets: %w", id, err)
			}
			kept := make([]storedSecret, 0, len(stored))
			for _, s := range stored {
				if !s.activeAt(now) {
					continue
				}
				plain := s.Secret
				if s.Sealed != "" {
					if plain, err = keys.Open(company, s.Sealed); err != nil {
						kid, _ := SealedKeyID(s.Sealed)
						missing[kid] = append(missing[kid], id)
						continue
					}
				}
				kept = append(kept, storedSecret{Sealed: keys.Seal(company, plain), ExpiresAt: s.ExpiresAt})
			}
			body, err := json.Marshal(kept)
			if err != nil {
				return err
			}
			updates = append(updates, update{id, body})
			return nil
		})
		if err != nil {
			return err
		}
		if len(missing) > 0 {
			return unknownKeys(missing)
		}
		b := &pgx.Batch{}
		for _, u := range updates {
			b.Queue(`UPDATE webhook_endpoints SET secrets = $2, updated_at = now() WHERE id = $1::uuid`, u.id, u.secrets)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("store sealed webhook endpoint secrets: %w", err)
		}
		changed = len(updates)
		return nil
	})
	return changed, err
}

func unknownKeys(missing map[string][]string) error {
	ids := make([]string, 0, len(missing))
	for kid := range missing {
		ids = append(ids, kid)
	}
	sort.Strings(ids)
	var parts []string
	for _, kid := range ids {
		eps := missing[kid]
		more := ""
		if len(eps) > 3 {
			eps, more = eps[:3], fmt.Sprintf(" and %d more", len(missing[kid])-3)
		}
		parts = append(parts, fmt.Sprintf("key %s seals the secrets of endpoint %s%s", kid, strings.Join(eps, ", "), more))
	}
	return fmt.Errorf("%w: %s; put the key back in ONCELEDGER_SECRETS_KEY, after the one that seals, and start again",
		ErrUnknownKey, strings.Join(parts, "; "))
}
