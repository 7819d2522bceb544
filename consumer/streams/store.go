package streams

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"
)

// StoreUse is how full the command stream and the account's JetStream
// store are: what the health check, the metrics and the console read.
type StoreUse struct {
	Stream string
	// Bytes the stream stores, its MaxBytes (-1 or 0: none) and its
	// MaxMsgSize (the room a new command may need).
	Bytes      uint64
	MaxBytes   int64
	MaxMsgSize int32
	// AccountBytes the account's JetStream store holds, and its limit
	// (-1 or 0: none). Unknown (AccountErr) on a server that answers no
	// account information.
	AccountBytes uint64
	AccountMax   int64
	AccountErr   error
}

// ReadStoreUse reads the command stream's use and the account's. An
// error reading the stream is returned; one reading the account is kept
// in AccountErr, the stream's figures being of use alone.
func ReadStoreUse(ctx context.Context, js jetstream.JetStream, stream string) (StoreUse, error) {
	u := StoreUse{Stream: stream}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return u, fmt.Errorf("stream %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return u, fmt.Errorf("stream %s: %w", stream, err)
	}
	u.Bytes, u.MaxBytes, u.MaxMsgSize = info.State.Bytes, info.Config.MaxBytes, info.Config.MaxMsgSize
	acct, err := js.AccountInfo(ctx)
	if err != nil {
		u.AccountErr = errors.Join(errors.New("account information"), err)
		return u, nil
	}
	u.AccountBytes, u.AccountMax = acct.Store, acct.Limits.MaxStore
	return u, nil
}

// Full says why the command stream refuses new commands, or "": the
// stream lacks room for a command of its largest size (it discards new
// messages), or the account's JetStream store is used up. A server whose
// own store is full, with no account limit, is not seen from a client;
// producers then get "insufficient resources" at publishing.
func (u StoreUse) Full() string {
	if u.MaxBytes > 0 && u.Bytes+uint64(max(u.MaxMsgSize, 0)) >= uint64(u.MaxBytes) {
		return fmt.Sprintf("stream %s is full (%d of %d bytes): new commands are refused", u.Stream, u.Bytes, u.MaxBytes)
	}
	if u.AccountErr == nil && u.AccountMax > 0 && u.AccountBytes >= uint64(u.AccountMax) {
		return fmt.Sprintf("the account's JetStream store is full (%d of %d bytes): new commands are refused", u.AccountBytes, u.AccountMax)
	}
	return ""
}
