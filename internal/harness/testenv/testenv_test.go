package testenv_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/onceledger/onceledger/internal/harness/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

func TestDatabasesAreIsolated(t *testing.T) {
	created := make(chan struct{})
	t.Run("group", func(t *testing.T) {
		t.Run("creator", func(t *testing.T) {
			t.Parallel()
			defer close(created)
			dsn := testenv.Postgres(t)
			mustExec(t, dsn, "CREATE TABLE only_here (id int)")
			if !tableExists(t, dsn, "only_here") {
				t.Fatal("table missing right after CREATE TABLE")
			}
		})
		t.Run("observer", func(t *testing.T) {
			t.Parallel()
			dsn := testenv.Postgres(t)
			select {
			case <-created:
			case <-time.After(time.Minute):
				t.Fatal("creator never finished")
			}
			if tableExists(t, dsn, "only_here") {
				t.Fatal("table created in another test's database is visible here")
			}
		})
	})
}

func TestDatabaseIsDroppedAfterTest(t *testing.T) {
	var dsn string
	t.Run("owner", func(t *testing.T) {
		dsn = testenv.Postgres(t)
		// Left open on purpose: an open session must not stop the drop.
		connect(t, dsn)
	})
	// The drop runs in the background once the test has ended: wait for
	// it, and say what was seen if it never comes.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		conn, err := pgx.Connect(ctx, dsn)
		if err == nil {
			conn.Close(ctx)
		} else {
			var pgErr *pgconn.PgError
			if errors.As(err, &pgErr) && pgErr.Code == "3D000" {
				return
			}
		}
		select {
		case <-ctx.Done():
			t.Fatalf("database still there 30s after its test ended (last connect: %v), want SQLSTATE 3D000 (database does not exist)", err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

var prepareCalls atomic.Int32

// prepareSchema is this binary's only prepare function: PostgresWith builds
// one template per binary.
func prepareSchema(ctx context.Context, dsn string) error {
	prepareCalls.Add(1)
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return err
	}
	// Deliberately left open to prove leaked sessions do not break cloning.
	_, err = conn.Exec(ctx, `
		CREATE TABLE accounts (id text PRIMARY KEY);
		INSERT INTO accounts VALUES ('seed');
		SELECT pg_sleep(0.2);`)
	return err
}

func TestPostgresWithPreparesOnce(t *testing.T) {
	const callers = 6
	t.Run("group", func(t *testing.T) {
		for i := range callers {
			t.Run(fmt.Sprintf("caller%d", i), func(t *testing.T) {
				t.Parallel()
				dsn := testenv.PostgresWith(t, prepareSchema)
				mustExec(t, dsn, "INSERT INTO accounts VALUES ('mine')")
				var n int
				queryRow(t, dsn, "SELECT count(*) FROM accounts", &n)
				if n != 2 {
					t.Fatalf("caller %d sees %d accounts, want 2 (seed + its own)", i, n)
				}
			})
		}
	})
	if got := prepareCalls.Load(); got != 1 {
		t.Fatalf("prepare ran %d times, want 1", got)
	}
}

func TestNATS(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	nc, err := nats.Connect(testenv.NATS(t))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}})
	if err != nil {
		t.Fatalf("CreateStream: %v", err)
	}
	if _, err := js.Publish(ctx, "t.one", []byte("x")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	msg, err := stream.GetMsg(ctx, 1)
	if err != nil || string(msg.Data) != "x" {
		t.Fatalf("GetMsg = %v, %v; want \"x\"", msg, err)
	}
}

func TestNATSServerPerTest(t *testing.T) {
	t.Parallel()
	a, b := testenv.NATSServer(t), testenv.NATSServer(t)
	if a.ClientURL() == b.ClientURL() {
		t.Fatalf("two servers share %s", a.ClientURL())
	}
	a.Shutdown()
	if _, err := nats.Connect(a.ClientURL(), nats.NoReconnect(), nats.Timeout(time.Second)); err == nil {
		t.Fatal("connected to a server that was shut down")
	}
}

func connect(t *testing.T, dsn string) *pgx.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	return conn
}

func mustExec(t *testing.T, dsn, sql string) {
	t.Helper()
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func queryRow(t *testing.T, dsn, sql string, dest ...any) {
	t.Helper()
	conn := connect(t, dsn)
	defer conn.Close(context.Background())
	if err := conn.QueryRow(context.Background(), sql).Scan(dest...); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}

func tableExists(t *testing.T, dsn, table string) bool {
	t.Helper()
	var exists bool
	queryRow(t, dsn, "SELECT to_regclass('public."+table+"') IS NOT NULL", &exists)
	return exists
}
