package server

import (
	"bytes"
	"container/list"
	"encoding/binary"
	"hash/crc32"
	"hash/maphash"
	"io"
	"strconv"
	"sync"

	"github.com/klauspost/compress/flate"
	"github.com/prometheus/client_golang/prometheus"
)

// A large list was half compression: of the ~21 ms of server CPU a warm
// Protobuf list of 10,000 ConfigMaps took, gzip was ~10 (deflate and its
// CRC over 12.6 MB), for an answer that is mostly the same bytes as the
// last time the list was asked for. So a compressed answer is written as
// one gzip member whose deflate stream is made of segments, each a run of
// the answer compressed on its own (no match reaches back before it) and
// ended at a byte boundary with an empty stored block, as a sync flush
// ends it: such segments join into one valid deflate stream. A segment is
// kept by the hash of its bytes and reused when the same run comes again.
// A list's items are the encoded cache's, bytes that never change: they
// come by reference with an id that names them (WriteKept), and a run of
// them is hashed from the ids, so it is neither copied nor read unless it
// has to be compressed.
//
// Runs are cut where the content says, not at fixed offsets, so one
// changed, added or removed item moves the cuts only around it and the
// rest of a list still matches: once a run holds segmentMin bytes, it
// ends after a write (list writers write an item at a time) of at least
// segmentCutPiece bytes whose hash (its id's, if kept) falls below a bar
// proportional to the write's length, so that runs grow by about
// segmentSpread more whatever the items' size; a run reaching segmentMax
// is cut there.
//
// Cost, measured on a list of 10,000 ConfigMaps of 1 KiB
// (BenchmarkSegmentedGzip, 12.6 MB): one stream takes 6.3 ms; segments
// all new 10.0 ms (each starts without history), all kept 1.7 ms, or
// 0.6 ms with the items written kept; the answer is ~10% larger than one
// stream's.
// A list asked for again, or with a few of its objects changed, is mostly
// kept runs.
const (
	segmentMin      = 32 << 10
	segmentSpread   = 32 << 10
	segmentMax      = 256 << 10
	segmentCutPiece = 64
	// segmentCacheBytes bounds the kept segments' compressed bytes.
	segmentCacheBytes = 8 << 20
)

// segmentCache keeps compressed segments by their bytes' hash and length,
// least recently used out first. The hash is keyed with a seed chosen at
// start, so a client cannot make its bytes collide with another's.
type segmentCache struct {
	seed  maphash.Seed
	limit int

	mu    sync.Mutex
	size  int
	items map[segmentKey]*list.Element
	lru   list.List // of *segment, most recent at the front
	// hits and made count segments reused and compressed.
	hits, made uint64
}

type segmentKey struct {
	sum uint64
	n   int
}

// segment is a run of an answer compressed: deflate blocks ending on a
// byte boundary, with the CRC-32 of its n uncompressed bytes and the
// operator that moves a CRC past them (crc32Shift).
type segment struct {
	key   segmentKey
	data  []byte
	crc   uint32
	shift uint32
}

func newSegmentCache(limit int) *segmentCache {
	return &segmentCache{seed: maphash.MakeSeed(), limit: limit, items: make(map[segmentKey]*list.Element)}
}

func (c *segmentCache) get(k segmentKey) *segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[k]
	if !ok {
		return nil
	}
	c.lru.MoveToFront(e)
	c.hits++
	return e.Value.(*segment)
}

func (c *segmentCache) put(s *segment) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.made++
	if len(s.data) > c.limit/8 {
		return
	}
	if _, ok := c.items[s.key]; ok {
		return
	}
	c.items[s.key] = c.lru.PushFront(s)
	c.size += len(s.data)
	for c.size > c.limit {
		old := c.lru.Back()
		o := c.lru.Remove(old).(*segment)
		delete(c.items, o.key)
		c.size -= len(o.data)
	}
}

func (c *segmentCache) counts() (hits, made uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hits, c.made
}

// register exposes the cache as tabula_gzip_segments_* metrics.
func (c *segmentCache) register(reg prometheus.Registerer) {
	read := func(f func() float64) func() float64 { return underLock(&c.mu, f) }
	reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: "tabula_gzip_segments_bytes", Help: "Bytes of compressed runs of large answers kept (of a budget of " + strconv.Itoa(c.limit) + ")."},
			read(func() float64 { return float64(c.size) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_gzip_segments_hits_total", Help: "Runs of large answers sent as kept, not compressed again."},
			read(func() float64 { return float64(c.hits) })),
		prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "tabula_gzip_segments_made_total", Help: "Runs of large answers compressed."},
			read(func() float64 { return float64(c.made) })),
	)
}

