package server

import (
	"hash/maphash"
	"strconv"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/schema"
)

// encodedCacheBytes bounds the encodings kept in memory that reads made;
// encodedWritesBytes those kept from writes' answers.
const (
	encodedCacheBytes  = 32 << 20
	encodedWritesBytes = encodedCacheBytes / 8
)

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
//
// A write answered in Protobuf has its object's encoding in hand; it is
// kept (keep) for the watchers sent that revision next and a watch or
// read soon after. Those entries have a smaller budget of their own, so a
// stream of writes neither holds a full cache of objects nobody reads
// nor pushes out what lists made.
type encodedCache struct {
	mu    sync.Mutex
	items map[encodedKey]*encodedEntry
	// reads holds the entries get made, writes those keep was given.
	reads, writes encodedQueue
	// What it did, for the metrics: lookups answered from it, encodings
	// made for it, and entries dropped for room.
	hits, made, evicted uint64
	// serials tell types apart in kept ids (keptIDs), from idSeed.
	serials    map[weak.Pointer[schema.Type]]uint64
	lastSerial uint64
	idSeed     maphash.Seed
}

// encodedQueue is a budget of entries, dropped oldest first.
type encodedQueue struct {
	limit int
	size  int
	// keys holds ready keys oldest first from head on.
	keys []encodedKey
	head int
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
	// formKeptRow is a meta.k8s.io/v1 Table row with
	// includeObject=Metadata of a kind with Cells, its ages open
	// (codecs.KeptRow); formKeptRowV1beta1 the same in a v1beta1 Table.
	formKeptRow
	formKeptRowV1beta1
)

type encodedEntry struct {
	b []byte
	// wait is made, under the cache's lock, by the first caller to wait
	// for the entry while it is being made, and closed once it is done.
	// Most entries are never waited for (a list's items, a write's
	// answer): a channel each was 96 of the ~240 bytes an entry cost
	// beside its encoding.
	wait chan struct{}
	// done is set, under the cache's lock, once b or failed is; a waiter
	// seeing failed makes the encoding itself, for its own error.
	done, failed bool
}

func newEncodedCache(reads, writes int) *encodedCache {
	return &encodedCache{items: make(map[encodedKey]*encodedEntry),
		reads: encodedQueue{limit: reads}, writes: encodedQueue{limit: writes},
		serials: map[weak.Pointer[schema.Type]]uint64{}, idSeed: maphash.MakeSeed()}
}

// keptIDs returns, by revision, the ids that name t's encodings in form
// for a codecs.KeptWriter: the id stands for the bytes, which a revision,
// type and form fix. A type is told apart by a serial, not by its
// address, which a later type (a CRD's next definition, whose objects may
// read differently at the same revision) could reuse once the old one is
// gone; the weak key keeps its handle, so it is never reused either. The
// map grows by one small entry per type ever listed.
func (c *encodedCache) keptIDs(t *schema.Type, form encodedForm) func(rev int64) uint64 {
	c.mu.Lock()
	key := weak.Make(t)
	serial, ok := c.serials[key]
	if !ok {
		c.lastSerial++
		serial = c.lastSerial
		c.serials[key] = serial
	}
	c.mu.Unlock()
	return func(rev int64) uint64 {
		return maphash.Comparable(c.idSeed, [3]uint64{uint64(rev), serial, uint64(form)}) | 1 // 0 names nothing
	}
}

