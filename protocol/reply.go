package protocol

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
)

// EnvReplyPrefixes names the worker setting that lists the subject
// prefixes a company's answers may go to (see ReplyPolicy).
const EnvReplyPrefixes = "ONCELEDGER_REPLY_PREFIXES"

// DefaultReplyPrefixes are the prefixes answers may go to when
// EnvReplyPrefixes is not set: the reply space the shipped NATS
// configuration gives each company's producers (_INBOX_<company>.>), and
// the default inbox of NATS clients (_INBOX.), which producers of the
// shipped configuration cannot read and which the HTTP API and dev mode's
// clients receive on.
const DefaultReplyPrefixes = "_INBOX.,_INBOX_{company}."

// AnySubject in the prefix list lets answers go to any subject
// ReplySubjectAllowed allows: for a server without per-company
// permissions, where every client may read every subject anyway.
const AnySubject = ">"

// ReplyPolicy says which subjects the worker may answer a company's
// commands and lookups on. A producer chooses the subject, and the worker
// publishes there with its own rights, so a subject outside the company's
// reply space would let one company answer into another's: a forged reply
// to a request another company's producer waits on, or a message on a
// subject another company's applications read.
type ReplyPolicy struct {
	prefixes []string // each ends with "." and may hold {company}
	any      bool
}

// ParseReplyPrefixes reads a comma-separated list of subject prefixes, each
// ending with "." and optionally holding {company}, which stands for the
// company whose answer it is; or AnySubject. Empty is
// DefaultReplyPrefixes.
func ParseReplyPrefixes(list string) (ReplyPolicy, error) {
	if strings.TrimSpace(list) == "" {
		list = DefaultReplyPrefixes
	}
	var p ReplyPolicy
	for _, s := range strings.Split(list, ",") {
		s = strings.TrimSpace(s)
		switch {
		case s == "":
			continue
		case s == AnySubject:
			p.any = true
			continue
		case !strings.HasSuffix(s, "."):
			return ReplyPolicy{}, fmt.Errorf("reply prefix %q must end with a dot, so that it names whole tokens (_INBOX_{company}.)", s)
		case strings.ContainsAny(s, "*> \t\r\n"):
			return ReplyPolicy{}, fmt.Errorf("reply prefix %q holds a wildcard or white space", s)
		case strings.Contains(s, ".."):
			return ReplyPolicy{}, fmt.Errorf("reply prefix %q has an empty token", s)
		case !ReplySubjectAllowed(strings.ReplaceAll(s, "{company}", "c")):
			return ReplyPolicy{}, fmt.Errorf("reply prefix %q is a subject of the server or of onceledger", s)
		}
		if strings.ContainsAny(strings.ReplaceAll(s, "{company}", ""), "{}") {
			return ReplyPolicy{}, fmt.Errorf("reply prefix %q has a placeholder other than {company}", s)
		}
		p.prefixes = append(p.prefixes, s)
	}
	if !p.any && len(p.prefixes) == 0 {
		return ReplyPolicy{}, errors.New("no reply prefix")
	}
	return p, nil
}

// Refusal says why the worker may not answer company on subject, or ""
// when it may.
func (p ReplyPolicy) Refusal(company, subject string) string {
	switch {
	case !ReplySubjectAllowed(subject):
		return "Reply-To is a subject of the server or of onceledger"
	case strings.ContainsAny(subject, "*> \t\r\n") || strings.Contains(subject, "..") || strings.HasPrefix(subject, ".") || strings.HasSuffix(subject, "."):
		return "Reply-To is not a subject one can publish on"
	case p.any:
		return ""
	}
	for _, prefix := range p.prefixes {
		if strings.HasPrefix(subject, strings.ReplaceAll(prefix, "{company}", company)) {
			return ""
		}
	}
	return fmt.Sprintf("Reply-To is outside company %s's reply space (%s: %s)", company, EnvReplyPrefixes, strings.Join(p.list(company), ", "))
}

// list is the prefixes for company, for messages.
func (p ReplyPolicy) list(company string) []string {
	out := make([]string, len(p.prefixes))
	for i, s := range p.prefixes {
		out[i] = strings.ReplaceAll(s, "{company}", company)
	}
	return out
}

// envPolicy is the policy of EnvReplyPrefixes, read again only when the
// variable changes.
var envPolicy struct {
	sync.Mutex
	raw    string
	read   bool
	policy ReplyPolicy
	err    error
}

// ReplyPolicyFromEnv is the policy EnvReplyPrefixes sets, DefaultReplyPrefixes
// when it is not set.
func ReplyPolicyFromEnv() (ReplyPolicy, error) {
	raw := os.Getenv(EnvReplyPrefixes)
	envPolicy.Lock()
	defer envPolicy.Unlock()
	if !envPolicy.read || envPolicy.raw != raw {
		envPolicy.policy, envPolicy.err = ParseReplyPrefixes(raw)
		if envPolicy.err != nil {
			envPolicy.err = fmt.Errorf("%s: %w", EnvReplyPrefixes, envPolicy.err)
		}
		envPolicy.raw, envPolicy.read = raw, true
	}
	return envPolicy.policy, envPolicy.err
}

// ReplyRefusal says why the worker may not answer a message that arrived
// on subject (a command's, ledger.cmd.…, or a lookup's, ledger.result.…)
// on replyTo, under the policy of EnvReplyPrefixes; "" when it may. The
// company is the subject's: the one the producer's permissions let it
// publish for. An invalid setting refuses every answer, saying so. An
// empty replyTo asks for no answer and is not refused.
func ReplyRefusal(subject, replyTo string) string {
	if replyTo == "" {
		return ""
	}
	// The company token is taken as it stands, valid or not: a malformed
	// command is answered with its refusal, and the token is still the
	// one the producer's permissions let it publish on.
	company, ok := strings.CutPrefix(subject, ResultSubjectPrefix)
	if !ok {
		rest, cmd := strings.CutPrefix(ProducerSubject(subject), CommandSubjectPrefix)
		company, _, _ = strings.Cut(rest, ".")
		if !cmd || company == "" {
			return "the company of " + subject + " is unknown"
		}
	}
	p, err := ReplyPolicyFromEnv()
	if err != nil {
		return err.Error()
	}
	return p.Refusal(company, replyTo)
}