var flateWriters = sync.Pool{New: func() any {
	w, _ := flate.NewWriter(nil, gzipLevel)
	return w
}}

// segmentedGzip writes one gzip member (RFC 1952) of segments to out.
type segmentedGzip struct {
	out   io.Writer
	cache *segmentCache
	// pieces are the run being gathered, runLen bytes: kept writes by
	// reference (WriteKept), other writes copied into scratch. sum is the
	// hash of the pieces' hashes and lengths.
	pieces  []runPiece
	scratch []byte
	runLen  int
	sum     maphash.Hash
	// crc and size are the whole answer's so far.
	crc     uint32
	size    uint32
	started bool
	zbuf    segmentBuffer
	err     error
}

// runPiece is one piece of a run: kept bytes, or scratch[off:off+n].
type runPiece struct {
	kept   []byte
	off, n int
}

func (p runPiece) bytes(scratch []byte) []byte {
	if p.kept != nil {
		return p.kept
	}
	return scratch[p.off : p.off+p.n]
}

// segmentBuffer collects a compressor's output for one segment.
type segmentBuffer struct{ b []byte }

func (s *segmentBuffer) Write(p []byte) (int, error) {
	s.b = append(s.b, p...)
	return len(p), nil
}

func newSegmentedGzip(out io.Writer, cache *segmentCache) *segmentedGzip {
	z := &segmentedGzip{out: out, cache: cache}
	z.sum.SetSeed(cache.seed)
	return z
}

// reset makes z a new member written to out, keeping its buffer.
func (z *segmentedGzip) reset(out io.Writer) {
	z.dropRun()
	*z = segmentedGzip{out: out, cache: z.cache, pieces: z.pieces, scratch: z.scratch, zbuf: segmentBuffer{z.zbuf.b[:0]}}
	z.sum.SetSeed(z.cache.seed)
}

func (z *segmentedGzip) Write(p []byte) (int, error) {
	if z.err != nil {
		return 0, z.err
	}
	n := len(p)
	for len(p) > 0 {
		// A write longer than what a segment takes is cut at segmentMax.
		take := min(len(p), segmentMax-z.runLen)
		piece := p[:take]
		p = p[take:]
		if last := len(z.pieces) - 1; last >= 0 && z.pieces[last].kept == nil {
			z.pieces[last].n += take // scratch is only ever appended to
		} else {
			z.pieces = append(z.pieces, runPiece{off: len(z.scratch), n: take})
		}
		z.scratch = append(z.scratch, piece...)
		if err := z.add(maphash.Bytes(z.cache.seed, piece), take, 0); err != nil {
			return 0, err
		}
	}
	return n, nil
}

// WriteKept writes p, which its caller promises never changes and which
// id alone names among everything written here (a revision's encoding in
// the encoded cache): p joins the run by reference and id is hashed in
// its place, so a run of kept items is neither copied nor hashed byte by
// byte. The bytes of a run found kept are not read at all. In a warm list
// that copy and hash were a third of the server's CPU.
func (z *segmentedGzip) WriteKept(p []byte, id uint64) (int, error) {
	if len(p) == 0 || len(p) > segmentMax {
		return z.Write(p)
	}
	if z.err != nil {
		return 0, z.err
	}
	if z.runLen+len(p) > segmentMax {
		// Cut before it rather than inside it: a run of kept items is
		// then named by their ids alone, whatever their bytes.
		if err := z.endRun(); err != nil {
			return 0, err
		}
	}
	z.pieces = append(z.pieces, runPiece{kept: p})
	var word [8]byte
	binary.LittleEndian.PutUint64(word[:], id)
	if err := z.add(maphash.Bytes(z.cache.seed, word[:]), len(p), 1); err != nil {
		return 0, err
	}
	return len(p), nil
}

// add counts a piece of n bytes whose hash is h (of its bytes, or of its
// kept id: kind tells which) into the run, and ends the run where it
// should be cut.
func (z *segmentedGzip) add(h uint64, n int, kind uint64) error {
	var word [24]byte
	binary.LittleEndian.PutUint64(word[:8], h)
	binary.LittleEndian.PutUint64(word[8:16], uint64(n))
	binary.LittleEndian.PutUint64(word[16:], kind)
	z.sum.Write(word[:])
	z.runLen += n
	cut := z.runLen >= segmentMax ||
		(z.runLen >= segmentMin && n >= segmentCutPiece && h>>32 < uint64(n)<<32/segmentSpread)
	if cut {
		return z.endRun()
	}
	return nil
}

