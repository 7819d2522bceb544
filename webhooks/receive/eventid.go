package receive

import (
	"database/sql/driver"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// EventID is an event's ID: a UUID (version 7, time-ordered), the same in
// the body's "id" and in the webhook-id header of every attempt.
//
// It is a [16]byte, so it converts to and from other UUID types
// (uuid.UUID(ev.ID), receive.EventID(u)); this package has no dependency
// for it. It goes into and out of uuid and text columns through
// database/sql's Valuer and Scanner, which pgx honours.
type EventID [16]byte

// ParseEventID reads a UUID in the forms the encoding of EventID in JSON
// also accepts: xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, the same with an
// urn:uuid: prefix or in braces, or 32 hex digits. Hex digits may be
// upper or lower case. (These are the forms github.com/google/uuid
// parses, so IDs read by older releases read the same.)
func ParseEventID(s string) (EventID, error) {
	var id EventID
	switch len(s) {
	case 36:
	case 36 + 9:
		if !strings.EqualFold(s[:9], "urn:uuid:") {
			return id, fmt.Errorf("event id: invalid urn prefix %q", s[:9])
		}
		s = s[9:]
	case 36 + 2:
		// Like github.com/google/uuid, the closing brace is not checked.
		s = s[1:]
	case 32:
		if _, err := hex.Decode(id[:], []byte(s)); err != nil {
			return EventID{}, errors.New("event id: invalid UUID format")
		}
		return id, nil
	default:
		return id, fmt.Errorf("event id: invalid UUID length %d", len(s))
	}
	if s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-' {
		return EventID{}, errors.New("event id: invalid UUID format")
	}
	hexDigits := s[0:8] + s[9:13] + s[14:18] + s[19:23] + s[24:36]
	if _, err := hex.Decode(id[:], []byte(hexDigits)); err != nil {
		return EventID{}, errors.New("event id: invalid UUID format")
	}
	return id, nil
}

// IsZero reports whether id is the nil UUID, which no event has.
func (id EventID) IsZero() bool { return id == EventID{} }

// String returns id as xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, lower case.
func (id EventID) String() string {
	var b [36]byte
	hex.Encode(b[0:8], id[0:4])
	b[8] = '-'
	hex.Encode(b[9:13], id[4:6])
	b[13] = '-'
	hex.Encode(b[14:18], id[6:8])
	b[18] = '-'
	hex.Encode(b[19:23], id[8:10])
	b[23] = '-'
	hex.Encode(b[24:], id[10:])
	return string(b[:])
}

// MarshalText renders id as String does; JSON shows it as a string.
func (id EventID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText parses id as ParseEventID does.
func (id *EventID) UnmarshalText(b []byte) error {
	v, err := ParseEventID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}

// Value stores id as its text form, which Postgres reads into uuid and
// text columns alike.
func (id EventID) Value() (driver.Value, error) { return id.String(), nil }

// Scan reads a uuid or text column; NULL is an error, since no receipt
// or event lacks its ID.
func (id *EventID) Scan(src any) error {
	switch v := src.(type) {
	case string:
		return id.UnmarshalText([]byte(v))
	case []byte:
		if len(v) == 16 {
			copy(id[:], v)
			return nil
		}
		return id.UnmarshalText(v)
	case nil:
		return errors.New("event id: cannot scan NULL")
	}
	return fmt.Errorf("event id: cannot scan %T", src)
}
