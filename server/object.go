package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// request is one resource request on its way through a verb handler.
type request struct {
	s *Server
	// ctx is the request's context (a background one for controllers).
	ctx context.Context
	c   echo.Context
	ri  requestInfo
	t   *schema.Type
	// res is the registry for t.
	res  *registry.Resource
	verb string
	// negotiated remembers the object [0] and list [1] negotiations.
	negotiated [2]negotiation
}

func (r *request) key(name string) kv.Key { return r.res.Key(r.ri.Namespace, name) }

// storageType is the Type whose Go type the stored bytes decode into.
func (r *request) storageType() *schema.Type { return r.res.StorageType() }

// decodeStored turns stored bytes into an object of the served Type.
func (r *request) decodeStored(rec kv.Record) (runtime.Object, error) { return r.res.Decode(rec) }

// objectJSON is the wire JSON (kind and apiVersion included) of a record.
// An object stored in another version is converted once per revision and
// served type; the bytes are shared and must not be modified.
func (r *request) objectJSON(rec kv.Record) ([]byte, error) {
	if r.t.FromStorage == nil {
		return codecs.WithTypeMeta(rec.Value, r.t.APIVersion(), r.t.Kind), nil
	}
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, formJSON}, func() ([]byte, error) {
		obj, err := r.decodeStored(rec)
		if err != nil {
			return nil, err
		}
		b, err := codecs.StorageBytes(obj)
		if err != nil {
			return nil, err
		}
		return codecs.WithTypeMeta(b, r.t.APIVersion(), r.t.Kind), nil
	})
}

// cborObject is the wire CBOR of a record, made once per revision and
// served type like objectJSON's conversions: every watcher that asks for
// CBOR is sent the same bytes, which must not be modified.
func (r *request) cborObject(rec kv.Record) ([]byte, error) {
	return r.s.encoded.get(encodedKey{rec.Rev, r.t, formCBOR}, func() ([]byte, error) {
		obj, err := r.decodeStored(rec)
		if err != nil {
			return nil, err
		}
		return r.s.codec.CBORBytes(obj)
	})
}

// itemJSON is a record as a list item: no kind and apiVersion, except
// for unstructured kinds, whose items carry them.
func (r *request) itemJSON(rec kv.Record) ([]byte, error) {
	if r.t.Unstructured {
		return r.objectJSON(rec)
	}
	if r.t.FromStorage == nil {
		return rec.Value, nil
	}
	obj, err := r.decodeStored(rec)
	if err != nil {
		return nil, err
	}
	return codecs.StorageBytes(obj)
}

// negotiate picks the answer's representation or fails with 406.
func (r *request) negotiate(list bool) (codecs.Output, error) {
	// Negotiated once per request (for a list answer and for an object
	// answer); the handlers ask before reading and again when writing.
	n := &r.negotiated[0]
	if list {
		n = &r.negotiated[1]
	}
	if !n.done {
		n.out, n.err = r.negotiateOnce(list)
		n.done = true
	}
	return n.out, n.err
}

// negotiation is one remembered negotiate answer.
type negotiation struct {
	done bool
	out  codecs.Output
	err  error
}

func (r *request) negotiateOnce(list bool) (codecs.Output, error) {
	offer := codecs.Offer{Protobuf: r.t.New != nil && !r.t.Unstructured, CBOR: r.s.codec.CBOR(), List: list, Views: true, NoTable: r.t.NoTable, Kind: r.internalKind(list),
		Watch: r.verb == "watch", ListRoute: r.verb == "list", Routed: !r.t.Unstructured}
	if k := r.t.SubresourceKind(r.ri.Subresource); k != r.t {
		// A subresource of its own kind has a Table or metadata view only
		// where kube prints it (Scale).
		offer.Views, offer.Kind = k.Columns != nil, "*"+k.Group+"."+k.Kind
	}
	return negotiateAccept(r.c.Request().Header.Get("Accept"), offer)
}

// negotiateAccept is codecs.NegotiateWhy with its refusal as kube's 406:
// the router's or the negotiation's.
func negotiateAccept(accept string, offer codecs.Offer) (codecs.Output, error) {
	out, why := codecs.NegotiateWhy(accept, offer)
	switch {
	case why == "":
		return out, nil
	case strings.HasPrefix(why, "406:"):
		return out, notAcceptable(strings.TrimPrefix(why, "406: Not Acceptable\n\nAvailable representations: "))
	}
	return out, &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable, Message: why,
	}}
}

