package server

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"hash/crc32"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	kgzip "github.com/klauspost/compress/gzip"
	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// crc32Combine is the CRC-32 of a‖b from a's and b's CRCs and b's length,
// as segmentedGzip joins its runs'.
func crc32Combine(crcA, crcB uint32, lenB int) uint32 {
	return gfMul(crc32Shift(lenB), crcA) ^ crcB
}

func TestCRC32Combine(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	data := make([]byte, 300_000)
	for i := range data {
		data[i] = byte(r.IntN(256))
	}
	for _, cut := range []int{0, 1, 7, 4096, 65_537, 299_999, 300_000} {
		a, b := data[:cut], data[cut:]
		got := crc32Combine(crc32.ChecksumIEEE(a), crc32.ChecksumIEEE(b), len(b))
		if want := crc32.ChecksumIEEE(data); got != want {
			t.Fatalf("cut at %d: combined %08x, want %08x", cut, got, want)
		}
	}
}

// unzipOne reads z as exactly one gzip member (Go's reader checks its
// CRC and length) and fails on anything after it.
func unzipOne(t *testing.T, z []byte) []byte {
	t.Helper()
	br := bytes.NewReader(z)
	zr, err := gzip.NewReader(br)
	if err != nil {
		t.Fatal(err)
	}
	zr.Multistream(false)
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("decompress: %v", err)
	}
	if br.Len() != 0 {
		t.Fatalf("%d bytes after the gzip member", br.Len())
	}
	return out
}

// listItems are n ConfigMaps as a Protobuf list writes them, a write for
// each item's tag and length and one for its bytes, with names from
// start on.
func listItems(t testing.TB, start, n int) [][]byte {
	var pieces [][]byte
	for i := start; i < start+n; i++ {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name: fmt.Sprintf("fill-%d", i), Namespace: "bench", UID: types.UID(fmt.Sprintf("5c0a5f2e-0000-4000-8000-%012d", i)),
				ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: metav1.Unix(1_700_000_000+int64(i), 0),
				Labels: map[string]string{"selected": "no"},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "tabula-bench", Operation: metav1.ManagedFieldsOperationUpdate,
					APIVersion: "v1", Time: &metav1.Time{}, FieldsType: "FieldsV1",
					FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:data":{".":{},"f:v":{}},"f:metadata":{"f:labels":{".":{},"f:selected":{}}}}`)}}},
			},
			Data: map[string]string{"v": strings.Repeat(string(rune('a'+i%26)), 1024)},
		}
		b, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, protowire.AppendVarint(protowire.AppendTag(nil, 2, protowire.BytesType), uint64(len(b))), b)
	}
	return pieces
}

// itemIDs names listItems' item pieces (every second one) from first on,
// as the server names its cached encodings; tag pieces get none.
func itemIDs(pieces [][]byte, first uint64) []uint64 {
	ids := make([]uint64, len(pieces))
	for i := 1; i < len(pieces); i += 2 {
		ids[i] = first + uint64(i/2)
	}
	return ids
}

func writeSegmented(t testing.TB, c *segmentCache, pieces [][]byte) []byte {
	return writeSegmentedWith(t, newSegmentedGzip(nil, c), pieces, nil)
}

