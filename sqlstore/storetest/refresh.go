package storetest

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/fields"

	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// testRefreshFields: objects stored without a field their kind now selects
// by get it in place — a selector on it finds them — with their revisions
// unchanged and no watch event, and a second refresh finds nothing to do.
func testRefreshFields(t *testing.T, s *sqlstore.Store) {
	const n = 30
	start, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		mustCreate(t, s, key(fmt.Sprintf("o%02d", i)), map[string]string{"app": "x"})
	}
	other := mustCreate(t, s, kv.Key{Resource: "secrets", Namespace: "ns1", Name: "s"}, nil)
	before, err := s.CurrentRev(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", After: before})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	stale := func(stored map[string]string) bool { _, ok := stored["spec.node"]; return !ok }
	node := func(name string) string { return "node-" + name[len(name)-1:] }
	refresh := func() int {
		t.Helper()
		got, err := s.RefreshFields(ctx(t), "configmaps", stale, func(r kv.Record) (map[string]string, error) {
			if want := fmt.Sprintf(`{"name":%q,"rev":%d}`, r.Name, r.Rev); string(r.Value) != want {
				t.Errorf("refresh of %s read %s; want %s", r.Name, r.Value, want)
			}
			return map[string]string{"metadata.name": r.Name, "metadata.namespace": r.Namespace, "spec.node": node(r.Name)}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := refresh(); got != n {
		t.Fatalf("refreshed %d objects; want %d", got, n)
	}
	if got := refresh(); got != 0 {
		t.Fatalf("a second refresh rewrote %d objects; want none", got)
	}
	if cur, _ := s.CurrentRev(ctx(t)); cur != before {
		t.Fatalf("refresh moved the revision %d → %d; want it unchanged", before, cur)
	}
	sel := fields.OneTermEqualSelector("spec.node", "node-3")
	res, err := s.List(ctx(t), kv.ListOptions{Resource: "configmaps", Namespace: "ns1", Pred: kv.Predicate{Field: sel}})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, it := range res.Items {
		names = append(names, it.Name)
	}
	if fmt.Sprint(names) != "[o03 o13 o23]" {
		t.Fatalf("spec.node=node-3 lists %v; want [o03 o13 o23]", names)
	}
	// A watch by the field from before the creates reads the history as
	// rewritten, not as the watch hub delivered it.
	hw, err := s.Watch(ctx(t), kv.WatchOptions{Resource: "configmaps", Namespace: "ns1", After: start, Pred: kv.Predicate{Field: sel}})
	if err != nil {
		t.Fatal(err)
	}
	defer hw.Stop()
	for _, want := range []string{"o03", "o13", "o23"} {
		if ev := recv(t, hw); ev.Name != want || ev.Type != kv.Added {
			t.Fatalf("history by spec.node=node-3: %s %s; want ADDED %s", ev.Type, ev.Name, want)
		}
	}
	// A write after the refresh is the first event the watcher sees.
	if _, err := s.Update(ctx(t), other.Key, other.Rev, enc("s", nil)); err != nil {
		t.Fatal(err)
	}
	c := mustCreate(t, s, key("zz"), nil)
	if ev := recv(t, w); ev.Name != "zz" || ev.Rev != c.Rev {
		t.Fatalf("first event after the refresh: %s %s@%d; want the create of zz", ev.Type, ev.Name, ev.Rev)
	}
}
