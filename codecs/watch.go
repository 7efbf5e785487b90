package codecs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"io"

	"google.golang.org/protobuf/encoding/protowire"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
)

// A WatchWriter frames watch events in the negotiated form:
// newline-separated JSON {"type":…,"object":…}, length-prefixed
// Protobuf WatchEvents, or a CBOR sequence of WatchEvents. A Table view
// sends its column definitions with the first event only, as
// kube-apiserver does.
type WatchWriter struct {
	codec         *Codec
	out           Output
	t             *schema.Type
	includeObject string
	w             interface{ Write([]byte) (int, error) }

	sentColumns bool
	// typeMeta is `"kind":…,"apiVersion":…,` of the watched kind, made
	// once per stream rather than once per event.
	typeMeta string
}

// NewWatchWriter returns a writer of t's events onto w.
func (c *Codec) NewWatchWriter(w interface{ Write([]byte) (int, error) }, out Output, t *schema.Type, includeObject string) *WatchWriter {
	return &WatchWriter{codec: c, out: out, t: t, includeObject: includeObject, w: w}
}

// ContentType is the stream's Content-Type.
func (e *WatchWriter) ContentType() string {
	switch e.out.MediaType {
	case Protobuf:
		return Protobuf + ";stream=watch"
	case CBOR:
		// kube-apiserver answers a watch that accepts application/cbor
		// with a sequence of them.
		return CBORSequence
	}
	return e.out.ContentType()
}

// WantsJSON says the object view is sent as JSON, so events can be
// written from stored bytes with EventStored or EventJSON.
func (e *WatchWriter) WantsJSON() bool { return e.out.View == ViewObject && e.out.MediaType == JSON }

// WantsProtobuf says the object view is sent as Protobuf, so events can
// be written from an object's encoding with EventProtobuf.
func (e *WatchWriter) WantsProtobuf() bool {
	return e.out.View == ViewObject && e.out.MediaType == Protobuf
}

// WantsCBOR says the object view is sent as CBOR, so events can be
// written from an object's encoding with EventCBOR.
func (e *WatchWriter) WantsCBOR() bool { return e.out.View == ViewObject && e.out.MediaType == CBOR }

// Event writes one event of a decoded object.
func (e *WatchWriter) Event(typ string, obj runtime.Object) error {
	body, err := ObjectView(e.out, e.t, obj, e.includeObject)
	if err != nil {
		return err
	}
	if tbl, ok := body.(*metav1.Table); ok {
		// Column definitions travel only with the first event; every
		// event's Table carries its object's resourceVersion, as
		// kube-apiserver 1.35 sends them.
		if e.sentColumns {
			tbl.ColumnDefinitions = nil
		}
		e.sentColumns = true
	}
	return e.emit(typ, body)
}

// EventJSON writes one event whose object is wire JSON already. The
// object's bytes are written as they are, never copied: many watchers
// may be sending the same ones.
func (e *WatchWriter) EventJSON(typ string, obj []byte) error {
	if _, err := io.WriteString(e.w, `{"type":"`+typ+`","object":`); err != nil {
		return err
	}
	if _, err := e.w.Write(obj); err != nil {
		return err
	}
	_, err := io.WriteString(e.w, "}\n")
	return err
}

// EventStored writes one event of an object from its stored JSON (no
// kind and apiVersion), adding the served ones in front as WithTypeMeta
// does, without copying the stored bytes.
func (e *WatchWriter) EventStored(typ string, stored []byte) error {
	rest := stored
	if len(stored) > 1 && stored[0] == '{' {
		rest = bytes.TrimLeft(stored[1:], " \t\r\n")
	}
	if len(rest) < 2 || rest[0] == '}' || &rest[0] == &stored[0] {
		// Empty or not an object: the rare case is left to WithTypeMeta.
		return e.EventJSON(typ, WithTypeMeta(stored, e.t.APIVersion(), e.t.Kind))
	}
	if e.typeMeta == "" {
		e.typeMeta = `"kind":` + quote(e.t.Kind) + `,"apiVersion":` + quote(e.t.APIVersion()) + `,`
	}
	head := `{"type":"` + typ + `","object":{` + e.typeMeta
	if _, err := io.WriteString(e.w, head); err != nil {
		return err
	}
	if _, err := e.w.Write(rest); err != nil {
		return err
	}
	_, err := io.WriteString(e.w, "}\n")
	return err
}

