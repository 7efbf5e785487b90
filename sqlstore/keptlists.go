package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// A warm whole list (every item's encoding kept by the caller) spends most
// of its store time reading keys: on SQLite 4.4 ms of a ~10 ms list of
// 10,000 ConfigMaps went to the one concatenated row of keys and
// revisions (listkeys.go). So the store keeps the keys and revisions of
// the latest whole lists, each at the revision it was read at, and a list
// asked for again reads only the log rows written since (a primary-key
// range of tabula_log, whatever the resource) and applies those of its
// own resource. Whether kept keys still hold is decided in the list's own
// read transaction, against the log it sees: no notification is needed,
// so every replica and standby keeps its own, and the answer is the one
// the database gives at that revision. Compaction keeps every row newer
// than the compacted revision, so kept keys at or after it can always be
// brought forward.

const (
	// keptListMin is the fewest keys worth keeping: reading fewer costs
	// about what the look at the log does.
	keptListMin = 512
	// keptListBudget bounds the bytes of all kept keys (an estimate,
	// keptKeyBytes a key plus its name), least recently listed out first.
	keptListBudget = 8 << 20
	keptKeyBytes   = 48
	// A kept list is brought forward while the log rows written since
	// are at most a keptChangeShare-th of its keys (a log row costs about
	// what reading several keys does) and at most keptChangeMax.
	keptChangeShare = 8
	keptChangeMax   = 4096
)

// keptListID names a whole list: a resource, in one namespace or in all
// ("").
type keptListID struct{ resource, namespace string }

// keptList is the keys and revisions of a whole list at rev, in
// (namespace, name) order. It is never changed once kept: lists read it
// without a lock.
type keptList struct {
	rev   int64
	keys  []keptKey
	bytes int
	used  uint64 // the keptLists clock when last listed (under its lock)
}

type keptKey struct {
	namespace, name string
	rev             int64
}

func compareKept(a, b keptKey) int {
	if c := strings.Compare(a.namespace, b.namespace); c != 0 {
		return c
	}
	return strings.Compare(a.name, b.name)
}

// keptLists holds the kept lists of a store.
type keptLists struct {
	mu    sync.Mutex
	lists map[keptListID]*keptList
	bytes int
	clock uint64
	// min is keptListMin; tests lower it.
	min int
}

func (k *keptLists) get(id keptListID) *keptList {
	k.mu.Lock()
	defer k.mu.Unlock()
	l := k.lists[id]
	if l != nil {
		k.clock++
		l.used = k.clock
	}
	return l
}

