package codecs_test

import (
	"bytes"
	"io"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
)

// The streaming list writer produces the serializer's exact bytes.
func TestProtobufListWriterMatchesSerializer(t *testing.T) {
	cm := func(name string) corev1.ConfigMap {
		return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7"}, Data: map[string]string{"k": name}}
	}
	for _, items := range [][]corev1.ConfigMap{nil, {cm("a")}, {cm("a"), cm("b"), cm("c")}} {
		lm := metav1.ListMeta{ResourceVersion: "42", Continue: "tok"}
		list := &corev1.ConfigMapList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}, ListMeta: lm, Items: items}
		want, err := codecs.New(schema.NewScheme(), codecs.Options{}).ProtobufBytes(list)
		if err != nil {
			t.Fatal(err)
		}
		lw := listWriterOf(t, items)
		var got bytes.Buffer
		if err := lw.WriteTo(&got, "v1", "ConfigMapList", &lm); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("%d items: streamed\n%x\nwant\n%x", len(items), got.Bytes(), want)
		}
	}
}

// One object written from its own encoding matches the serializer too.
func TestWriteProtobufObjectMatchesSerializer(t *testing.T) {
	for _, cm := range []*corev1.ConfigMap{
		{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}},
		{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"},
			Data: map[string]string{"k": string(bytes.Repeat([]byte("v"), 300))}},
	} {
		want, err := codecs.New(schema.NewScheme(), codecs.Options{}).ProtobufBytes(cm)
		if err != nil {
			t.Fatal(err)
		}
		raw, err := cm.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := codecs.WriteProtobufObject(&got, "v1", "ConfigMap", raw); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("written\n%x\nwant\n%x", got.Bytes(), want)
		}
	}
}

// Metadata lists written from their items' encodings match the
// serializer's bytes in both versions, whose fields are numbered the
// other way round (v1: metadata 1, items 2; v1beta1: items 1, metadata 2).
func TestMetadataListWriterMatchesSerializer(t *testing.T) {
	meta := func(name string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: "7", Labels: map[string]string{"k": name}}}
	}
	c := codecs.New(schema.NewScheme(), codecs.Options{})
	for _, items := range [][]metav1.PartialObjectMetadata{nil, {meta("a")}, {meta("a"), meta("b"), meta("c")}} {
		lm := metav1.ListMeta{ResourceVersion: "42", Continue: "tok"}
		lw := listWriterOf(t, items)
		for _, version := range []string{"v1", "v1beta1"} {
			var list runtime.Object = &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "PartialObjectMetadataList"}, ListMeta: lm, Items: items}
			var got bytes.Buffer
			var err error
			if version == "v1beta1" {
				list = &metav1beta1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1beta1", Kind: "PartialObjectMetadataList"}, ListMeta: lm, Items: items}
				err = lw.WriteMetadataListV1beta1To(&got, &lm)
			} else {
				err = lw.WriteTo(&got, "meta.k8s.io/v1", "PartialObjectMetadataList", &lm)
			}
			if err != nil {
				t.Fatal(err)
			}
			want, err := c.ProtobufBytes(list)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("%s, %d items: streamed\n%x\nwant\n%x", version, len(items), got.Bytes(), want)
			}
		}
	}
}

// listWriterOf is a list writer given each item's own encoding.
func listWriterOf[T any, PT interface {
	*T
	Marshal() ([]byte, error)
}](t *testing.T, items []T) *codecs.ProtobufListWriter {
	t.Helper()
	var lw codecs.ProtobufListWriter
	for i := range items {
		b, err := PT(&items[i]).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		lw.AddEncoded(b)
	}
	return &lw
}

// keptRecorder is a codecs.KeptWriter that records its kept writes.
type keptRecorder struct {
	bytes.Buffer
	kept []uint64
	same []bool // whether each kept write passed the item's own slice
	want map[uint64][]byte
}

func (k *keptRecorder) WriteKept(p []byte, id uint64) (int, error) {
	k.kept = append(k.kept, id)
	w := k.want[id]
	k.same = append(k.same, len(p) > 0 && len(p) == len(w) && &p[0] == &w[0])
	return k.Write(p)
}

// The list writers hand a KeptWriter each item that has an id by
// reference, the others as ordinary writes, and write the same bytes as
// to a plain writer.
func TestListWritersPassKeptItems(t *testing.T) {
	items := [][]byte{[]byte(`{"a":1}`), []byte(`{"b":2}`), []byte(`{"c":3}`)}
	ids := []uint64{11, 0, 13}
	want := map[uint64][]byte{11: items[0], 13: items[2]}
	lm := metav1.ListMeta{ResourceVersion: "42"}
	check := func(name string, write func(w io.Writer, kept bool) error) {
		t.Helper()
		var plain bytes.Buffer
		if err := write(&plain, false); err != nil {
			t.Fatal(err)
		}
		rec := &keptRecorder{want: want}
		if err := write(rec, true); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(rec.Bytes(), plain.Bytes()) {
			t.Fatalf("%s: written kept\n%q\nwant\n%q", name, rec.Bytes(), plain.Bytes())
		}
		if !slices.Equal(rec.kept, []uint64{11, 13}) || !slices.Equal(rec.same, []bool{true, true}) {
			t.Fatalf("%s: kept writes %v (own slices %v); want ids [11 13], each the item's own slice", name, rec.kept, rec.same)
		}
	}
	check("protobuf", func(w io.Writer, kept bool) error {
		var lw codecs.ProtobufListWriter
		for i, b := range items {
			if kept {
				lw.AddKept(b, ids[i])
			} else {
				lw.AddEncoded(b)
			}
		}
		return lw.WriteTo(w, "v1", "ConfigMapList", &lm)
	})
	typ := &schema.Type{Kind: "ConfigMap", ListKind: "ConfigMapList", Version: "v1"}
	check("json", func(w io.Writer, kept bool) error {
		return codecs.WriteJSONList(w, typ, &lm, len(items), func(i int) ([]byte, uint64, error) {
			if !kept {
				return items[i], 0, nil
			}
			return items[i], ids[i], nil
		})
	})
}
