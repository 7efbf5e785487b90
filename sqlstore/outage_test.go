package sqlstore_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/url"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestDatabaseOutage: while the database is unreachable, reads and writes
// fail fast with ErrUnavailable and Ready reports it; when it returns, the
// store recovers without a restart and an open watch resumes with no gap.
func TestDatabaseOutage(t *testing.T) {
	for name, newURL := range map[string]func(t *testing.T) string{
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) {
			u, err := url.Parse(newURL(t))
			if err != nil {
				t.Fatal(err)
			}
			proxy := dbtest.NewCutProxy(t, u.Host)
			u.Host = proxy.Addr
			s, err := sqlstore.Open(context.Background(), u.String(), sqlstore.Options{PollInterval: 50 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			ctx := context.Background()
			put := func(name string) (kv.Record, error) {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				defer cancel()
				return s.Create(c, kv.Key{Resource: "configmaps", Namespace: "n", Name: name},
					func(int64) (kv.Entry, error) { return kv.Entry{Value: []byte(`{}`)}, nil })
			}
			first, err := put("before")
			if err != nil {
				t.Fatal(err)
			}
			w, err := s.Watch(ctx, kv.WatchOptions{Resource: "configmaps", After: first.Rev - 1})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()
			if ev := <-w.Events(); ev.Rev != first.Rev {
				t.Fatalf("first event rev %d; want %d", ev.Rev, first.Rev)
			}

			proxy.Cut()
			start := time.Now()
			if _, err := put("during"); !errors.Is(err, kv.ErrUnavailable) {
				t.Fatalf("create during the outage: err %v; want ErrUnavailable", err)
			}
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			if err := s.Ready(c); err == nil {
				t.Fatal("Ready reported the database fine during the outage")
			}
			cancel()
			if took := time.Since(start); took > 10*time.Second {
				t.Fatalf("failing during the outage took %v; want it fast", took)
			}

			proxy.Restore(t)
			var after kv.Record
			deadline := time.Now().Add(30 * time.Second)
			for {
				if after, err = put("after"); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("store did not recover within 30s: %v", err)
				}
				<-time.After(100 * time.Millisecond)
			}
			select {
			case ev, ok := <-w.Events():
				if !ok {
					t.Fatalf("watch ended during the outage: %v", w.Err())
				}
				// The failed write used no revision: the next event is
				// the very next revision.
				if ev.Rev != first.Rev+1 || ev.Rev != after.Rev || ev.Name != "after" {
					t.Fatalf("event after recovery = %s@%d; want after@%d (dense, nothing from the failed write)", ev.Name, ev.Rev, first.Rev+1)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("watch did not resume after the outage")
			}
			if _, err := s.Get(ctx, kv.Key{Resource: "configmaps", Namespace: "n", Name: "during"}); !errors.Is(err, kv.ErrNotFound) {
				t.Fatalf("the failed write is visible: %v", err)
			}
		})
	}
}
