package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	neturl "net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// The whole suite with every read offered to a hot standby first: each
// test writes and then reads back at once, so every consistent read must
// wait for the standby or be answered by the primary.
func TestPostgresStandby(t *testing.T) {
	storetest.Run(t, func(t *testing.T) *sqlstore.Store {
		url := dbtest.Postgres(t)
		return storetest.OpenWith(t, url, sqlstore.Options{Standbys: []string{dbtest.PostgresStandby(t, url)}})
	})
}

// Two processes, each with the standby; the second polls only on
// notification, and its poller reads the standby.
func TestTwoStoresPostgresStandby(t *testing.T) {
	storetest.RunTwoStoresWithStandbys(t, func(t *testing.T) string { return dbtest.Postgres(t) }, time.Hour,
		func(t *testing.T, url string) []string { return []string{dbtest.PostgresStandby(t, url)} })
}

func cm(name string) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "ns", Name: name} }

func value(name string) kv.Encoder {
	return func(rev int64) (kv.Entry, error) {
		return kv.Entry{Value: []byte(`{"metadata":{"name":"` + name + `"}}`),
			Fields: map[string]string{"metadata.name": name, "metadata.namespace": "ns"}}, nil
	}
}

func listNames(t *testing.T, s *sqlstore.Store, opts kv.ListOptions) []string {
	t.Helper()
	opts.Resource = "configmaps"
	res, err := s.List(context.Background(), opts)
	if err != nil {
		t.Fatalf("list %+v: %v", opts, err)
	}
	var out []string
	for _, r := range res.Items {
		out = append(out, r.Name)
	}
	return out
}

// With the standby's replay paused, reads that need the newest state are
// answered by the primary, a read that accepts any state by the standby
// (which shows the older state: that is how the test sees who answered),
// and a watch on another replica, whose poller reads the standby, still
// gets the event. Not parallel: pausing replay pauses it for every
// database on the shared standby.
func TestStandbyBehindFallsBackToPrimary(t *testing.T) {
	ctx := context.Background()
	url := dbtest.Postgres(t)
	standbyURL := dbtest.PostgresStandby(t, url)
	a := storetest.OpenWith(t, url, sqlstore.Options{Standbys: []string{standbyURL}})
	b := storetest.OpenWith(t, url, sqlstore.Options{Standbys: []string{standbyURL}, PollInterval: time.Hour})

	first, err := a.Create(ctx, cm("a"), value("a"))
	if err != nil {
		t.Fatal(err)
	}
	sb, err := sql.Open("pgx", standbyURL)
	if err != nil {
		t.Fatal(err)
	}
	// Closed after the cleanup that resumes replay (cleanups run last
	// registered first), so a failing test leaves the standby replaying.
	t.Cleanup(func() { sb.Close() })
	dbtest.WaitStandby(t)

	w, err := b.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: first.Rev})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	if _, err := sb.ExecContext(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			if _, err := sb.ExecContext(ctx, "SELECT pg_wal_replay_resume()"); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Cleanup(resume)
	second, err := a.Create(ctx, cm("b"), value("b"))
	if err != nil {
		t.Fatal(err)
	}

	// Consistent reads see the write (the primary answers).
	for _, s := range []*sqlstore.Store{a, b} {
		got, err := s.Get(ctx, cm("b"))
		if err != nil || got.Rev != second.Rev {
			t.Fatalf("consistent get of b behind a paused standby: rev %d, %v; want rev %d", got.Rev, err, second.Rev)
		}
		if names := listNames(t, s, kv.ListOptions{}); !slices.Equal(names, []string{"a", "b"}) {
			t.Fatalf("consistent list behind a paused standby: %v; want [a b]", names)
		}
	}
	// An exact revision the standby has not replayed: the primary.
	if names := listNames(t, a, kv.ListOptions{Rev: second.Rev}); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("list at rev %d: %v; want [a b]", second.Rev, names)
	}
	// Not older than a revision the standby has: the standby answers,
	// with the state it has replayed.
	if names := listNames(t, a, kv.ListOptions{MinRev: first.Rev}); !slices.Equal(names, []string{"a"}) {
		t.Fatalf("list not older than %d from the paused standby: %v; want [a] (its replayed state)", first.Rev, names)
	}
	// Not older than the new write: the primary.
	if names := listNames(t, a, kv.ListOptions{MinRev: second.Rev}); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("list not older than %d: %v; want [a b]", second.Rev, names)
	}
	// The other replica learnt of the commit by notification; its poller
	// finds the standby behind and reads the primary.
	select {
	case ev := <-w.Events():
		if ev.Name != "b" || ev.Rev != second.Rev {
			t.Fatalf("watch event %s %s@%d; want b@%d", ev.Type, ev.Name, ev.Rev, second.Rev)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no watch event behind a paused standby (err %v)", w.Err())
	}

	// A revision this store compacted: refused, though the paused
	// standby still has it.
	if err := a.Compact(ctx, second.Rev); err != nil {
		t.Fatal(err)
	}
	if _, err := a.List(ctx, kv.ListOptions{Resource: "configmaps", Rev: first.Rev}); !errors.Is(err, kv.ErrCompacted) {
		t.Fatalf("list at compacted rev %d behind a paused standby: %v; want compacted", first.Rev, err)
	}

	// An in-place rewrite makes no revision: with the standby caught up
	// on revisions and paused again, lists by the rewritten fields must
	// not come from it.
	resume()
	dbtest.WaitStandby(t)
	if _, err := sb.ExecContext(ctx, "SELECT pg_wal_replay_pause()"); err != nil {
		t.Fatal(err)
	}
	resumed = false
	n, err := a.RefreshFields(ctx, "configmaps", func(stored map[string]string) bool { return stored["spec.node"] == "" },
		func(r kv.Record) (map[string]string, error) {
			return map[string]string{"metadata.name": r.Name, "metadata.namespace": r.Namespace, "spec.node": "n1"}, nil
		})
	if err != nil || n != 2 {
		t.Fatalf("refresh: %d rows, %v; want 2", n, err)
	}
	if names := listNames(t, a, kv.ListOptions{Pred: kv.Predicate{Field: fields.OneTermEqualSelector("spec.node", "n1")}}); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("list by a field rewritten in place, behind a paused standby: %v; want [a b]", names)
	}

	resume()
	dbtest.WaitStandby(t)
	if names := listNames(t, a, kv.ListOptions{MinRev: 1}); !slices.Equal(names, []string{"a", "b"}) {
		t.Fatalf("list of any state after replay resumed: %v; want [a b]", names)
	}
}