// keep records l as id's list unless a newer one is kept already, and
// lets the least recently listed go while over budget.
func (k *keptLists) keep(id keptListID, l *keptList) {
	if l.bytes > keptListBudget {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	before := k.bytes
	if old := k.lists[id]; old != nil {
		if old.rev >= l.rev {
			return
		}
		k.bytes -= old.bytes
	}
	if k.lists == nil {
		k.lists = map[keptListID]*keptList{}
	}
	k.clock++
	l.used = k.clock
	k.lists[id] = l
	k.bytes += l.bytes
	for k.bytes > keptListBudget {
		var oldest keptListID
		var at uint64
		for id, l := range k.lists {
			if at == 0 || l.used < at {
				oldest, at = id, l.used
			}
		}
		k.bytes -= k.lists[oldest].bytes
		delete(k.lists, oldest)
	}
	listKeysBytes.Add(float64(k.bytes - before))
}

// drop lets every kept list go (the store closes).
func (k *keptLists) drop() {
	k.mu.Lock()
	defer k.mu.Unlock()
	listKeysBytes.Sub(float64(k.bytes))
	k.lists, k.bytes = nil, 0
}

// keepItems keeps the keys of a whole list just read at rev.
func (k *keptLists) keepItems(id keptListID, rev int64, items []kv.Record) {
	if len(items) < k.min {
		return
	}
	l := &keptList{rev: rev, keys: make([]keptKey, len(items))}
	for i, r := range items {
		l.keys[i] = keptKey{r.Namespace, r.Name, r.Rev}
		l.bytes += keptKeyBytes + len(r.Name)
	}
	k.keep(id, l)
}

// logChange is one log row: a key's new revision, or its deletion.
type logChange struct {
	key     keptKey
	deleted bool
}

// forward is l brought to rev by changes (log rows after l.rev, in
// revision order, of l's resource and namespace).
func (l *keptList) forward(rev int64, changes []logChange) *keptList {
	next := &keptList{rev: rev, keys: l.keys, bytes: l.bytes}
	if len(changes) == 0 {
		return next
	}
	// The last change of each key is its state at rev.
	last := map[keptKey]int{}
	for i, c := range changes {
		last[keptKey{c.key.namespace, c.key.name, 0}] = i
	}
	changed := make([]logChange, 0, len(last))
	for _, i := range last {
		changed = append(changed, changes[i])
	}
	slices.SortFunc(changed, func(a, b logChange) int { return compareKept(a.key, b.key) })
	keys := make([]keptKey, 0, len(l.keys)+len(changed))
	i := 0
	for _, c := range changed {
		for i < len(l.keys) && compareKept(l.keys[i], c.key) < 0 {
			keys = append(keys, l.keys[i])
			i++
		}
		if i < len(l.keys) && compareKept(l.keys[i], c.key) == 0 {
			next.bytes -= keptKeyBytes + len(l.keys[i].name)
			i++
		}
		if !c.deleted {
			keys = append(keys, c.key)
			next.bytes += keptKeyBytes + len(c.key.name)
		}
	}
	next.keys = append(keys, l.keys[i:]...)
	return next
}

// changesSince reads, in tx, the log rows after rev up to cur that are of
// id's resource (and namespace, if it names one); ok is false when more
// than limit rows, of any resource, were written since.
func (s *Store) changesSince(ctx context.Context, tx *sql.Tx, id keptListID, rev, cur int64, limit int) (changes []logChange, ok bool, err error) {
	rows, err := tx.QueryContext(ctx, s.q("SELECT resource, namespace, name, rev, op FROM tabula_log WHERE rev > ? AND rev <= ? ORDER BY rev LIMIT ?"), rev, cur, limit+1)
	if err != nil {
		return nil, false, unavailable(err)
	}
	defer rows.Close()
	n := 0
	var resource string
	var c logChange
	var op int
	for rows.Next() {
		if n++; n > limit {
			return nil, false, nil
		}
		if err := rows.Scan(&resource, &c.key.namespace, &c.key.name, &c.key.rev, &op); err != nil {
			return nil, false, unavailable(err)
		}
		if resource != id.resource || id.namespace != "" && c.key.namespace != id.namespace {
			continue
		}
		c.deleted = op == opDelete
		changes = append(changes, c)
	}
	if err := rows.Err(); err != nil {
		return nil, false, unavailable(err)
	}
	return changes, true, nil
}

// listKept answers a whole list at cur (no selector, position or limit;
// opts.Cached set) from the keys kept for it, brought forward; ok is false
// when none are kept that can be.
func (s *Store) listKept(ctx context.Context, tx *sql.Tx, opts kv.ListOptions, cur, compacted int64) (kv.ListResult, bool, error) {
	res := kv.ListResult{Rev: cur}
	id := keptListID{opts.Resource, opts.Namespace}
	l := s.keptKeys.get(id)
	// Kept keys newer than this transaction's revision (a standby behind
	// the primary) or older than the compacted one cannot be used.
	if l == nil || l.rev > cur || l.rev < compacted {
		return res, false, nil
	}
	result := "kept"
	if l.rev < cur {
		changes, ok, err := s.changesSince(ctx, tx, id, l.rev, cur, min(len(l.keys)/keptChangeShare, keptChangeMax))
		if err != nil || !ok {
			return res, false, err
		}
		l = l.forward(cur, changes)
		s.keptKeys.keep(id, l)
		result = "forwarded"
	}
	s.keptListed.Add(1)
	listKeys.WithLabelValues(result).Inc()
	res.Items = make([]kv.Record, len(l.keys))
	var misses []int
	for i, k := range l.keys {
		r := &res.Items[i]
		r.Key = kv.Key{Resource: opts.Resource, Namespace: k.namespace, Name: k.name}
		r.Rev = k.rev
		if r.Value, r.Cached = opts.Cached(*r); !r.Cached {
			misses = append(misses, i)
		}
	}
	if err := s.finishMisses(ctx, tx, opts, res.Items, misses); err != nil {
		return res, false, err
	}
	return res, true, nil
}
