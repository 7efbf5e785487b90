package registry

import (
	"sync"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// written keeps, for the objects this replica wrote last, the record as
// stored and the object as written, so that the next update of one starts
// from there instead of reading the database and decoding the row again
// (kube-apiserver's updates likewise start from its watch cache). An entry
// is only a guess: another replica may have written since. The store's
// revision check refuses a write based on an old one, and an update that
// found the object unchanged or failed for any reason on a guess is made
// again from the store, so what a client is told never rests on it.
type written struct {
	mu      sync.Mutex
	entries map[kv.Key]writtenEntry
	bytes   int
}

type writtenEntry struct {
	t   *schema.Type
	rec kv.Record
	obj runtime.Object
}

// writtenBudget bounds the stored bytes the entries hold (their objects
// take a few times that): a busy cluster's objects in flight, not all.
const writtenBudget = 8 << 20

// get returns a copy of the last written object at key, if it was written
// as type t.
func (w *written) get(t *schema.Type, key kv.Key) (kv.Record, runtime.Object, bool) {
	w.mu.Lock()
	e, ok := w.entries[key]
	w.mu.Unlock()
	if !ok || e.t != t {
		return kv.Record{}, nil, false
	}
	return e.rec, e.obj.DeepCopyObject(), true
}

// put remembers obj as written in rec. Custom resources are not kept:
// their schema (defaults, pruning) may change between writes.
func (w *written) put(t *schema.Type, rec kv.Record, obj runtime.Object) {
	if _, u := obj.(*unstructured.Unstructured); u || rec.Rev == 0 {
		return
	}
	// The value is shared, not copied: stored values are never changed
	// in place (the store, its watchers and the answer read the same
	// bytes).
	rec.Stale = false
	e := writtenEntry{t: t, rec: rec, obj: obj.DeepCopyObject()}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.entries == nil {
		w.entries = map[kv.Key]writtenEntry{}
	}
	if old, ok := w.entries[rec.Key]; ok {
		w.bytes -= len(old.rec.Value)
	}
	w.entries[rec.Key] = e
	w.bytes += len(rec.Value)
	// Over budget: drop entries at random (map order) until under it.
	for k, old := range w.entries {
		if w.bytes <= writtenBudget {
			break
		}
		if k != rec.Key {
			delete(w.entries, k)
			w.bytes -= len(old.rec.Value)
		}
	}
}

// drop forgets key.
func (w *written) drop(key kv.Key) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.entries[key]; ok {
		delete(w.entries, key)
		w.bytes -= len(old.rec.Value)
	}
}
