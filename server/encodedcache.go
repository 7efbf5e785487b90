package server

import (
	"strconv"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/schema"
)

// encodedCacheBytes bounds the encodings kept in memory.
const encodedCacheBytes = 32 << 20

// encodedCache keeps the encodings of stored objects by revision, served
// type and form, as kube-apiserver's watch cache keeps each object's
// serializations: a revision names one immutable stored value, so its
// encoding never changes. Informers and controllers list the same objects
// again and again, and every watcher of a collection is sent the same
// events: each is encoded once and the bytes are shared (decoding the
// stored JSON is most of what a Protobuf list or event costs). Oldest
// entries are dropped first once the byte budget is reached.
//
// Callers asking at once for an encoding not yet made wait for the first
// one's, so a burst of watchers sent the same object encodes it once.
type encodedCache struct {
	mu    sync.Mutex
	limit int
	size  int
	items map[encodedKey]*encodedEntry
	// order holds ready keys oldest first from head on.
	order []encodedKey
	head  int
	// What it did, for the metrics: lookups answered from it, encodings
	// made for it, and entries dropped for room.
	hits, made, evicted uint64
}

type encodedKey struct {
	rev  int64
	t    *schema.Type
	form encodedForm
}

// encodedForm is the form an entry holds. It is as wide as the key's
// other fields, so encodedKey has no padding and the map hashes and
// compares its keys as plain memory: a warm list looks up every item.
type encodedForm uint64

const (
	// formProtobuf is the object's Protobuf fields, without the envelope.
	formProtobuf encodedForm = iota
	// formJSON is the object's wire JSON, kind and apiVersion included.
	formJSON
	// formCBOR is the object's wire CBOR, kind and apiVersion included.
	formCBOR
	// formCBORItem is a typed object's CBOR as a list item, without kind
	// and apiVersion (see cborListItem).
	formCBORItem
	// formJSONItem is an object's JSON as a list item: a typed one's
	// without kind and apiVersion, an unstructured one's with them (see
	// jsonListItem).
	formJSONItem
	// formRowMetadata is the object of a meta.k8s.io/v1 Table row with
	// includeObject=Metadata: the object's PartialObjectMetadata JSON;
	// formRowMetadataV1beta1 the same in a v1beta1 Table.
	formRowMetadata
	formRowMetadataV1beta1
	// formMetadataProtobuf is the object's PartialObjectMetadata in
	// Protobuf, an item of a PartialObjectMetadataList (the JSON forms
	// above are those of its JSON).
	formMetadataProtobuf
)

type encodedEntry struct {
	// ready closes once b or err is set.
	ready chan struct{}
	// done is set, under the cache's lock, when ready closes: peek reads
	// it there instead of the channel, whose receive takes a lock of its
	// own on every item of a warm list.
	done bool
	b    []byte
	err  error
}

func newEncodedCache(limit int) *encodedCache {
	return &encodedCache{limit: limit, items: make(map[encodedKey]*encodedEntry)}
}

// get returns the encoding of k, made by encode unless it is cached or
// being made; callers must not modify it.
func (c *encodedCache) get(k encodedKey, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.items[k]
	if !ok {
		e = &encodedEntry{ready: make(chan struct{})}
		c.items[k] = e
		c.made++
		c.mu.Unlock()
		b, err := encode()
		c.fill(k, e, b, err)
		return b, err
	}
	c.hits++
	c.mu.Unlock()
	<-e.ready
	if e.err != nil {
		return encode()
	}
	return e.b, nil
}

// peek returns an encoding already made, without making one or waiting
// for one being made.
func (c *encodedCache) peek(k encodedKey) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok || !e.done || e.err != nil || e.b == nil {
		return nil, false
	}
	c.hits++
	return e.b, true
}

// fill completes a pending entry; a failed or oversized one is forgotten.
func (c *encodedCache) fill(k encodedKey, e *encodedEntry, b []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.b, e.err, e.done = b, err, true
	close(e.ready)
	if err != nil || len(b) > c.limit/16 {
		delete(c.items, k) // one huge object would push out many small ones
		return
	}
	c.order = append(c.order, k)
	c.size += len(b)
	for c.size > c.limit {
		old := c.order[c.head]
		c.head++
		c.size -= len(c.items[old].b)
		delete(c.items, old)
		c.evicted++
	}
	if c.head > len(c.order)/2 {
		c.order = append(c.order[:0], c.order[c.head:]...)
		c.head = 0
	}
}

// register exposes what the cache holds and did as tabula_encoding_cache_*
// metrics: whether a working set fits its budget shows in its evictions.
func (c *encodedCache) register(reg prometheus.Registerer) {
	read := func(f func() float64) func() float64 {
		return func() float64 {
			c.mu.Lock()
			defer c.mu.Unlock()
			return f()
		}
	}
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tabula_encoding_cache_bytes", Help: "Bytes of encodings kept (of a budget of " + strconv.Itoa(c.limit) + ")."},
			read(func() float64 { return float64(c.size) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_hits_total", Help: "Encodings served from the cache."},
			read(func() float64 { return float64(c.hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_made_total", Help: "Encodings made for the cache (it had none)."},
			read(func() float64 { return float64(c.made) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_evictions_total", Help: "Encodings dropped, oldest first, to stay within the budget."},
			read(func() float64 { return float64(c.evicted) })),
	)
}
