package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/encrypt"
	"github.com/tabula-dev/tabula/sqlstore/kv"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// BenchmarkCreate measures creates of 1 KiB objects, sequentially and from
// 32 concurrent writers (where group commit shares transactions).
func BenchmarkCreate(b *testing.B) {
	value := []byte(`{"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	backends := map[string]func(b *testing.B) string{
		"sqlite":   func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
		"postgres": func(b *testing.B) string { return dbtest.Postgres(b) },
		"mariadb":  func(b *testing.B) string { return dbtest.MariaDB(b) },
	}
	for _, name := range []string{"sqlite", "postgres", "mariadb"} {
		for _, par := range []int{1, 32} {
			b.Run(fmt.Sprintf("%s/clients=%d", name, par), func(b *testing.B) {
				s, err := sqlstore.Open(context.Background(), backends[name](b), sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
				if err != nil {
					b.Fatal(err)
				}
				defer s.Close()
				var n atomic.Int64
				enc := func(rev int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }
				b.SetParallelism(par)
				b.ResetTimer()
				if par == 1 {
					for i := 0; i < b.N; i++ {
						if _, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprint(i)}, enc); err != nil {
							b.Fatal(err)
						}
					}
				} else {
					b.RunParallel(func(pb *testing.PB) {
						for pb.Next() {
							i := n.Add(1)
							if _, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprint(i)}, enc); err != nil {
								b.Error(err)
								return
							}
						}
					})
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
			})
		}
	}
}

// BenchmarkList measures lists over 20,000 1 KiB objects: the whole
// collection, one page of 500, a label selector matching 1%, and one
// matching nothing (the garbage collector's lookup of an owner's
// dependents), which should cost nothing like a scan.
func BenchmarkList(b *testing.B) {
	const n = 20000
	backends := map[string]func(b *testing.B) string{
		"sqlite":   func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "list.db") },
		"postgres": func(b *testing.B) string { return dbtest.Postgres(b) },
		"mariadb":  func(b *testing.B) string { return dbtest.MariaDB(b) },
	}
	for _, backend := range []string{"sqlite", "postgres", "mariadb"} {
		b.Run(backend, func(b *testing.B) {
			s, err := sqlstore.Open(context.Background(), backends[backend](b),
				sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			fillList(b, s, n)
			value := []byte("cached")
			sel, _ := labels.Parse("selected=yes")
			none, _ := labels.Parse("selected=never")
			for _, c := range []struct {
				name string
				opts kv.ListOptions
				want int
			}{
				{"whole", kv.ListOptions{Resource: "configmaps", Namespace: "b"}, n},
				// A warm list: the caller has every item's encoding, so
				// only keys and revisions are read.
				{"wholeCached", kv.ListOptions{Resource: "configmaps", Namespace: "b", Cached: func(kv.Record) ([]byte, bool) { return value, true }}, n},
				{"page500", kv.ListOptions{Resource: "configmaps", Namespace: "b", Limit: 500}, 500},
				{"selective1pct", kv.ListOptions{Resource: "configmaps", Namespace: "b", Pred: kv.Predicate{Label: sel}}, n / 100},
				{"selectiveNone", kv.ListOptions{Resource: "configmaps", Namespace: "b", Pred: kv.Predicate{Label: none}}, 0},
			} {
				b.Run(c.name, func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						res, err := s.List(context.Background(), c.opts)
						if err != nil || len(res.Items) != c.want {
							b.Fatalf("list: %d items, %v; want %d", len(res.Items), err, c.want)
						}
					}
				})
			}
		})
	}
}

// fillList creates n 1 KiB objects in namespace b, 1% labelled selected=yes.
func fillList(b *testing.B, s *sqlstore.Store, n int) {
	value := []byte(`{"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	var wg sync.WaitGroup
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := w; i < n; i += 32 {
				sel := "no"
				if i%100 == 0 {
					sel = "yes"
				}
				if _, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprintf("o%05d", i)},
					func(int64) (kv.Entry, error) {
						return kv.Entry{Value: value, Labels: map[string]string{"selected": sel}}, nil
					}); err != nil {
					b.Error(err)
					return
				}
			}
		}(w)
	}
	wg.Wait()
}

