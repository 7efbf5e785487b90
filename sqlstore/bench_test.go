package sqlstore_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
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
