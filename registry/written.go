package registry

import (
	"sync"
	"time"

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
	// sweeping: a sweep is scheduled (sweepDue).
	sweeping bool
}

type writtenEntry struct {
	t   *schema.Type
	rec kv.Record
	obj runtime.Object
	// used: put or got since the last sweep.
	used bool
}

// writtenBudget bounds the stored bytes the entries hold (their objects
// take a few times that): a busy cluster's objects in flight, not all.
const writtenBudget = 8 << 20

// get returns a copy of the last written object at key, if it was written
// as type t.
func (w *written) get(t *schema.Type, key kv.Key) (kv.Record, runtime.Object, bool) {
	w.mu.Lock()
	e, ok := w.entries[key]
	if ok && !e.used {
		e.used = true
		w.entries[key] = e
	}
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
	e := writtenEntry{t: t, rec: rec, obj: obj.DeepCopyObject(), used: true}
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
	if !w.sweeping {
		w.sweeping = true
		time.AfterFunc(writtenSweep, w.sweepDue)
	}
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

// An entry neither updated nor read for a whole writtenSweep (10–20 s)
// is dropped: the updates it serves follow a write within moments (a
// controller's status update after its create, a lease renewed every
// 2–10 s), and objects written once — a fresh server's ~190 bootstrap
// policy objects, ~0.7 MiB of its ~9 MiB live heap — are not held for
// good. A sweep is due only while entries are held, so an empty cache
// keeps no timer.
const writtenSweep = 10 * time.Second

// sweep drops the entries unused since the last sweep.
func (w *written) sweep() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweepLocked()
}

func (w *written) sweepLocked() {
	for k, e := range w.entries {
		if !e.used {
			delete(w.entries, k)
			w.bytes -= len(e.rec.Value)
			continue
		}
		e.used = false
		w.entries[k] = e
	}
}

// sweepDue sweeps, and schedules the next sweep while entries are left.
func (w *written) sweepDue() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.sweepLocked()
	if len(w.entries) == 0 {
		w.sweeping = false
		return
	}
	time.AfterFunc(writtenSweep, w.sweepDue)
}
