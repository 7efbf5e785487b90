package sqlstore

import (
	"net/url"
	"testing"
)

func TestSQLitePath(t *testing.T) {
	for _, c := range []struct{ url, dir, want string }{
		{"sqlite:///var/lib/tabula/state.db", "/data", "/var/lib/tabula/state.db"},
		{"sqlite://state.db", "/data", "/data/state.db"},
		{"sqlite://sub/dir/state.db", "/data", "/data/sub/dir/state.db"},
		{"sqlite://./state.db", "/data", "/data/state.db"},
		{"sqlite://state.db", "", "state.db"},
		{"sqlite://:memory:", "/data", ":memory:"},
		{"sqlite://", "/data", ""},
	} {
		u, err := url.Parse(c.url)
		if err != nil {
			t.Fatal(err)
		}
		if got := sqlitePath(u, c.dir); got != c.want {
			t.Errorf("sqlitePath(%s, %q) = %q; want %q", c.url, c.dir, got, c.want)
		}
	}
}
