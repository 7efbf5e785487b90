package sqlstore

import (
	"sort"
	"unsafe"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// recentLog keeps the rows the hub delivered last, one ring per resource,
// so that a watch from a recent revision — every informer's watch after a
// list, and again each time its watch times out — takes its history from
// memory instead of reading the log: kube-apiserver's watch cache serves
// the same from each resource's ring of recent events. All rings share
// one bound of rows and of the bytes they hold (heldBytes); over it, the
// largest ring gives up its oldest rows first, so a busy resource's
// writes do not push a quiet one's history out. Values are shared with
// the watchers the hub gave them to (values are never changed in place).
//
// Invariant (under hub.mu): a ring holds every row of its resource with
// ring.base < rev <= hub.last; a resource without a ring had no row after
// base (the last reset, or the newest base of a ring emptied and dropped,
// so that rings of resources written once do not pile up).
type recentLog struct {
	rings map[string]*recentRing
	base  int64
	rows  int // held over all rings
	bytes int
}

// recentRing is one resource's held rows, in revision order.
type recentRing struct {
	rows  []heldRow // rows[head:] are held
	head  int
	bytes int
	base  int64
}

// heldRow is a held row and the bytes it was counted for when added: the
// same is taken off when it is dropped, even if its maps (the writer's
// own) were changed meanwhile.
type heldRow struct {
	logRow
	size int
}

// recentRows and recentBytes bound what recentLog holds over all
// resources. The bytes bound is what matters: a fresh server's own
// start-up writes (bootstrap RBAC, flow control, API services) hold
// ~300 KiB of it, and a hundred 1 KiB objects of a quiet resource must
// still fit beside a busy one's share. Once over a bound, rows are
// dropped down to recentSlack below it, so the rings are not searched for
// the largest on every add.
const (
	recentRows  = 4096
	recentBytes = 1 << 20
	recentSlack = 8 // drop to 7/8 of a bound
)

// heldBytes is roughly what r keeps alive: its slot, its value, its key
// and its label and field maps (an entry's strings and its slot, and each
// map's own header).
func heldBytes(r *logRow) int {
	n := int(unsafe.Sizeof(*r)) + len(r.value) + len(r.key.Resource) + len(r.key.Namespace) + len(r.key.Name)
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
	*l = recentLog{rings: map[string]*recentRing{}, base: last}
}

// add holds r, the row the hub delivered next, dropping the largest
// rings' oldest rows while over the bounds.
func (l *recentLog) add(r logRow) {
	g := l.rings[r.key.Resource]
	if g == nil {
		g = &recentRing{base: l.base}
		l.rings[r.key.Resource] = g
	}
	n := heldBytes(&r)
	g.rows = append(g.rows, heldRow{r, n})
	g.bytes += n
	l.rows++
	l.bytes += n
	if l.rows > recentRows || l.bytes > recentBytes {
		l.trim()
	}
}

// trim drops rows, oldest first from the ring holding the most, until l
// is recentSlack below its bounds. Rows over the bound are dropped from
// the ring with the most rows, bytes from the one with the most bytes.
func (l *recentLog) trim() {
	for {
		byRows := l.rows > recentRows-recentRows/recentSlack
		if !byRows && l.bytes <= recentBytes-recentBytes/recentSlack {
			return
		}
		// Every ring in l.rings holds a row: an emptied one is removed.
		var g *recentRing
		var res string
		for r, c := range l.rings {
			if g == nil || byRows && len(c.rows)-c.head > len(g.rows)-g.head || !byRows && c.bytes > g.bytes {
				g, res = c, r
			}
		}
		if g == nil {
			return // nothing held: cannot happen while over a bound
		}
		old := &g.rows[g.head]
		g.bytes -= old.size
		l.bytes -= old.size
		l.rows--
		g.base = old.rev
		*old = heldRow{} // its value and maps go with it
		g.head++
		if g.head == len(g.rows) {
			// Emptied: the ring goes, and base covers its resource.
			l.base = max(l.base, g.base)
			delete(l.rings, res)
			continue
		}
		g.slide()
	}
}

// slide moves g's held rows down once half its slice is dropped ones, and
// gives back a slice far larger than what it holds, so a ring that was
// busy once does not keep its peak's slots.
func (g *recentRing) slide() {
	held := len(g.rows) - g.head
	if g.head < 16 || g.head < held {
		return
	}
	if cap(g.rows) > 3*held+16 {
		rows := make([]heldRow, held, 2*held+8)
		copy(rows, g.rows[g.head:])
		g.rows, g.head = rows, 0
		return
	}
	n := copy(g.rows, g.rows[g.head:])
	clear(g.rows[n:])
	g.rows, g.head = g.rows[:n], 0
}

// since returns the held rows of key (a resource, with a namespace or
// name or not, as readLog filters) with rev > after, and whether they are
// all of them: false when rows after after were dropped already, or key
// names no resource (the hub offers rows by resource only).
func (l *recentLog) since(after int64, key kv.Key) ([]logRow, bool) {
	if key.Resource == "" {
		return nil, false
	}
	g := l.rings[key.Resource]
	if g == nil {
		return nil, after >= l.base
	}
	if after < g.base {
		return nil, false
	}
	held := g.rows[g.head:]
	i := sort.Search(len(held), func(i int) bool { return held[i].rev > after })
	var out []logRow
	for _, r := range held[i:] {
		if key.Namespace != "" && r.key.Namespace != key.Namespace || key.Name != "" && r.key.Name != key.Name {
			continue
		}
		out = append(out, r.logRow)
	}
	return out, true
}