// BenchmarkEncryptedSecrets measures creates and whole-list reads of
// 1 KiB Secrets on SQLite with and without an aesgcm provider, from 32
// writers: what encryption at rest costs.
func BenchmarkEncryptedSecrets(b *testing.B) {
	value := []byte(`{"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	cfg, err := encrypt.Parse([]byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n  - aesgcm: {keys: [{name: k, secret: c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyAxMjM=}]}\n"))
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"plain", "aesgcm"} {
		open := func(b *testing.B) *sqlstore.Store {
			opts := sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
			if mode == "aesgcm" {
				opts.Values = cfg
			}
			s, err := sqlstore.Open(context.Background(), "sqlite://"+filepath.Join(b.TempDir(), "bench.db"), opts)
			if err != nil {
				b.Fatal(err)
			}
			return s
		}
		b.Run(mode+"/create", func(b *testing.B) {
			s := open(b)
			defer s.Close()
			var n atomic.Int64
			enc := func(int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }
			b.SetParallelism(32)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := s.Create(context.Background(), kv.Key{Resource: "secrets", Namespace: "b", Name: fmt.Sprint(n.Add(1))}, enc); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
		b.Run(mode+"/list-1000", func(b *testing.B) {
			s := open(b)
			defer s.Close()
			enc := func(int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }
			for i := 0; i < 1000; i++ {
				if _, err := s.Create(context.Background(), kv.Key{Resource: "secrets", Namespace: "b", Name: fmt.Sprint(i)}, enc); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := s.List(context.Background(), kv.ListOptions{Resource: "secrets", Namespace: "b"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkGet measures point reads of 1 KiB objects on SQLite, one
// reader and 8 concurrent ones, each with a deadline as a request's
// context has.
func BenchmarkGet(b *testing.B) {
	s := storetest.Open(b, "sqlite://"+filepath.Join(b.TempDir(), "bench.db"))
	value := []byte(`{"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	const objects = 1000
	for i := 0; i < objects; i++ {
		enc := func(rev int64) (kv.Entry, error) { return kv.Entry{Value: value}, nil }
		if _, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprint(i)}, enc); err != nil {
			b.Fatal(err)
		}
	}
	for _, par := range []int{1, 8} {
		b.Run(fmt.Sprintf("readers=%d", par), func(b *testing.B) {
			var n atomic.Int64
			b.SetParallelism(par)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
					i := n.Add(1)
					r, err := s.Get(ctx, kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprint(i % objects)})
					cancel()
					if err != nil || len(r.Value) != len(value) {
						b.Errorf("get: %v, %d bytes", err, len(r.Value))
						return
					}
				}
			})
		})
	}
	// GetKnown, its caller holding every revision (the value is not
	// read), none (the revision is read, then its row) or asking nothing
	// (Get).
	for _, c := range []struct {
		name  string
		known func(int64) bool
	}{
		{"known=held", func(int64) bool { return true }},
		{"known=not-held", func(int64) bool { return false }},
		{"known=nil", nil},
	} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			held := c.known != nil && c.known(0)
			for i := 0; b.Loop(); i++ {
				r, skipped, err := s.GetKnown(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: fmt.Sprint(i % objects)}, c.known)
				if err != nil || skipped != held || !held && len(r.Value) != len(value) {
					b.Fatalf("get: %v, skipped %v, %d bytes", err, skipped, len(r.Value))
				}
			}
		})
	}
}

// BenchmarkWatchFromRevision measures a watch opened at a revision taken
// before 100 creates (an informer's re-watch after a short break): from
// opening it to receiving the 100 events, with no selector, a label
// selector and a field selector (a kubelet's) that match them all; and
// one opened at the newest revision, which waits for nothing.
func BenchmarkWatchFromRevision(b *testing.B) {
	backends := map[string]func(b *testing.B) string{
		"sqlite":   func(b *testing.B) string { return "sqlite://" + filepath.Join(b.TempDir(), "bench.db") },
		"postgres": func(b *testing.B) string { return dbtest.Postgres(b) },
		"mariadb":  func(b *testing.B) string { return dbtest.MariaDB(b) },
	}
	for _, name := range []string{"sqlite", "postgres", "mariadb"} {
		b.Run(name, func(b *testing.B) { benchWatchFromRevision(b, storetest.Open(b, backends[name](b))) })
	}
}

func benchWatchFromRevision(b *testing.B, s *sqlstore.Store) {
	value := []byte(`{"data":{"k":"` + strings.Repeat("x", 1000) + `"}}`)
	var before int64
	for i := 0; i < 100; i++ {
		name := fmt.Sprint(i)
		enc := func(rev int64) (kv.Entry, error) {
			return kv.Entry{Value: value, Labels: map[string]string{"app": "web", "tier": "front"},
				Fields: map[string]string{"metadata.name": name, "metadata.namespace": "b"}}, nil
		}
		rec, err := s.Create(context.Background(), kv.Key{Resource: "configmaps", Namespace: "b", Name: name}, enc)
		if err != nil {
			b.Fatal(err)
		}
		if i == 0 {
			before = rec.Rev - 1
		}
	}
	sel, err := labels.Parse("app=web")
	if err != nil {
		b.Fatal(err)
	}
	fsel, err := fields.ParseSelector("metadata.namespace=b")
	if err != nil {
		b.Fatal(err)
	}
	newest, err := s.CurrentRev(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	b.Run("newest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			w, err := s.Watch(context.Background(), kv.WatchOptions{Resource: "configmaps", Namespace: "b", After: newest})
			if err != nil {
				b.Fatal(err)
			}
			w.Stop()
		}
	})
	for name, pred := range map[string]kv.Predicate{"all": {}, "selector": {Label: sel}, "fieldSelector": {Field: fsel}} {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				w, err := s.Watch(context.Background(), kv.WatchOptions{Resource: "configmaps", Namespace: "b", After: before, Pred: pred})
				if err != nil {
					b.Fatal(err)
				}
				for n := 0; n < 100; n++ {
					if _, ok := <-w.Events(); !ok {
						b.Fatalf("watch ended after %d events: %v", n, w.Err())
					}
				}
				w.Stop()
			}
		})
	}
}