// get returns the encoding of k, made by encode unless it is cached or
// being made; callers must not modify it.
func (c *encodedCache) get(k encodedKey, encode func() ([]byte, error)) ([]byte, error) {
	c.mu.Lock()
	e, ok := c.items[k]
	if !ok {
		e = &encodedEntry{}
		c.items[k] = e
		c.made++
		c.mu.Unlock()
		b, err := encode()
		c.fill(k, e, b, err)
		return b, err
	}
	c.hits++
	if !e.done {
		if e.wait == nil {
			e.wait = make(chan struct{})
		}
		wait := e.wait
		c.mu.Unlock()
		<-wait // b and failed were set before it closed
	} else {
		c.mu.Unlock()
	}
	if e.failed {
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
	if !ok || !e.usable() {
		return nil, false
	}
	c.hits++
	return e.b, true
}

// holds says whether an encoding of k is kept, without counting a hit.
func (c *encodedCache) holds(k encodedKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	return ok && e.usable()
}

// usable says the entry holds an encoding (under the cache's lock).
func (e *encodedEntry) usable() bool { return e.done && !e.failed && e.b != nil }

// heldRate follows how often a get's live revision had its answer kept.
// Asking the store for the revision alone (GetKnown) saves reading the
// object when the answer is kept and costs a statement more when it is
// not (SQLite, 1 KiB objects: 4.2 and 7.4 µs against a get's 5.6), so
// gets ask only while at least about half of the recent ones were held;
// a workload of cold objects gets as before. It counts the misses, an
// average over about the last 16 gets in 1/1024ths, so that it starts
// (zero) expecting hits. Updates race and may be lost: it is a hint.
type heldRate struct{ missed atomic.Int64 }

func (h *heldRate) likely() bool { return h.missed.Load() < 512 }

func (h *heldRate) saw(held bool) {
	sample := int64(1024)
	if held {
		sample = 0
	}
	v := h.missed.Load()
	h.missed.Store(v + (sample-v)/16)
}

// keep adds the encoding a write made of revision k, unless one is there.
func (c *encodedCache) keep(k encodedKey, b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.items[k]; ok || len(b) > c.writes.limit/16 {
		return
	}
	c.items[k] = &encodedEntry{done: true, b: b}
	c.admit(&c.writes, k, len(b))
}

// fill completes a pending entry; a failed or oversized one is forgotten.
func (c *encodedCache) fill(k encodedKey, e *encodedEntry, b []byte, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e.b, e.failed, e.done = b, err != nil, true
	if e.wait != nil {
		close(e.wait)
	}
	if err != nil || len(b) > c.reads.limit/16 {
		delete(c.items, k) // one huge object would push out many small ones
		return
	}
	c.admit(&c.reads, k, len(b))
}

// admit counts the entry k of n bytes in q, dropping q's oldest ones
// while it is over its budget.
func (c *encodedCache) admit(q *encodedQueue, k encodedKey, n int) {
	q.keys = append(q.keys, k)
	q.size += n
	for q.size > q.limit {
		old := q.keys[q.head]
		q.head++
		q.size -= len(c.items[old].b)
		delete(c.items, old)
		c.evicted++
	}
	if q.head > len(q.keys)/2 {
		q.keys = append(q.keys[:0], q.keys[q.head:]...)
		q.head = 0
	}
}

// underLock is f read with mu held, for the metrics of what mu guards.
func underLock(mu *sync.Mutex, f func() float64) func() float64 {
	return func() float64 {
		mu.Lock()
		defer mu.Unlock()
		return f()
	}
}

// register exposes what the cache holds and did as tabula_encoding_cache_*
// metrics: whether a working set fits its budget shows in its evictions.
func (c *encodedCache) register(reg prometheus.Registerer) {
	read := func(f func() float64) func() float64 { return underLock(&c.mu, f) }
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tabula_encoding_cache_bytes", Help: "Bytes of encodings kept (of a budget of " + strconv.Itoa(c.reads.limit) + " for those reads made and " + strconv.Itoa(c.writes.limit) + " for those kept from writes)."},
			read(func() float64 { return float64(c.reads.size + c.writes.size) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_hits_total", Help: "Encodings served from the cache."},
			read(func() float64 { return float64(c.hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_made_total", Help: "Encodings made for the cache (it had none)."},
			read(func() float64 { return float64(c.made) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_encoding_cache_evictions_total", Help: "Encodings dropped, oldest first, to stay within the budget."},
			read(func() float64 { return float64(c.evicted) })),
	)
}