// endRun writes the gathered run as a segment, kept or made.
func (z *segmentedGzip) endRun() error {
	if z.runLen == 0 {
		return z.err
	}
	if err := z.header(); err != nil {
		return err
	}
	k := segmentKey{z.sum.Sum64(), z.runLen}
	s := z.cache.get(k)
	if s == nil {
		fw := flateWriters.Get().(*flate.Writer)
		z.zbuf.b = z.zbuf.b[:0]
		fw.Reset(&z.zbuf)
		var crc uint32
		for _, p := range z.pieces {
			b := p.bytes(z.scratch)
			fw.Write(b)
			crc = crc32.Update(crc, crc32.IEEETable, b)
		}
		fw.Flush() // ends on a byte boundary, not the final block
		flateWriters.Put(fw)
		s = &segment{key: k, data: bytes.Clone(z.zbuf.b), crc: crc, shift: crc32Shift(z.runLen)}
		z.cache.put(s)
	}
	z.crc = gfMul(s.shift, z.crc) ^ s.crc
	z.size += uint32(z.runLen)
	z.dropRun()
	_, z.err = z.out.Write(s.data)
	return z.err
}

// dropRun empties the run, letting go of the kept bytes it referred to:
// a compressor waiting in the pool must not hold a list's items.
func (z *segmentedGzip) dropRun() {
	clear(z.pieces)
	z.pieces, z.scratch, z.runLen = z.pieces[:0], z.scratch[:0], 0
	z.sum.Reset()
}

// header writes the member's header: deflate, no name or time, the
// fastest level's flag, unknown OS (as Go's gzip writes it).
func (z *segmentedGzip) header() error {
	if z.started {
		return nil
	}
	z.started = true
	_, z.err = z.out.Write([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 4, 255})
	return z.err
}

// Flush sends what was written so far as a segment of its own.
func (z *segmentedGzip) Flush() error {
	if err := z.header(); err != nil {
		return err
	}
	return z.endRun()
}

// Close ends the deflate stream with an empty final block and writes the
// member's trailer.
func (z *segmentedGzip) Close() error {
	if err := z.Flush(); err != nil {
		z.dropRun() // a failed stream keeps no kept bytes either
		return err
	}
	var tail [10]byte
	tail[0], tail[1] = 0x03, 0x00 // final fixed-Huffman block, end of block only
	binary.LittleEndian.PutUint32(tail[2:], z.crc)
	binary.LittleEndian.PutUint32(tail[6:], z.size)
	_, z.err = z.out.Write(tail[:])
	return z.err
}

// The CRC-32 of two runs joined is the first run's CRC multiplied by
// x^(8·len(second)) modulo the CRC polynomial, plus the second's: CRCs
// are remainders of polynomials over GF(2), with the register's pre- and
// post-inversion cancelling out in the sum. In the reflected form CRC-32
// uses, bit 31 is x^0 and multiplying by x is a right shift.

// gfMul is a·b modulo the CRC-32 polynomial, reflected.
func gfMul(a, b uint32) uint32 {
	var p uint32
	for m := uint32(1) << 31; m != 0; m >>= 1 {
		if a&m != 0 {
			p ^= b
		}
		if b&1 != 0 {
			b = b>>1 ^ crc32.IEEE
		} else {
			b >>= 1
		}
	}
	return p
}

// crc32Pow2 holds x^(2^k) modulo the polynomial, for k from 0.
var crc32Pow2 = func() (t [64]uint32) {
	t[0] = 1 << 30 // x^1
	for k := 1; k < len(t); k++ {
		t[k] = gfMul(t[k-1], t[k-1])
	}
	return t
}()

// crc32Shift is x^(8·n) modulo the polynomial: multiplied into a CRC, it
// moves it past n bytes of zeros.
func crc32Shift(n int) uint32 {
	p := uint32(1) << 31 // x^0
	bits := uint64(n) * 8
	for k := 0; bits != 0; k, bits = k+1, bits>>1 {
		if bits&1 != 0 {
			p = gfMul(crc32Pow2[k], p)
		}
	}
	return p
}
