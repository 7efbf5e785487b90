package registry

import (
	"testing"

	"github.com/tabula-dev/tabula/schema"
)

// TestFieldManagerShared: a kind's field manager is made once per
// subresource and shared by every write, and a kind whose Type is replaced
// (a custom resource's new schema) gets a new one, which then replaces the
// old in the map.
func TestFieldManagerShared(t *testing.T) {
	g, err := New(Config{Types: schema.NewBuiltin()})
	if err != nil {
		t.Fatal(err)
	}
	x, ok := g.Lookup("apps", "v1", "deployments")
	if !ok {
		t.Fatal("no deployments")
	}
	first, err := x.fieldManager("")
	if err != nil || first == nil {
		t.Fatalf("field manager: %v, %v", first, err)
	}
	if again, _ := g.For(x.t).fieldManager(""); again != first {
		t.Error("a second write of the same kind made a new field manager")
	}
	status, _ := x.fieldManager("status")
	if status == first {
		t.Error("the status subresource shares the main resource's field manager")
	}
	replaced := *x.t
	newer, _ := g.For(&replaced).fieldManager("")
	if newer == first || newer == nil {
		t.Error("a replaced Type kept the old Type's field manager")
	}
	if again, _ := g.For(&replaced).fieldManager(""); again != newer {
		t.Error("the replaced Type's field manager was not kept")
	}
	n := 0
	g.fieldManagers.Range(func(any, any) bool { n++; return true })
	if n != 2 {
		t.Errorf("%d field managers kept; want 2 (deployments, deployments/status)", n)
	}
}
