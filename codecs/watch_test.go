package codecs_test

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"

	"github.com/tabula-dev/tabula/codecs"
)

// Events written from shared bytes (the stored JSON, an object's
// Protobuf encoding) frame them exactly as events written from the
// decoded object do, for small and multi-byte-length objects.
func TestWatchEventsFromSharedBytesMatchDecoded(t *testing.T) {
	c, ct := fuzzCodec(t)
	for _, size := range []int{0, 100, 70_000} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", ResourceVersion: "7"}}
		if size > 0 {
			cm.Data = map[string]string{"k": string(bytes.Repeat([]byte("v"), size))}
		}
		// The stored form: no kind or apiVersion.
		stored, err := json.Marshal(cm)
		if err != nil {
			t.Fatal(err)
		}
		typed := cm.DeepCopy()
		typed.APIVersion, typed.Kind = "v1", "ConfigMap"
		for _, typ := range []string{"ADDED", "MODIFIED", "DELETED"} {
			var want, got bytes.Buffer
			out := codecs.Output{MediaType: codecs.JSON, View: codecs.ViewObject}
			if err := c.NewWatchWriter(&want, out, ct, "").Event(typ, typed); err != nil {
				t.Fatal(err)
			}
			if err := c.NewWatchWriter(&got, out, ct, "").EventStored(typ, stored); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("JSON %s of %d bytes from stored bytes:\n%.300s\nwant\n%.300s", typ, size, got.Bytes(), want.Bytes())
			}

			want.Reset()
			got.Reset()
			out = codecs.Output{MediaType: codecs.Protobuf, View: codecs.ViewObject}
			if err := c.NewWatchWriter(&want, out, ct, "").Event(typ, typed); err != nil {
				t.Fatal(err)
			}
			raw, err := cm.Marshal()
			if err != nil {
				t.Fatal(err)
			}
			if err := c.NewWatchWriter(&got, out, ct, "").EventProtobuf(typ, raw); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("Protobuf %s of %d bytes from its encoding:\n%x\nwant\n%x", typ, size, got.Bytes()[:min(got.Len(), 80)], want.Bytes()[:min(want.Len(), 80)])
			}
		}
	}
	// Stored bytes that are not a JSON object with members fall back to
	// the general path.
	for _, stored := range []string{`{}`, `{ }`, ``} {
		var got bytes.Buffer
		if err := c.NewWatchWriter(&got, codecs.Output{MediaType: codecs.JSON, View: codecs.ViewObject}, ct, "").EventStored("ADDED", []byte(stored)); err != nil {
			t.Fatal(err)
		}
		want := `{"type":"ADDED","object":` + string(codecs.WithTypeMeta([]byte(stored), "v1", "ConfigMap")) + "}\n"
		if got.String() != want {
			t.Fatalf("stored %q: %q; want %q", stored, got.String(), want)
		}
	}
}

// A CBOR watch event framed around an object's shared encoding is, byte
// for byte, what kube's CBOR encoder writes for the same WatchEvent in its
// deterministic mode, and kube's decoder gets the object back.
func TestWatchEventCBORMatchesKubeEncoder(t *testing.T) {
	c, ct := fuzzCodec(t)
	kube := cbor.NewSerializer(nil, nil)
	for _, size := range []int{0, 30, 300, 70_000} {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "7"}}
		if size > 0 {
			cm.Data = map[string]string{"k": string(bytes.Repeat([]byte("v"), size))}
		}
		obj, err := c.CBORBytes(cm)
		if err != nil {
			t.Fatal(err)
		}
		for _, typ := range []string{"ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"} {
			var got, want bytes.Buffer
			if err := c.NewWatchWriter(&got, codecs.Output{MediaType: codecs.CBOR}, ct, "").EventCBOR(typ, obj); err != nil {
				t.Fatal(err)
			}
			if err := kube.Encode(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: obj}}, &want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Fatalf("%s of %d bytes:\n%x\nwant\n%x", typ, size, got.Bytes()[:min(got.Len(), 80)], want.Bytes()[:min(want.Len(), 80)])
			}
			var ev metav1.WatchEvent
			if err := cbordirect.Unmarshal(got.Bytes(), &ev); err != nil || ev.Type != typ || !bytes.Equal(ev.Object.Raw, obj) {
				t.Fatalf("%s: decoded %q (%d bytes), %v", typ, ev.Type, len(ev.Object.Raw), err)
			}
		}
	}
}
