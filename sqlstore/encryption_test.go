package sqlstore

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/encrypt"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

func encryptionConfig(t *testing.T, keys string) *encrypt.Config {
	t.Helper()
	c, err := encrypt.Parse([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [" + keys + "]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

const (
	testKey1 = "{name: key1, secret: c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyAxMjM=}"
	testKey2 = "{name: key2, secret: dGhpcyBpcyBhbm90aGVyIGtleSBmb3IgdGVzdHMhISE=}"
)

// TestEncryptionAtRest: with a provider configured, the database never
// holds a Secret's value in clear, while gets, lists, watches (read back
// from the database by another store) and expiry see plain values; after
// a key rotation old values still read, and rewriting re-encrypts them.
func TestEncryptionAtRest(t *testing.T) {
	for name, url := range map[string]func(t *testing.T) string{
		"sqlite":   func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "enc.db") },
		"postgres": func(t *testing.T) string { return dbtest.Postgres(t) },
		"mariadb":  func(t *testing.T) string { return dbtest.MariaDB(t) },
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			u := url(t)
			open := func(c *encrypt.Config) *Store {
				s, err := Open(ctx, u, Options{CompactInterval: -1, Values: c, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				return s
			}
			s := open(encryptionConfig(t, testKey1))
			secret := kv.Key{Resource: "secrets", Namespace: "ns", Name: "s"}
			plain := []byte(`{"data":{"password":"aHVudGVyMg=="},"metadata":{"name":"s"}}`)
			put := func(s *Store, key kv.Key, v []byte) kv.Record {
				r, err := s.Create(ctx, key, func(int64) (kv.Entry, error) { return kv.Entry{Value: v}, nil })
				if err != nil {
					t.Fatal(err)
				}
				return r
			}
			raw := func(rev int64) []byte {
				var v []byte
				if err := s.read.QueryRowContext(ctx, s.q("SELECT value FROM tabula_log WHERE rev = ?"), rev).Scan(&v); err != nil {
					t.Fatal(err)
				}
				return v
			}

			// A second store on the database watches: its events are read
			// back from the log, not handed over in memory.
			other := open(encryptionConfig(t, testKey1))
			cur, _ := other.CurrentRev(ctx)
			w, err := other.Watch(ctx, kv.WatchOptions{Resource: "secrets", After: cur})
			if err != nil {
				t.Fatal(err)
			}
			defer w.Stop()

			r := put(s, secret, plain)
			cm := put(s, kv.Key{Resource: "configmaps", Namespace: "ns", Name: "c"}, []byte(`{"data":{"k":"v"}}`))
			if v := raw(r.Rev); bytes.Contains(v, []byte("aHVudGVyMg")) || !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key1:")) {
				t.Errorf("the database holds %q", v)
			}
			if v := raw(cm.Rev); string(v) != `{"data":{"k":"v"}}` {
				t.Errorf("a ConfigMap, which the config does not name, is stored as %q", v)
			}
			if got, err := s.Get(ctx, secret); err != nil || !bytes.Equal(got.Value, plain) {
				t.Errorf("get: %q %v", got.Value, err)
			}
			if l, err := s.List(ctx, kv.ListOptions{Resource: "secrets", Namespace: "ns"}); err != nil || len(l.Items) != 1 || !bytes.Equal(l.Items[0].Value, plain) {
				t.Errorf("list: %+v %v", l.Items, err)
			}
			if ev := <-w.Events(); !bytes.Equal(ev.Value, plain) {
				t.Errorf("watch read back from the log: %q", ev.Value)
			}

			if got, _ := s.Get(ctx, secret); got.Stale {
				t.Error("a value under the writing key reads as stale")
			}
			// Rotation: key2 writes, key1 still reads; what key1 sealed is
			// stale, so a rewrite of the same value is not a no-op.
			rotated := open(encryptionConfig(t, testKey2+", "+testKey1))
			if got, err := rotated.Get(ctx, secret); err != nil || !bytes.Equal(got.Value, plain) || !got.Stale {
				t.Fatalf("get after rotation: %q stale=%v %v", got.Value, got.Stale, err)
			}
			// The rewrite (kubectl get secrets -A -o json | kubectl replace -f -).
			up, err := rotated.Update(ctx, secret, r.Rev, func(int64) (kv.Entry, error) { return kv.Entry{Value: plain}, nil })
			if err != nil {
				t.Fatal(err)
			}
			if v := raw(up.Rev); !bytes.HasPrefix(v, []byte("k8s:enc:aesgcm:v1:key2:")) {
				t.Errorf("rewritten with %q", v[:min(len(v), 24)])
			}
			onlyKey2 := open(encryptionConfig(t, testKey2))
			if got, err := onlyKey2.Get(ctx, secret); err != nil || !bytes.Equal(got.Value, plain) {
				t.Errorf("get with only the new key after the rewrite: %q %v", got.Value, err)
			}
		})
	}
}
