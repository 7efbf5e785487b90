package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"sync"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// sharedValues holds recently read values by revision for lists that ask
// for shared values (kv.ListOptions.Shared): many watches that open with
// the state of one collection at once read each value from the database
// once, and all hold the same bytes. A revision names one immutable value,
// so an entry never goes stale; it only ages out, oldest first, once the
// byte budget is used. An entry that ages out stays valid for the readers
// that hold it.
//
// Concurrent readers of the same missing revisions do not each fetch
// them: the first marks them pending and fetches, the others wait for it
// (and fetch for themselves if it fails), so a burst of identical reads
// costs one copy, not one per reader.
type sharedValues struct {
	mu    sync.Mutex
	limit int
	size  int
	items map[int64]*sharedValue
	// order holds ready revisions oldest first from head on.
	order []int64
	head  int
}

type sharedValue struct {
	// ready closes once value or err is set.
	ready chan struct{}
	value []byte
	err   error
}

func newSharedValues(limit int) *sharedValues {
	return &sharedValues{limit: limit, items: make(map[int64]*sharedValue)}
}

// resolveShared fills the Value of every item from the cache, fetching the
// missing ones (rev IN …) in tx. Items must have Key and Rev set.
func (s *Store) resolveShared(ctx context.Context, tx *sql.Tx, items []kv.Record) error {
	c := s.shared
	var mine []int64 // pending entries this call fetches
	c.mu.Lock()
	entries := make([]*sharedValue, len(items))
	for i, it := range items {
		e, ok := c.items[it.Rev]
		if !ok {
			e = &sharedValue{ready: make(chan struct{})}
			c.items[it.Rev] = e
			mine = append(mine, it.Rev)
		}
		entries[i] = e
	}
	c.mu.Unlock()
	if len(mine) > 0 {
		keys := make(map[int64]kv.Key, len(mine))
		for _, it := range items {
			keys[it.Rev] = it.Key
		}
		got, err := s.fetchValues(ctx, tx, mine, keys)
		s.countShared(got)
		c.fill(mine, got, err)
	}
	for i, e := range entries {
		select {
		case <-e.ready:
		case <-ctx.Done():
			return ctx.Err()
		}
		if e.err != nil {
			// Another reader's fetch failed (its client left, say):
			// read this one alone, without sharing.
			got, err := s.fetchValues(ctx, tx, []int64{items[i].Rev}, map[int64]kv.Key{items[i].Rev: items[i].Key})
			if err != nil {
				return err
			}
			s.countShared(got)
			items[i].Value = got[items[i].Rev]
			continue
		}
		items[i].Value = e.value
	}
	return nil
}

// fetchValues reads and opens the values of revs.
func (s *Store) fetchValues(ctx context.Context, tx *sql.Tx, revs []int64, keys map[int64]kv.Key) (map[int64][]byte, error) {
	out := make(map[int64][]byte, len(revs))
	err := s.forRevs(ctx, tx, `SELECT l.rev, l.value FROM tabula_log l WHERE l.rev IN `, revs, func(rows *sql.Rows) error {
		var rev int64
		var value sql.RawBytes
		if err := rows.Scan(&rev, &value); err != nil {
			return err
		}
		v, _, err := s.openRow(keys[rev], value)
		if err != nil {
			return err
		}
		out[rev] = v
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, rev := range revs {
		if _, ok := out[rev]; !ok {
			// Compaction removed it between the keys and the values.
			return nil, fmt.Errorf("sqlstore: value of revision %d: %w", rev, kv.ErrCompacted)
		}
	}
	return out, nil
}

// countShared counts values read from the database for shared reads.
func (s *Store) countShared(got map[int64][]byte) {
	n := 0
	for _, v := range got {
		n += len(v)
	}
	sharedReadBytes.Add(float64(n))
	s.sharedRead.Add(int64(n))
}

// SharedReadBytes is how many bytes of values this store has read from
// the database for shared reads (kv.ListOptions.Shared).
func (s *Store) SharedReadBytes() int64 { return s.sharedRead.Load() }

// fill completes the pending entries of revs: with their values, or, on
// err, by removing them so the next reader fetches again.
func (c *sharedValues) fill(revs []int64, got map[int64][]byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, rev := range revs {
		e := c.items[rev]
		if err != nil {
			e.err = err
			delete(c.items, rev)
			close(e.ready)
			continue
		}
		e.value = got[rev]
		close(e.ready)
		if len(e.value) > c.limit/8 {
			delete(c.items, rev) // one huge value would push out many
			continue
		}
		c.order = append(c.order, rev)
		c.size += len(e.value)
	}
	for c.size > c.limit && c.head < len(c.order) {
		old := c.order[c.head]
		c.head++
		if e, ok := c.items[old]; ok {
			c.size -= len(e.value)
			delete(c.items, old)
		}
	}
	if c.head > len(c.order)/2 {
		c.order = append(c.order[:0], c.order[c.head:]...)
		c.head = 0
	}
}
