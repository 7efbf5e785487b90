package codecs

import (
	"io"

	"google.golang.org/protobuf/encoding/protowire"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// protobufPrefix starts every Kubernetes Protobuf body ("k8s\x00").
var protobufPrefix = []byte{0x6b, 0x38, 0x73, 0x00}

// ProtoMarshaler is a k8s.io/api type's generated Protobuf encoder.
type ProtoMarshaler interface {
	Marshal() ([]byte, error)
}

// ProtobufListWriter writes a typed list in the Kubernetes Protobuf
// envelope from items encoded one at a time, so a large list never exists
// as a slice of decoded objects: memory stays near the size of the
// encoded response. The bytes are identical to what the apimachinery
// serializer writes for the same list.
type ProtobufListWriter struct {
	items [][]byte
	ids   []uint64
	size  int
}

// AddEncoded appends one item's Protobuf encoding (a ProtoMarshaler's
// output); b is not modified and must not change until WriteTo returns.
func (l *ProtobufListWriter) AddEncoded(b []byte) {
	l.AddKept(b, 0)
}

// AddKept is AddEncoded for bytes that never change and that id names
// (see KeptWriter); id 0 names nothing.
func (l *ProtobufListWriter) AddKept(b []byte, id uint64) {
	l.items = append(l.items, b)
	l.ids = append(l.ids, id)
	l.size += protowire.SizeTag(2) + protowire.SizeBytes(len(b))
}

// KeptWriter is a writer that also takes bytes by reference: bytes that
// never change once written (an encoding a cache holds), named by an id
// that stands for those bytes among all the writer is given. The
// server's compressor keeps such bytes without copying them and knows
// them again by id.
type KeptWriter interface {
	io.Writer
	WriteKept(p []byte, id uint64) (int, error)
}

// writeItem writes b, by reference where w takes it and id names it.
func writeItem(w io.Writer, b []byte, id uint64) error {
	var err error
	if kw, ok := w.(KeptWriter); ok && id != 0 {
		_, err = kw.WriteKept(b, id)
	} else {
		_, err = w.Write(b)
	}
	return err
}

// WriteTo writes runtime.Unknown{TypeMeta, Raw: <list>, "", ""} after the
// envelope prefix; list is field 1 ListMeta and field 2 repeated items.
func (l *ProtobufListWriter) WriteTo(w io.Writer, apiVersion, kind string, lm *metav1.ListMeta) error {
	return l.writeTo(w, apiVersion, kind, lm, 1, 2)
}

// WriteMetadataListV1beta1To writes the items (PartialObjectMetadata) as
// a meta.k8s.io/v1beta1 PartialObjectMetadataList, whose fields are
// numbered the other way round: items 1, list metadata 2.
func (l *ProtobufListWriter) WriteMetadataListV1beta1To(w io.Writer, lm *metav1.ListMeta) error {
	return l.writeTo(w, "meta.k8s.io/v1beta1", "PartialObjectMetadataList", lm, 2, 1)
}

// writeTo writes the list with its ListMeta as field metaField and its
// items as field itemsField, in field order as the generated code does.
func (l *ProtobufListWriter) writeTo(w io.Writer, apiVersion, kind string, lm *metav1.ListMeta, metaField, itemsField protowire.Number) error {
	meta, err := lm.Marshal()
	if err != nil {
		return err
	}
	metaBytes := protowire.AppendBytes(protowire.AppendTag(nil, metaField, protowire.BytesType), meta)
	// Both field numbers take a one-byte tag: l.size holds either way.
	head := envelopeHead(apiVersion, kind, len(metaBytes)+l.size)
	if metaField < itemsField {
		head = append(head, metaBytes...)
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	var buf []byte
	for i, it := range l.items {
		buf = protowire.AppendTag(buf[:0], itemsField, protowire.BytesType)
		buf = protowire.AppendVarint(buf, uint64(len(it)))
		if _, err := w.Write(buf); err != nil {
			return err
		}
		if err := writeItem(w, it, l.ids[i]); err != nil {
			return err
		}
	}
	tail := envelopeTail()
	if metaField > itemsField {
		tail = append(metaBytes, tail...)
	}
	_, err = w.Write(tail)
	return err
}

// WriteProtobufObject writes one object in the Kubernetes Protobuf
// envelope from its own encoding (a ProtoMarshaler's output), byte for
// byte what the apimachinery serializer writes for the object.
func WriteProtobufObject(w io.Writer, apiVersion, kind string, raw []byte) error {
	head, tail := ProtobufObject(apiVersion, kind, raw)
	for _, b := range [][]byte{head, raw, tail} {
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// ProtobufObject is the envelope of one object around its own encoding
// raw: head, raw and tail are the object as WriteProtobufObject writes
// it, without a copy of raw.
func ProtobufObject(apiVersion, kind string, raw []byte) (head, tail []byte) {
	return envelopeHead(apiVersion, kind, len(raw)), envelopeTail()
}

// envelopeHead starts runtime.Unknown{TypeMeta, Raw} after the envelope
// prefix, up to the length of Raw; rawLen bytes of Raw follow it.
func envelopeHead(apiVersion, kind string, rawLen int) []byte {
	var typeMeta []byte
	typeMeta = protowire.AppendTag(typeMeta, 1, protowire.BytesType)
	typeMeta = protowire.AppendString(typeMeta, apiVersion)
	typeMeta = protowire.AppendTag(typeMeta, 2, protowire.BytesType)
	typeMeta = protowire.AppendString(typeMeta, kind)

	head := append([]byte(nil), protobufPrefix...)
	head = protowire.AppendTag(head, 1, protowire.BytesType)
	head = protowire.AppendBytes(head, typeMeta)
	head = protowire.AppendTag(head, 2, protowire.BytesType)
	return protowire.AppendVarint(head, uint64(rawLen))
}

// envelopeTail ends runtime.Unknown: contentEncoding and contentType,
// empty, as the serializer writes them.
func envelopeTail() []byte {
	tail := protowire.AppendTag(nil, 3, protowire.BytesType)
	tail = protowire.AppendString(tail, "")
	tail = protowire.AppendTag(tail, 4, protowire.BytesType)
	return protowire.AppendString(tail, "")
}