// writeSegmentedWith writes pieces with z made new, as the server's
// compressor is reused; a piece with a nonzero ids[i] is written kept.
func writeSegmentedWith(t testing.TB, z *segmentedGzip, pieces [][]byte, ids []uint64) []byte {
	var out bytes.Buffer
	z.reset(&out)
	for i, p := range pieces {
		var err error
		if i < len(ids) && ids[i] != 0 {
			_, err = z.WriteKept(p, ids[i])
		} else {
			_, err = z.Write(p)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestSegmentedGzip: what is written arrives whole through one gzip
// member whatever the writes' sizes, flushes included.
func TestSegmentedGzip(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	noise := make([]byte, 3*segmentMax+17)
	for i := range noise {
		noise[i] = byte(r.IntN(256))
	}
	cases := map[string][][]byte{
		"nothing":               nil,
		"one byte":              {[]byte("x")},
		"list items":            listItems(t, 0, 500),
		"one write over max":    {noise},
		"many small writes":     bytes.SplitAfter(noise[:200_000], []byte{7}),
		"flushed in the middle": {noise[:1000], nil, noise[1000:70_000]},
	}
	for name, pieces := range cases {
		t.Run(name, func(t *testing.T) {
			var out bytes.Buffer
			z := newSegmentedGzip(&out, newSegmentCache(segmentCacheBytes))
			var want []byte
			for _, p := range pieces {
				if p == nil {
					if err := z.Flush(); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want = append(want, p...)
				if _, err := z.Write(p); err != nil {
					t.Fatal(err)
				}
			}
			if err := z.Close(); err != nil {
				t.Fatal(err)
			}
			if got := unzipOne(t, out.Bytes()); !bytes.Equal(got, want) {
				t.Fatalf("decompressed %d bytes differ from the %d written", len(got), len(want))
			}
		})
	}
}

// TestSegmentedGzipReusesSegments: the same list again is made of kept
// segments only, byte for byte the same answer; after one item changed,
// one added and one removed, only the segments around them are
// compressed again.
func TestSegmentedGzipReusesSegments(t *testing.T) {
	c := newSegmentCache(segmentCacheBytes)
	pieces := listItems(t, 0, 2000)
	first := writeSegmented(t, c, pieces)
	_, made := c.counts()
	if made < 20 {
		t.Fatalf("a list of %d KiB made %d segments; want it cut in many", len(bytes.Join(pieces, nil))>>10, made)
	}
	again := writeSegmented(t, c, pieces)
	hits, made2 := c.counts()
	if made2 != made || hits != made {
		t.Fatalf("the same list again: %d segments made, %d reused; want 0 made, %d reused", made2-made, hits, made)
	}
	if !bytes.Equal(first, again) {
		t.Fatal("the same list again was compressed differently")
	}

	changed := append([][]byte(nil), pieces...)
	changed[1001] = bytes.Replace(changed[1001], []byte("fill-500"), []byte("fill-50X"), 1) // item 500 changed
	changed = append(changed[:3000], append(listItems(t, 9000, 1), changed[3000:]...)...)   // one added
	changed = append(changed[:200], changed[202:]...)                                       // one removed
	writeSegmented(t, c, changed)
	hits3, made3 := c.counts()
	if remade := made3 - made2; remade > 6 {
		t.Fatalf("three items changed: %d of %d segments compressed again; want those around them only", remade, remade+hits3-hits)
	}
	if got, want := unzipOne(t, writeSegmented(t, c, changed)), bytes.Join(changed, nil); !bytes.Equal(got, want) {
		t.Fatal("the changed list decompresses to other bytes")
	}
}

// TestSegmentedGzipKept: items written kept arrive whole among ordinary
// writes (one longer than a segment takes too); a list of kept items asked
// for again is made of kept segments found by the items' ids alone, not
// their bytes; the same bytes under other ids are compressed anew.
func TestSegmentedGzipKept(t *testing.T) {
	pieces := listItems(t, 0, 2000)
	big := bytes.Repeat([]byte("0123456789abcdef"), segmentMax/8) // two segments' worth
	mixed := append(append([][]byte(nil), pieces[:1001]...), big)
	mixed = append(mixed, pieces[1001:]...)
	mixedIDs := append(append(itemIDs(pieces[:1001], 1), 7_000_000), itemIDs(pieces[1001:], 1000)...)
	got := unzipOne(t, writeSegmentedWith(t, newSegmentedGzip(nil, newSegmentCache(segmentCacheBytes)), mixed, mixedIDs))
	if want := bytes.Join(mixed, nil); !bytes.Equal(got, want) {
		t.Fatalf("kept and ordinary writes decompress to %d bytes, not the %d written", len(got), len(want))
	}

	c := newSegmentCache(segmentCacheBytes)
	z := newSegmentedGzip(nil, c)
	ids := itemIDs(pieces, 1)
	first := append([]byte(nil), writeSegmentedWith(t, z, pieces, ids)...)
	_, made := c.counts()
	if made < 20 {
		t.Fatalf("a kept list of %d KiB made %d segments; want it cut in many", len(bytes.Join(pieces, nil))>>10, made)
	}
	// The same ids over other bytes of the same lengths: the runs are
	// found by id and sent as kept, so the answer is the first one's.
	other := make([][]byte, len(pieces))
	for i, p := range pieces {
		other[i] = p
		if ids[i] != 0 {
			other[i] = bytes.Repeat([]byte{'#'}, len(p))
		}
	}
	again := writeSegmentedWith(t, z, other, ids)
	hits, made2 := c.counts()
	if made2 != made || hits != made {
		t.Fatalf("the same ids again: %d segments made, %d reused; want 0 made, %d reused", made2-made, hits, made)
	}
	if !bytes.Equal(first, again) {
		t.Fatal("the same ids again were not answered with the kept segments")
	}
	// The same bytes under new ids share no segment with them (the ids
	// cut the runs elsewhere too, so their number differs).
	writeSegmentedWith(t, z, pieces, itemIDs(pieces, 1_000_000))
	if hits3, made3 := c.counts(); hits3 != hits || made3-made2 < 20 {
		t.Fatalf("new ids over the same bytes: %d segments reused, %d made; want none reused, all made", hits3-hits, made3-made2)
	}
}

// TestSegmentedGzipSize: cutting a list into segments costs little of
// one stream's compression.
func TestSegmentedGzipSize(t *testing.T) {
	pieces := listItems(t, 0, 2000)
	var one bytes.Buffer
	zw, _ := kgzip.NewWriterLevel(&one, gzipLevel)
	zw.Write(bytes.Join(pieces, nil))
	zw.Close()
	seg := writeSegmented(t, newSegmentCache(segmentCacheBytes), pieces)
	if float64(len(seg)) > 1.2*float64(one.Len()) {
		t.Fatalf("segmented %d bytes, one stream %d: more than a fifth larger", len(seg), one.Len())
	}
	t.Logf("segmented %d bytes, one stream %d, of %d", len(seg), one.Len(), len(bytes.Join(pieces, nil)))
}

// BenchmarkSegmentedGzip: a 10,000-item Protobuf list compressed as one
// stream (klauspost's gzip), in segments all new, and in kept segments.
func BenchmarkSegmentedGzip(b *testing.B) {
	pieces := listItems(b, 0, 10_000)
	var size int64
	for _, p := range pieces {
		size += int64(len(p))
	}
	b.Run("stream", func(b *testing.B) {
		b.SetBytes(size)
		zw, _ := kgzip.NewWriterLevel(io.Discard, gzipLevel)
		for b.Loop() {
			zw.Reset(io.Discard)
			for _, p := range pieces {
				zw.Write(p)
			}
			zw.Close()
		}
	})
	// The items written kept, as the server's lists write their cached
	// encodings, or copied and hashed.
	for _, kept := range []bool{false, true} {
		var ids []uint64
		if kept {
			ids = itemIDs(pieces, 1)
		}
		b.Run(fmt.Sprintf("cold/kept=%v", kept), func(b *testing.B) {
			b.SetBytes(size)
			z := newSegmentedGzip(nil, newSegmentCache(segmentCacheBytes))
			for b.Loop() {
				z.cache = newSegmentCache(segmentCacheBytes)
				writeSegmentedWith(b, z, pieces, ids)
			}
		})
		b.Run(fmt.Sprintf("warm/kept=%v", kept), func(b *testing.B) {
			b.SetBytes(size)
			z := newSegmentedGzip(nil, newSegmentCache(segmentCacheBytes))
			writeSegmentedWith(b, z, pieces, ids)
			for b.Loop() {
				writeSegmentedWith(b, z, pieces, ids)
			}
		})
	}
}