// internalKind names the Go type the way kube-apiserver's messages do:
// its internal package ("core" for the legacy group) and kind.
func (r *request) internalKind(list bool) string {
	pkg := "core"
	if g := r.storageType().Group; g != "" {
		pkg, _, _ = strings.Cut(g, ".")
	}
	kind := r.storageType().Kind
	if list {
		kind = r.storageType().ListKind
	}
	return "*" + pkg + "." + kind
}

func notAcceptable(available string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: "406: Not Acceptable\n\nAvailable representations: " + available,
		Details: &metav1.StatusDetails{},
	}}
}

// writeRecord answers with one stored object.
func (r *request) writeRecord(code int, rec kv.Record) error {
	return r.writeStored(code, rec, nil)
}

// writeStored answers with one stored object. written, when set, is the
// object the request just stored as rec, of a type stored as served: its
// Protobuf form is encoded from it instead of decoding rec again.
func (r *request) writeStored(code int, rec kv.Record, written runtime.Object) error {
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	if r.s.auditAt(r.c, auditinternal.LevelRequestResponse) {
		obj := written
		if obj == nil {
			if obj, err = r.decodeStored(rec); err != nil {
				return err
			}
		}
		view, err := codecs.ObjectView(out, r.t, obj, r.c.QueryParam("includeObject"))
		if err != nil {
			return err
		}
		r.auditView(view)
	}
	if out.View == codecs.ViewObject && out.MediaType == codecs.JSON && r.t.FromStorage == nil && !wantsPretty(r.c) {
		// The stored object is the answer: written after its kind and
		// apiVersion, not copied behind them.
		head, rest := codecs.TypeMetaParts(rec.Value, r.t.APIVersion(), r.t.Kind)
		return r.writeWhole(code, out.ContentType(), head, rest, newline)
	}
	if out.View == codecs.ViewObject && (out.MediaType == codecs.JSON || out.MediaType == codecs.YAML) {
		j, err := r.objectJSON(rec)
		if err != nil {
			return err
		}
		if out.MediaType == codecs.JSON && !wantsPretty(r.c) {
			return r.writeWhole(code, out.ContentType(), j, newline)
		}
		var buf bytes.Buffer
		if err := codecs.EncodeRawJSON(&buf, out.MediaType, j, wantsPretty(r.c)); err != nil {
			return err
		}
		return r.writeWhole(code, out.ContentType(), buf.Bytes())
	}
	if out.View == codecs.ViewObject && out.MediaType == codecs.CBOR {
		b, err := r.cborObject(rec)
		if err != nil {
			return err
		}
		return r.writeWhole(code, out.ContentType(), b)
	}
	if out.View == codecs.ViewObject && out.MediaType == codecs.Protobuf {
		var raw []byte
		if pm, ok := written.(codecs.ProtoMarshaler); ok && r.t.ToStorage == nil {
			// The written object is the stored one: its encoding is
			// kept, so the watchers sent this revision next and the
			// reads soon after do not decode and encode it again.
			if raw, err = pm.Marshal(); err == nil {
				r.s.encoded.keep(encodedKey{rec.Rev, r.t, formProtobuf}, raw)
			}
		} else {
			raw, err = r.protobufItem(rec)
		}
		if err != nil {
			return err
		}
		return r.writeProtobufObject(code, out, raw)
	}
	obj, err := r.decodeStored(rec)
	if err != nil {
		return err
	}
	return r.writeObject(code, out, obj)
}

// writeProtobufObject answers with raw, an object's Protobuf encoding
// (protobufItem's), in its Unknown envelope.
func (r *request) writeProtobufObject(code int, out codecs.Output, raw []byte) error {
	gvk := r.t.GroupVersionKind()
	head, tail := codecs.ProtobufObject(gvk.GroupVersion().String(), gvk.Kind, raw)
	return r.writeWhole(code, out.ContentType(), head, raw, tail)
}