// A standby that cannot be reached costs reads nothing but the primary's
// answer; one that is a primary, or not PostgreSQL, is refused at start.
func TestStandbyUnreachableAndWrong(t *testing.T) {
	ctx := context.Background()
	url := dbtest.Postgres(t)
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))

	// A port nothing listens on (the primary's URL with port 1).
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = "127.0.0.1:1"
	down := u.String()
	s, err := sqlstore.Open(ctx, url, sqlstore.Options{Standbys: []string{down}, Logger: quiet})
	if err != nil {
		t.Fatalf("open with an unreachable standby: %v", err)
	}
	defer s.Close()
	rec, err := s.Create(ctx, cm("x"), value("x"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, cm("x"))
	if err != nil || got.Rev != rec.Rev {
		t.Fatalf("get with the standby down: rev %d, %v; want %d", got.Rev, err, rec.Rev)
	}
	if names := listNames(t, s, kv.ListOptions{MinRev: 1}); !slices.Equal(names, []string{"x"}) {
		t.Fatalf("list with the standby down: %v", names)
	}
	if _, err := s.Get(ctx, cm("missing")); !errors.Is(err, kv.ErrNotFound) {
		t.Fatalf("get of a missing key with the standby down: %v; want not found", err)
	}

	if _, err := sqlstore.Open(ctx, url, sqlstore.Options{Standbys: []string{url}, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "not in recovery") {
		t.Fatalf("a primary given as standby: %v; want refused as not in recovery", err)
	}
	if _, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Standbys: []string{url}, Logger: quiet}); err == nil || !strings.Contains(err.Error(), "PostgreSQL") {
		t.Fatalf("standby on SQLite: %v; want refused", err)
	}
}

// An ordinary role (not a superuser, as production roles are) can use a
// standby: the start-up checks need no privilege it lacks.
func TestStandbyAsOrdinaryRole(t *testing.T) {
	ctx := context.Background()
	url := dbtest.Postgres(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	dbName := strings.TrimPrefix(u.Path, "/")
	role := "r_" + dbName
	admin, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	for _, stmt := range []string{
		`CREATE ROLE "` + role + `" LOGIN NOSUPERUSER`,
		`ALTER DATABASE "` + dbName + `" OWNER TO "` + role + `"`,
		`ALTER SCHEMA public OWNER TO "` + role + `"`,
	} {
		if _, err := admin.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	// (The role outlives the test on the test binary's server, which is
	// removed with it; the superuser drops the database whoever owns it.)
	asRole := func(raw string) string {
		v, err := neturl.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		v.User = neturl.User(role)
		return v.String()
	}
	standbyURL := asRole(dbtest.PostgresStandby(t, url))
	s := storetest.OpenWith(t, asRole(url), sqlstore.Options{Standbys: []string{standbyURL}})
	rec, err := s.Create(ctx, cm("x"), value("x"))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s.Get(ctx, cm("x")); err != nil || got.Rev != rec.Rev {
		t.Fatalf("get as an ordinary role: rev %d, %v", got.Rev, err)
	}
}
