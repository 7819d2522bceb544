package txn

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/consumer/inbox"
	"github.com/onceledger/onceledger/ledger"
	"github.com/onceledger/onceledger/protocol"
)

// Request is one command to run through the inbox.
type Request struct {
	Company     string
	Command     string
	Key         string
	Fingerprint []byte
	Decoded     ledger.Command
	// StreamSequence is the JetStream sequence of the message, kept with the
	// key for operators; 0 when unknown.
	StreamSequence uint64
}

// NewRequest decodes and fingerprints a command body: the request a
// message with this subject, key and body makes. key is a key, not a
// header value: protocol.ParseKey reads one. Its error is an
// invalid_command *ledger.Error (or the key's error): the body can never
// succeed.
func NewRequest(company, command, key string, body []byte) (*Request, *ledger.Error) {
	if kerr := protocol.CheckKey(key); kerr != nil {
		return nil, kerr
	}
	if !ledger.KnownCommand(command) {
		_, err := ledger.Decode(command, nil)
		return nil, err.(*ledger.Error)
	}
	fp, err := protocol.Fingerprint(command, body)
	if err != nil {
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
	}
	cmd, err := ledger.Decode(command, body)
	if err != nil {
		if e, ok := err.(*ledger.Error); ok {
			return nil, e
		}
		return nil, ledger.Errorf(ledger.CodeInvalidCommand, "%v", err)
	}
	return &Request{Company: company, Command: command, Key: key, Fingerprint: fp, Decoded: cmd}, nil
}

// Outcome says what became of a request.
type Outcome int

const (
	// Executed: the command ran; its effects, events and result committed.
	Executed Outcome = iota + 1
	// Replayed: the key has a stored result for the same payload; nothing
	// was written.
	Replayed
	// Reused: the key has a stored result for another payload; nothing was
	// written or executed.
	Reused
	// InFlight: another transaction holds the key; nothing was written.
	InFlight
)

func (o Outcome) String() string {
	switch o {
	case Executed:
		return "executed"
	case Replayed:
		return "replayed"
	case Reused:
		return "reused"
	case InFlight:
		return "in_flight"
	}
	return fmt.Sprintf("Outcome(%d)", int(o))
}

// Answer is what became of one request: its outcome and the result to
// send, or Err, a transient failure after which nothing of it is stored
// and the same request may be sent again.
type Answer struct {
	Outcome Outcome
	Result  protocol.Result
	// Reply, when set, is Result's JSON, encoded already (an executed
	// command's answer is the result it stored).
	Reply []byte
	Err   error
	// Answered, for a replay, says the stored result is this very
	// message's: the message ran before, on a delivery that ended
	// without its acknowledgement or on the cell its company moved
	// from. A retry, a new message under the key, is not.
	Answered bool
}

// decide answers a claimed key without executing it: in flight when
// another transaction holds it, a replay or a reuse when a result is
// stored. done is false when the command must execute.
func decide(req *Request, locked bool, row *inbox.Row) (a Answer, done bool) {
	if row == nil && !locked {
		return Answer{Outcome: InFlight, Result: protocol.ErrorResult(req.Company, req.Key, req.Command,
			&ledger.Error{Code: ledger.CodeIdempotencyKeyInFlight, Message: protocol.MessageKeyInFlight})}, true
	}
	if row == nil {
		return Answer{}, false
	}
	if row.Status == inbox.StatusRefused {
		// The body was refused as wrong: the key is free for whatever
		// comes, once its lock is held. A corrected body runs; so does
		// the same one, which a rule of the date or of other records
		// (a month that had not ended, a missing exchange rate) may now
		// let through.
		if !locked {
			return decide(req, false, nil)
		}
		return Answer{}, false
	}
	if row.Command != req.Command || !bytes.Equal(row.Fingerprint, req.Fingerprint) {
		e := &ledger.Error{Code: ledger.CodeIdempotencyKeyReused, Message: protocol.MessageKeyReused}
		if row.Command != req.Command {
			e.Details = map[string]any{"original_command": row.Command}
		}
		return Answer{Outcome: Reused, Result: protocol.ErrorResult(req.Company, req.Key, req.Command, e)}, true
	}
	res, err := StoredResult(row)
	if err != nil {
		return Answer{Err: err}, true
	}
	return Answer{Outcome: Replayed, Result: res,
		Answered: req.StreamSequence != 0 && row.StreamSequence == int64(req.StreamSequence)}, true
}

// StoredResult decodes a stored result as a replay.
func StoredResult(row *inbox.Row) (protocol.Result, error) {
	var res protocol.Result
	if err := json.Unmarshal(row.Result, &res); err != nil {
		return protocol.Result{}, fmt.Errorf("consumer: stored result of %s/%s is unreadable: %w", row.Company, row.Key, err)
	}
	res.Replayed = true
	return res, nil
}

// CutBeforeRerun is the length of the longest prefix of reqs in which no
// repeat of a key would have to run again. One transaction answers a
// repeat from its key's first command, which is what the repeat would get
// on its own only when nothing that could change that answer came between
// them: a repeat with another body (or command) would run after a refusal
// (inbox.StatusRefused), and so would the same body after another command
// of its company (a recorded rate, a closed month, the company's
// creation) that could let a refused first through or refuse it
// otherwise. Such a repeat ends the batch and starts the next one, which
// runs after this one committed, as the repeat would one at a time.
func CutBeforeRerun(reqs []*Request) int {
	type key struct{ company, key string }
	first := map[key]*Request{}
	last := map[string]string{} // the key of each company's last command so far
	for i, r := range reqs {
		k := key{r.Company, r.Key}
		prev, seen := last[r.Company]
		last[r.Company] = r.Key
		f, ok := first[k]
		if !ok {
			first[k] = r
			continue
		}
		if f.Command != r.Command || !bytes.Equal(f.Fingerprint, r.Fingerprint) || seen && prev != r.Key {
			return i
		}
	}
	return len(reqs)
}
