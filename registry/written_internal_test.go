package registry

import (
	"context"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// gets counts the store's reads of configmaps.
type gets struct {
	Storage
	n int
}

func (g *gets) Get(ctx context.Context, key kv.Key) (kv.Record, error) {
	if key.Resource == "configmaps" {
		g.n++
	}
	return g.Storage.Get(ctx, key)
}

// TestUpdatesStartFromTheLastWrite: an update of an object this replica
// wrote last reads nothing from the store; when another replica wrote
// since, nothing of its write is lost — an unconditional update merges
// onto it, a conditional one naming its resourceVersion succeeds, and an
// update that would be a no-op against the old copy is still written.
func TestUpdatesStartFromTheLastWrite(t *testing.T) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	counted := &gets{Storage: st}
	a := mustNew(Config{Store: counted, Types: schema.NewBuiltin()}) // this replica
	b := mustNew(Config{Store: st, Types: schema.NewBuiltin()})      // another one
	cmA, cmB := a.MustLookup("", "v1", "configmaps"), b.MustLookup("", "v1", "configmaps")
	set := func(k, v string) MutateFunc {
		return func(cur runtime.Object) (runtime.Object, error) {
			cm := cur.(*corev1.ConfigMap)
			if cm.Data == nil {
				cm.Data = map[string]string{}
			}
			cm.Data[k] = v
			cm.ResourceVersion = ""
			return cm, nil
		}
	}
	data := func(r Result) string {
		cm := r.Obj.(*corev1.ConfigMap)
		var parts []string
		for _, k := range []string{"a", "b", "c"} {
			if v, ok := cm.Data[k]; ok {
				parts = append(parts, k+"="+v)
			}
		}
		return strings.Join(parts, ",")
	}
	if _, err := a.MustLookup("", "v1", "namespaces").Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cmA.Create(ctx, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"a": "1"}}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	before := counted.n
	res, _, err := cmA.Update(ctx, "default", "c", set("a", "2"), UpdateOptions{})
	if err != nil || data(res) != "a=2" {
		t.Fatalf("update: %v %s", err, data(res))
	}
	if counted.n != before {
		t.Errorf("an update of this replica's last write read the store %d times", counted.n-before)
	}

	// Another replica writes; this one's copy is now old.
	if _, _, err := cmB.Update(ctx, "default", "c", set("b", "1"), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	res, _, err = cmA.Update(ctx, "default", "c", set("c", "1"), UpdateOptions{})
	if err != nil || data(res) != "a=2,b=1,c=1" {
		t.Errorf("an update after another replica's write: %v %s", err, data(res))
	}

	// A conditional update naming the other replica's revision succeeds.
	resB, _, err := cmB.Update(ctx, "default", "c", set("b", "2"), UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rv := resB.Obj.(*corev1.ConfigMap).ResourceVersion
	res, _, err = cmA.Update(ctx, "default", "c", func(cur runtime.Object) (runtime.Object, error) {
		cm := cur.(*corev1.ConfigMap).DeepCopy()
		cm.ResourceVersion = rv
		cm.Data["c"] = "2"
		return cm, nil
	}, UpdateOptions{})
	if err != nil || data(res) != "a=2,b=2,c=2" {
		t.Errorf("a conditional update at the other replica's revision %s: %v %s", rv, err, data(res))
	}

	// Back to what this replica last wrote, after another replica's
	// change: not a no-op.
	if _, _, err := cmB.Update(ctx, "default", "c", set("a", "9"), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if res, _, err = cmA.Update(ctx, "default", "c", set("a", "2"), UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	stored, _, err := cmB.Get(ctx, "default", "c")
	if err != nil || stored.(*corev1.ConfigMap).Data["a"] != "2" {
		t.Errorf("the write back to this replica's old value was lost: %v %+v", err, stored)
	}
	if res.unchanged {
		t.Error("the write back was answered as unchanged")
	}
}

// TestWrittenBudget: the entries never hold more stored bytes than the
// budget.
func TestWrittenBudget(t *testing.T) {
	var w written
	ty := &schema.Type{Resource: "configmaps"}
	value := []byte(strings.Repeat("x", 64<<10))
	for i := range 1000 {
		w.put(ty, kv.Record{Key: kv.Key{Resource: "configmaps", Name: strconv.Itoa(i)}, Rev: int64(i + 1), Value: value}, &corev1.ConfigMap{})
	}
	if w.bytes > writtenBudget || len(w.entries)*len(value) != w.bytes {
		t.Errorf("%d entries hold %d bytes (budget %d)", len(w.entries), w.bytes, writtenBudget)
	}
	if _, _, ok := w.get(ty, kv.Key{Resource: "configmaps", Name: "999"}); !ok {
		t.Error("the last write was evicted")
	}
}

// TestWrittenSweep: a sweep drops the entries neither put nor got since
// the one before, and keeps the others, with their bytes counted; one is
// scheduled while entries are held, and none once the cache is empty.
func TestWrittenSweep(t *testing.T) {
	var w written
	ty := &schema.Type{Resource: "configmaps"}
	key := func(name string) kv.Key { return kv.Key{Resource: "configmaps", Namespace: "default", Name: name} }
	for i, name := range []string{"once", "read", "rewritten"} {
		w.put(ty, kv.Record{Key: key(name), Rev: int64(i + 1), Value: []byte(name)}, &corev1.ConfigMap{})
	}
	if !w.sweeping {
		t.Error("entries held and no sweep scheduled")
	}
	w.sweep() // all were just put
	if len(w.entries) != 3 {
		t.Fatalf("a sweep right after the writes left %d of 3 entries", len(w.entries))
	}
	if _, _, ok := w.get(ty, key("read")); !ok {
		t.Fatal("entry not found")
	}
	w.put(ty, kv.Record{Key: key("rewritten"), Rev: 4, Value: []byte("again")}, &corev1.ConfigMap{})
	w.sweep()
	if _, _, ok := w.get(ty, key("once")); ok {
		t.Error("an entry unused since the last sweep was kept")
	}
	for _, name := range []string{"read", "rewritten"} {
		if _, _, ok := w.get(ty, key(name)); !ok {
			t.Errorf("%s, used since the last sweep, was dropped", name)
		}
	}
	if want := len("read") + len("again"); w.bytes != want {
		t.Errorf("%d bytes counted, want %d", w.bytes, want)
	}
	w.sweep() // read and rewritten were got just now
	w.sweepDue()
	if len(w.entries) != 0 || w.bytes != 0 {
		t.Errorf("two sweeps with no use left %d entries, %d bytes", len(w.entries), w.bytes)
	}
	if w.sweeping {
		t.Error("a sweep is scheduled for an empty cache")
	}
}
