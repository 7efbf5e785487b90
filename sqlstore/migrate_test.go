package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/labels"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestSelectorIndexBackfill: a database written before migration 0003
// gets its selector index filled from the stored labels and fields when
// the migrations run (0003 the entries, 0005 their resource and
// namespace), so selectors keep finding old objects, in every namespace
// and in one, and not another resource's.
func TestSelectorIndexBackfill(t *testing.T) {
	type backend struct {
		url    func(t *testing.T) string
		driver func(url string) (string, string)
	}
	backends := map[string]backend{
		"sqlite": {
			url:    func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "m.db") },
			driver: func(u string) (string, string) { return "sqlite", "file:" + strings.TrimPrefix(u, "sqlite://") },
		},
		"postgres": {
			url:    func(t *testing.T) string { return dbtest.Postgres(t) },
			driver: func(u string) (string, string) { return "pgx", u },
		},
		"mariadb": {
			url: func(t *testing.T) string { return dbtest.MariaDB(t) },
			driver: func(u string) (string, string) {
				dsn, _ := dbtest.MySQLDSN(u)
				return "mysql", dsn
			},
		},
	}
	for name, b := range backends {
		t.Run(name, func(t *testing.T) {
			url := b.url(t)
			s := storetest.Open(t, url)
			for i, app := range []string{"web", "db", "web", "web", "web"} {
				n := fmt.Sprintf("o%d", i)
				key := kv.Key{Resource: "configmaps", Namespace: "ns", Name: n}
				switch i {
				case 3:
					key.Namespace = "other"
				case 4:
					key.Resource = "secrets"
				}
				if _, err := s.Create(context.Background(), key,
					func(rev int64) (kv.Entry, error) {
						return kv.Entry{Value: []byte(`{}`), Labels: map[string]string{"app": app},
							Fields: map[string]string{"metadata.name": n}}, nil
					}); err != nil {
					t.Fatal(err)
				}
			}
			s.Close()
			// Roll the database back to before migration 0003.
			db, err := sql.Open(b.driver(url))
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"DROP TABLE tabula_index", "DELETE FROM tabula_migrations WHERE version >= 3"} {
				if _, err := db.Exec(q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			db.Close()
			s2, err := sqlstore.Open(context.Background(), url, sqlstore.Options{})
			if err != nil {
				t.Fatalf("reopen and migrate: %v", err)
			}
			defer s2.Close()
			sel, _ := labels.Parse("app=web")
			for ns, want := range map[string]string{"": "[o0 o2 o3]", "ns": "[o0 o2]", "other": "[o3]"} {
				res, err := s2.List(context.Background(), kv.ListOptions{Resource: "configmaps", Namespace: ns, Pred: kv.Predicate{Label: sel}})
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				for _, r := range res.Items {
					got = append(got, r.Name)
				}
				if fmt.Sprint(got) != want {
					t.Fatalf("app=web in %q after backfill = %v; want %s", ns, got, want)
				}
			}
		})
	}
}