// keptForm is the encoded cache's form that is the whole answer in out
// (an object in Protobuf or CBOR), when the answer may be sent from it
// without the object: not when the audit policy records the response.
func (r *request) keptForm(out codecs.Output) (encodedForm, bool) {
	if out.View != codecs.ViewObject || r.s.auditAt(r.c, auditinternal.LevelRequestResponse) {
		return 0, false
	}
	switch out.MediaType {
	case codecs.Protobuf:
		return formProtobuf, true
	case codecs.CBOR:
		return formCBOR, true
	}
	return 0, false
}

// writeKept answers with b, the kept encoding of form keptForm gave.
func (r *request) writeKept(code int, out codecs.Output, form encodedForm, b []byte) error {
	if form == formProtobuf {
		return r.writeProtobufObject(code, out, b)
	}
	return r.writeWhole(code, out.ContentType(), b)
}

// writeObject answers with a decoded object in the negotiated form.
func (r *request) writeObject(code int, out codecs.Output, obj runtime.Object) error {
	body, err := codecs.ObjectView(out, r.t, obj, r.c.QueryParam("includeObject"))
	if err != nil {
		return err
	}
	r.auditView(body)
	return r.writeBody(code, out, body)
}

// writeBody encodes body in out's media type; it is encoded in full
// before the status line, so an encoding error still becomes a Status.
func (r *request) writeBody(code int, out codecs.Output, body runtime.Object) error {
	var buf bytes.Buffer
	if err := r.s.codec.Encode(&buf, out.MediaType, body, wantsPretty(r.c)); err != nil {
		return err
	}
	return r.writeWhole(code, out.ContentType(), buf.Bytes())
}

// newline ends a compact JSON answer, as kube-apiserver's encoder does.
var newline = []byte{'\n'}

// writeWhole answers code with a body of the parts, written in turn, its
// length declared: compressLarge then lets a small answer through as it
// is written instead of holding a copy of it, and the parts are never
// joined into one slice.
func (r *request) writeWhole(code int, contentType string, parts ...[]byte) error {
	n := 0
	for _, p := range parts {
		n += len(p)
	}
	resp := r.c.Response()
	resp.Header().Set(echo.HeaderContentType, contentType)
	resp.Header().Set(echo.HeaderContentLength, strconv.Itoa(n))
	resp.WriteHeader(code)
	for _, p := range parts {
		if _, err := resp.Write(p); err != nil {
			return err
		}
	}
	return nil
}

// readBody reads the request body up to the size limit (413 past it).
func (r *request) readBody() ([]byte, error) {
	limit := r.s.cfg.MaxBodyBytes
	if cl := r.c.Request().ContentLength; cl > limit {
		return nil, tooLarge(limit)
	}
	// Sized by the declared length (one allocation, where io.ReadAll's
	// doubling made a 10 KiB body ~30 KiB of garbage), up to
	// bodyPresizeMax: a client that declares a large body and then
	// stalls does not get that much memory held for it.
	size := bodyPresizeMin
	if cl := r.c.Request().ContentLength; cl > 0 {
		size = int(min(cl, bodyPresizeMax)) + 1 // room for the EOF read
	}
	b, err := readAll(make([]byte, 0, size), io.LimitReader(r.c.Request().Body, limit+1))
	if err != nil {
		return nil, apierrors.NewBadRequest("unable to read the request body: " + err.Error())
	}
	if int64(len(b)) > limit {
		return nil, tooLarge(limit)
	}
	return b, nil
}

// bodyPresizeMin is io.ReadAll's first buffer; bodyPresizeMax bounds the
// buffer a declared length makes before the bytes arrive.
const (
	bodyPresizeMin = 512
	bodyPresizeMax = 1 << 20
)

// readAll is io.ReadAll into b's spare capacity, growing it as needed.
func readAll(b []byte, rd io.Reader) ([]byte, error) {
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err == io.EOF {
			return b, nil
		}
		if err != nil {
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)]
		}
	}
}

func tooLarge(limit int64) error {
	return apierrors.NewRequestEntityTooLargeError("limit is " + strconv.FormatInt(limit, 10))
}

// notFound is the 404 for a missing object of this request's resource.
func (r *request) notFound(name string) error { return r.res.NotFound(name) }
