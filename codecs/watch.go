package codecs

import (
	"bytes"
	"encoding/binary"
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
)

// A WatchWriter frames watch events in the negotiated form:
// newline-separated JSON {"type":…,"object":…}, or length-prefixed
// Protobuf WatchEvents. A Table view sends its column definitions with
// the first event only, as kube-apiserver does.
type WatchWriter struct {
	codec         *Codec
	out           Output
	t             *schema.Type
	includeObject string
	w             interface{ Write([]byte) (int, error) }

	sentColumns bool
	buf         bytes.Buffer
}

// NewWatchWriter returns a writer of t's events onto w.
func (c *Codec) NewWatchWriter(w interface{ Write([]byte) (int, error) }, out Output, t *schema.Type, includeObject string) *WatchWriter {
	return &WatchWriter{codec: c, out: out, t: t, includeObject: includeObject, w: w}
}

// ContentType is the stream's Content-Type.
func (e *WatchWriter) ContentType() string {
	if e.out.MediaType == Protobuf {
		return Protobuf + ";stream=watch"
	}
	return e.out.ContentType()
}

// WantsJSON says the object view is sent as JSON, so events can be
// written from stored bytes with EventJSON.
func (e *WatchWriter) WantsJSON() bool { return e.out.View == ViewObject && e.out.MediaType == JSON }

// Event writes one event of a decoded object.
func (e *WatchWriter) Event(typ string, obj runtime.Object) error {
	body, err := ObjectView(e.out, e.t, obj, e.includeObject)
	if err != nil {
		return err
	}
	if tbl, ok := body.(*metav1.Table); ok {
		// Column definitions travel only with the first event, and a
		// Table event carries no list metadata.
		tbl.ResourceVersion = ""
		if e.sentColumns {
			tbl.ColumnDefinitions = nil
		}
		e.sentColumns = true
	}
	return e.emit(typ, body)
}

// EventJSON writes one event whose object is wire JSON already.
func (e *WatchWriter) EventJSON(typ string, obj []byte) error {
	e.buf.Reset()
	e.buf.WriteString(`{"type":"` + typ + `","object":`)
	e.buf.Write(obj)
	e.buf.WriteString("}\n")
	_, err := e.w.Write(e.buf.Bytes())
	return err
}

// Bookmark writes a BOOKMARK event: an empty object of the watched kind
// carrying only the revision (and the end-of-initial-events marker).
func (e *WatchWriter) Bookmark(rv string, initialEnd bool) error {
	obj := e.t.New()
	obj.GetObjectKind().SetGroupVersionKind(e.t.GroupVersionKind())
	if acc, ok := obj.(metav1.Object); ok {
		acc.SetResourceVersion(rv)
		if initialEnd {
			acc.SetAnnotations(map[string]string{metav1.InitialEventsAnnotationKey: "true"})
		}
	}
	return e.emit("BOOKMARK", obj)
}

// Error writes an ERROR event carrying st.
func (e *WatchWriter) Error(st *metav1.Status) error { return e.emit("ERROR", st) }

func (e *WatchWriter) emit(typ string, body runtime.Object) error {
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