// EventProtobuf writes one event of an object from its Protobuf encoding
// (a ProtoMarshaler's output), framed byte for byte as the apimachinery
// watch encoder frames it, without copying raw: a length-prefixed
// WatchEvent{type, RawExtension{raw: the object in its envelope}}.
func (e *WatchWriter) EventProtobuf(typ string, raw []byte) error {
	envHead := envelopeHead(e.t.APIVersion(), e.t.Kind, len(raw))
	envTail := envelopeTail()
	envLen := len(envHead) + len(raw) + len(envTail)
	extLen := protowire.SizeTag(1) + protowire.SizeBytes(envLen)
	eventLen := protowire.SizeTag(1) + protowire.SizeBytes(len(typ)) + protowire.SizeTag(2) + protowire.SizeBytes(extLen)
	head := binary.BigEndian.AppendUint32(make([]byte, 0, 32+len(envHead)), uint32(eventLen))
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendString(head, typ)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(extLen))
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendVarint(head, uint64(envLen))
	head = append(head, envHead...)
	if _, err := e.w.Write(head); err != nil {
		return err
	}
	if _, err := e.w.Write(raw); err != nil {
		return err
	}
	_, err := e.w.Write(envTail)
	return err
}

// EventCBOR writes one event of an object from its CBOR encoding (with
// its self-described tag), without copying it: a WatchEvent map whose
// object is the encoding itself, as kube's encoder embeds it. Strings
// are CBOR byte strings, as kube's CBOR writes every Go string.
func (e *WatchWriter) EventCBOR(typ string, obj []byte) error {
	head := make([]byte, 0, 24+len(typ))
	head = append(head, selfDescribedCBOR...)
	head = append(head, 0xa2) // a map of two entries
	head = appendCBORBytes(head, "type")
	head = appendCBORBytes(head, typ)
	head = appendCBORBytes(head, "object")
	if _, err := e.w.Write(head); err != nil {
		return err
	}
	_, err := e.w.Write(obj)
	return err
}

// selfDescribedCBOR is the head of tag 55799, which kube's CBOR encoder
// puts before everything it writes.
var selfDescribedCBOR = []byte{0xd9, 0xd9, 0xf7}

// appendCBORBytes appends s as a CBOR byte string (major type 2).
func appendCBORBytes(b []byte, s string) []byte {
	return append(appendCBORHead(b, 0x40, uint64(len(s))), s...)
}

// Bookmark writes a BOOKMARK event: an empty object of the watched kind
// carrying only the revision (and the end-of-initial-events marker), in
// the stream's view — a PartialObjectMetadata, or a Table of one row, as
// kube-apiserver transforms its bookmarks (a metadata informer cannot
// decode the watched kind itself).
func (e *WatchWriter) Bookmark(rv string, initialEnd bool) error {
	obj := e.t.New()
	obj.GetObjectKind().SetGroupVersionKind(e.t.GroupVersionKind())
	if acc, ok := obj.(metav1.Object); ok {
		acc.SetResourceVersion(rv)
		if initialEnd {
			acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	if e.out.View != ViewObject {
		return e.Event("BOOKMARK", obj)
	}
	return e.emit("BOOKMARK", obj)
}

// Error writes an ERROR event carrying st.
func (e *WatchWriter) Error(st *metav1.Status) error { return e.emit("ERROR", st) }

func (e *WatchWriter) emit(typ string, body runtime.Object) error {
	if e.out.MediaType == CBOR {
		raw, err := e.codec.CBORBytes(body)
		if err != nil {
			return err
		}
		return e.EventCBOR(typ, raw)
	}
	if e.out.MediaType != Protobuf {
		j, err := json.Marshal(body)
		if err != nil {
			return err
		}
		return e.EventJSON(typ, j)
	}
	raw, err := e.codec.ProtobufBytes(body)
	if err != nil {
		return err
	}
	frame, err := e.codec.ProtobufRaw(&metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}})
	if err != nil {
		return err
	}
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(frame)))
	if _, err := e.w.Write(n[:]); err != nil {
		return err
	}
	_, err = e.w.Write(frame)
	return err
}
