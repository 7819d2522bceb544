package receive_test

import (
	"encoding/json"
	"testing"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/internal/harness/testenv"
	"github.com/onceledger/onceledger/webhooks/receive"
)

const sampleID = "019b7a3c-5e2f-7d10-8a3b-2c4d5e6f7081"

// EventID reads what github.com/google/uuid reads, which is what event IDs
// were parsed with before, and renders the same text.
func TestParseEventIDAgreesWithGoogleUUID(t *testing.T) {
	t.Parallel()
	for _, s := range []string{
		sampleID,
		"019B7A3C-5E2F-7D10-8A3B-2C4D5E6F7081",
		"urn:uuid:" + sampleID,
		"URN:UUID:" + sampleID,
		"{" + sampleID + "}",
		"{" + sampleID + "]",
		"019b7a3c5e2f7d108a3b2c4d5e6f7081",
		"00000000-0000-0000-0000-000000000000",
		"",
		"msg_p5jXN8AQM9LWM0D4loKWxJek",
		"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f708",
		"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f70811",
		"019b7a3c+5e2f-7d10-8a3b-2c4d5e6f7081",
		"019b7a3c-5e2f-7d10-8a3b-2c4d5e6f708g",
		"urn:uuie:" + sampleID,
		"019b7a3c5e2f7d108a3b2c4d5e6f708x",
	} {
		checkAgainstUUID(t, s)
	}
}

func FuzzParseEventID(f *testing.F) {
	f.Add(sampleID)
	f.Add("urn:uuid:" + sampleID)
	f.Add("{" + sampleID + "}")
	f.Add("019b7a3c5e2f7d108a3b2c4d5e6f7081")
	f.Fuzz(func(t *testing.T, s string) { checkAgainstUUID(t, s) })
}

func checkAgainstUUID(t *testing.T, s string) {
	t.Helper()
	got, err := receive.ParseEventID(s)
	want, wantErr := uuid.Parse(s)
	if (err == nil) != (wantErr == nil) {
		t.Fatalf("ParseEventID(%q) error %v, uuid.Parse error %v", s, err, wantErr)
	}
	if err != nil {
		if got != (receive.EventID{}) {
			t.Fatalf("ParseEventID(%q) = %v with error %v", s, got, err)
		}
		return
	}
	if got != receive.EventID(want) || got.String() != want.String() {
		t.Fatalf("ParseEventID(%q) = %s, uuid.Parse = %s", s, got, want)
	}
}

func TestEventIDJSONAndText(t *testing.T) {
	t.Parallel()
	id := receive.EventID(uuid.Must(uuid.NewV7()))
	b, err := json.Marshal(struct{ ID receive.EventID }{id})
	if err != nil || string(b) != `{"ID":"`+id.String()+`"}` {
		t.Fatalf("json.Marshal = %s, %v", b, err)
	}
	var back struct{ ID receive.EventID }
	if err := json.Unmarshal(b, &back); err != nil || back.ID != id {
		t.Fatalf("json.Unmarshal = %s, %v; want %s", back.ID, err, id)
	}
	if err := json.Unmarshal([]byte(`{"ID":"nope"}`), &back); err == nil {
		t.Fatal("json.Unmarshal accepts a non-UUID")
	}
	if !(receive.EventID{}).IsZero() || id.IsZero() {
		t.Fatal("IsZero")
	}
}

// An EventID goes into and comes out of uuid and text columns through pgx
// as the UUID it is.
func TestEventIDInPostgres(t *testing.T) {
	t.Parallel()
	pool, err := pgxpool.New(t.Context(), testenv.Postgres(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	id := receive.EventID(uuid.Must(uuid.NewV7()))
	if _, err := pool.Exec(t.Context(), `CREATE TABLE ids (u uuid NOT NULL, s text NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	if _, err := pool.Exec(t.Context(), `INSERT INTO ids VALUES ($1, $2)`, id, id); err != nil {
		t.Fatal(err)
	}
	var u, s receive.EventID
	var asText string
	if err := pool.QueryRow(t.Context(), `SELECT u, s, u::text FROM ids`).Scan(&u, &s, &asText); err != nil {
		t.Fatal(err)
	}
	if u != id || s != id || asText != id.String() {
		t.Fatalf("read back %s, %s, %q; want %s", u, s, asText, id)
	}
	var n int
	if err := pool.QueryRow(t.Context(), `SELECT count(*) FROM ids WHERE u = $1`, id).Scan(&n); err != nil || n != 1 {
		t.Fatalf("WHERE u = id: %d rows, %v", n, err)
	}
	var null receive.EventID
	if err := pool.QueryRow(t.Context(), `SELECT NULL::uuid`).Scan(&null); err == nil {
		t.Fatal("NULL scanned into an EventID")
	}
}
