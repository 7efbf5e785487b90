package sqlstore

import (
	"sort"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// recentLog keeps the rows the hub delivered last, in revision order, so
// that a watch from a recent revision — every informer's watch after a
// list, and again each time its watch times out — takes its history from
// memory instead of reading the log: kube-apiserver's watch cache serves
// the same from its ring of recent events. It is bounded by rows and by
// the bytes they hold (heldBytes); their values are shared with the
// watchers the hub gave them to (values are never changed in place).
//
// Invariant (under hub.mu): the rows held are every row with
// base < rev <= hub.last, the hub having delivered each of them.
type recentLog struct {
	rows  []logRow // rows[head:] are held
	head  int
	bytes int
	base  int64
}

// recentRows and recentBytes bound what recentLog holds. The rows of
// every resource share them, so a busy server's writes push a quiet
// resource's history out sooner than kube's per-resource caches do; the
// bytes are kept small because an idle server holds its start-up writes
// here (512 KiB raised its idle anonymous memory by ~0.6 MiB, 256 KiB by
// ~0.25 MiB).
const (
	recentRows  = 1024
	recentBytes = 256 << 10
)

// heldBytes is roughly what r keeps alive: its value, its key and its
// label and field maps (an entry's strings and its slot, and each map's
// own header).
func heldBytes(r *logRow) int {
	n := len(r.value) + len(r.key.Resource) + len(r.key.Namespace) + len(r.key.Name)
	for _, m := range [...]map[string]string{r.labels, r.fields, r.prevLabels, r.prevFs} {
		if m == nil {
			continue
		}
		n += 64
		for k, v := range m {
			n += len(k) + len(v) + 40
		}
	}
	return n
}

// reset empties l: it holds every row after last, which is none yet.
func (l *recentLog) reset(last int64) {
	clear(l.rows)
	l.rows, l.head, l.bytes, l.base = l.rows[:0], 0, 0, last
}

// add holds r, the row the hub delivered next, dropping the oldest rows
// beyond the bounds.
func (l *recentLog) add(r logRow) {
	l.rows = append(l.rows, r)
	l.bytes += heldBytes(&r)
	for len(l.rows)-l.head > recentRows || l.bytes > recentBytes {
		old := &l.rows[l.head]
		l.bytes -= heldBytes(old)
		l.base = old.rev
		*old = logRow{} // its value and maps go with it
		l.head++
	}
	if l.head >= recentRows {
		// Slide the held rows down instead of growing without end.
		n := copy(l.rows, l.rows[l.head:])
		clear(l.rows[n:])
		l.rows, l.head = l.rows[:n], 0
	}
}

// since returns the held rows of key (a resource, namespace or name, as
// readLog filters) with rev > after, and whether they are all of them:
// false when rows after after were dropped already.
func (l *recentLog) since(after int64, key kv.Key) ([]logRow, bool) {
	if after < l.base {
		return nil, false
	}
	held := l.rows[l.head:]
	i := sort.Search(len(held), func(i int) bool { return held[i].rev > after })
	var out []logRow
	for _, r := range held[i:] {
		if key.Resource != "" && r.key.Resource != key.Resource || key.Namespace != "" && r.key.Namespace != key.Namespace ||
			key.Name != "" && r.key.Name != key.Name {
			continue
		}
		out = append(out, r)
	}
	return out, true
}
