package server

import (
	"sync"

	"github.com/tabula-dev/tabula/schema"
)

// protoCacheBytes bounds the Protobuf encodings kept in memory.
const protoCacheBytes = 32 << 20

// protoCache keeps the Protobuf encoding of stored objects by revision and
// served type, as kube-apiserver's watch cache keeps each object's
// serializations: a revision names one immutable stored value, so its
// encoding never changes. Informers and controllers list the same objects
// again and again, and decoding the stored JSON is most of what a
// Protobuf list costs. Oldest entries are dropped first once the byte
// budget is reached.
type protoCache struct {
	mu    sync.Mutex
	limit int
	size  int
	items map[protoKey][]byte
	// order holds keys oldest first from head on.
	order []protoKey
	head  int
}

type protoKey struct {
	rev int64
	t   *schema.Type
}

func newProtoCache(limit int) *protoCache {
	return &protoCache{limit: limit, items: make(map[protoKey][]byte)}
}

// get returns the cached encoding; callers must not modify it.
func (c *protoCache) get(rev int64, t *schema.Type) ([]byte, bool) {
	c.mu.Lock()
	b, ok := c.items[protoKey{rev, t}]
	c.mu.Unlock()
	return b, ok
}

func (c *protoCache) put(rev int64, t *schema.Type, b []byte) {
	if len(b) > c.limit/16 {
		return // one huge object would push out many small ones
	}
	k := protoKey{rev, t}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok {
		return
	}
	c.items[k] = b
	c.order = append(c.order, k)
	c.size += len(b)
	for c.size > c.limit {
		old := c.order[c.head]
		c.head++
		c.size -= len(c.items[old])
		delete(c.items, old)
	}
	if c.head > len(c.order)/2 {
		c.order = append(c.order[:0], c.order[c.head:]...)
		c.head = 0
	}
}
