package codecs

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/runtime/serializer/cbor"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/tabula-dev/tabula/schema"
)

// Codec encodes and decodes the built-in kinds of one scheme.
type Codec struct {
	scheme  *runtime.Scheme
	factory serializer.CodecFactory
	proto   *protobuf.Serializer
	raw     *protobuf.RawSerializer
	// cbor is kube's CBOR serializer (nil when CBOR is off).
	cbor cbor.Serializer
}

// Options choose what a Codec serves besides JSON, YAML and Protobuf.
type Options struct {
	// CBOR serves application/cbor as kube-apiserver does with its
	// CBORServingAndStorage gate on.
	CBOR bool
}

// New returns a Codec for the kinds in scheme.
func New(scheme *runtime.Scheme, o Options) *Codec {
	mutators := []serializer.CodecFactoryOptionsMutator{serializer.EnableStrict}
	c := &Codec{
		scheme: scheme,
		proto:  protobuf.NewSerializer(scheme, scheme),
		raw:    protobuf.NewRawSerializer(scheme, scheme),
	}
	if o.CBOR {
		mutators = append(mutators, serializer.WithSerializer(cbor.NewSerializerInfo))
		c.cbor = cbor.NewSerializer(scheme, scheme)
	}
	c.factory = serializer.NewCodecFactory(scheme, mutators...)
	return c
}

// CBOR says whether the Codec serves CBOR.
func (c *Codec) CBOR() bool { return c.cbor != nil }

// Serializer is the scheme's codecs as k8s.io/apiserver's response
// writers take them (for the errors of kube's filters used as they are).
func (c *Codec) Serializer() runtime.NegotiatedSerializer {
	return c.factory.WithoutConversion()
}

// DecodeError is a body the server cannot turn into an object: a 400.
type DecodeError struct {
	Message string
	// Cause is the decoder's own words, without the kind around them:
	// what kube's patch handler quotes when a patched object does not
	// decode (empty: Message).
	Cause string
}

func (e *DecodeError) Error() string { return e.Message }

// Decode reads a request body of mediaType (JSON, YAML or Protobuf) as an
// object of type t. Unknown and duplicate fields do not fail the decode:
// they come back as strict (kube-apiserver's wording, one per problem) for
// the caller to apply its fieldValidation directive; unknown fields are
// dropped from the object.
func (c *Codec) Decode(t *schema.Type, mediaType string, body []byte) (obj runtime.Object, strict []string, err error) {
	if t.Unstructured && mediaType == CBOR {
		obj, strict, err = c.decodeUnstructuredCBOR(t, body)
	} else if t.Unstructured {
		obj, strict, err = decodeUnstructured(t, mediaType, body)
	} else {
		obj, strict, err = c.decodeTyped(t, mediaType, body)
	}
	if err != nil || t.Coerce == nil {
		return obj, strict, err
	}
	unknown, err := t.Coerce(obj)
	if err != nil {
		return nil, nil, &DecodeError{Message: fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", t.Kind, t.Version, t.Kind, err), Cause: err.Error()}
	}
	for _, u := range unknown {
		strict = append(strict, fmt.Sprintf("unknown field %q", u))
	}
	return obj, strict, nil
}

// decodeUnstructured reads a JSON or YAML body as an object of a Type
// that has no Go type; duplicate fields are reported as strict problems.
func decodeUnstructured(t *schema.Type, mediaType string, body []byte) (runtime.Object, []string, error) {
	js := body
	switch mediaType {
	case JSON:
	case YAML:
		var err error
		if js, err = yaml.YAMLToJSON(body); err != nil {
			return nil, nil, &DecodeError{Message: fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", t.Kind, err, truncate(body))}
		}
	default:
		return nil, nil, &DecodeError{Message: "unsupported media type " + mediaType}
	}
	var m map[string]interface{}
	strictErrs, err := sigsjson.UnmarshalStrict(js, &m, sigsjson.DisallowDuplicateFields)
	if err != nil || m == nil {
		if err == nil {
			err = errors.New("Object 'Kind' is missing")
		}
		return nil, nil, &DecodeError{Message: fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", t.Kind, err, truncate(body))}
	}
	var strict []string
	if mediaType == YAML {
		// YAML's own duplicate keys vanish in the conversion to JSON;
		// kube's strict YAML decoder reports them (YAMLToJSONStrict).
		if _, err := yaml.YAMLToJSONStrict(body); err != nil {
			strict = append(strict, err.Error())
		}
	}
	for _, e := range strictErrs {
		strict = append(strict, e.Error())
	}
	u := &unstructured.Unstructured{Object: m}
	gvk := u.GroupVersionKind()
	if gvk.Kind == "" {
		return nil, nil, &DecodeError{Message: fmt.Sprintf("Object 'Kind' is missing in '%s'", truncate(body))}
	}
	if err := checkUnstructuredKind(t, u); err != nil {
		return nil, nil, err
	}
	return u, strict, nil
}

// checkUnstructuredKind refuses a body of another group-version as kube's
// decoder does, and one of another kind in the right group-version as its
// custom resource validation does (ValidateTypeMeta: 422 on field kind,
// named by the body's own kind, which kube's typer reports).
func checkUnstructuredKind(t *schema.Type, u *unstructured.Unstructured) error {
	gvk := u.GroupVersionKind()
	switch {
	case gvk.GroupVersion() != t.GroupVersion():
		return &DecodeError{Message: fmt.Sprintf("%s in version %q cannot be handled as a %s: the API version in the data (%s) does not match the expected API version (%s)",
			gvk.Kind, gvk.Version, t.Kind, u.GetAPIVersion(), t.APIVersion())}
	case gvk.Kind != t.Kind:
		return apierrors.NewInvalid(gvk.GroupKind(), u.GetName(), field.ErrorList{field.Invalid(field.NewPath("kind"), gvk.Kind, "must be "+t.Kind)})
	}
	return nil
}

// decodeUnstructuredCBOR reads a CBOR body as an object of a Type that
// has no Go type, with kube's CBOR decoder (which refuses duplicate keys
// outright: CBOR forbids them).
func (c *Codec) decodeUnstructuredCBOR(t *schema.Type, body []byte) (runtime.Object, []string, error) {
	if c.cbor == nil {
		return nil, nil, &DecodeError{Message: "unsupported media type " + CBOR}
	}
	u := &unstructured.Unstructured{}
	gvk := t.GroupVersionKind()
	_, actual, err := c.cbor.Decode(body, &gvk, u)
	if err != nil {
		if actual == nil || actual.Kind == "" {
			return nil, nil, &DecodeError{Message: fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", t.Kind, err, truncate(body))}
		}
		return nil, nil, &DecodeError{Message: fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, t.Kind, err)}
	}
	if err := checkUnstructuredKind(t, u); err != nil {
		return nil, nil, err
	}
	return u, nil, nil
}

// decodeTyped decodes into the Type's Go type through the scheme.
func (c *Codec) decodeTyped(t *schema.Type, mediaType string, body []byte) (obj runtime.Object, strict []string, err error) {
	info, ok := runtime.SerializerInfoForMediaType(c.factory.SupportedMediaTypes(), mediaType)
	if !ok {
		return nil, nil, &DecodeError{Message: "unsupported media type " + mediaType}
	}
	dec := info.Serializer
	if info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	into := t.New()
	gvk := t.GroupVersionKind()
	if mediaType == Protobuf && decodeProtobufInto(body, gvk, into) {
		into.GetObjectKind().SetGroupVersionKind(gvk)
		return into, nil, nil
	}
	got, actual, err := dec.Decode(body, &gvk, into)
	if err != nil && runtime.IsStrictDecodingError(err) {
		if se, ok := runtime.AsStrictDecodingError(err); ok {
			for _, e := range se.Errors() {
				strict = append(strict, e.Error())
			}
		}
		err = nil
	}
	if err != nil {
		if actual == nil || actual.Kind == "" || isParseError(err) {
			return nil, nil, &DecodeError{Message: fmt.Sprintf("the object provided is unrecognized (must be of type %s): %v (%s)", t.Kind, err, truncate(body)), Cause: err.Error()}
		}
		return nil, nil, &DecodeError{Message: fmt.Sprintf("%s in version %q cannot be handled as a %s: %v", actual.Kind, actual.Version, t.Kind, err), Cause: err.Error()}
	}
	if actual != nil && (actual.Kind != t.Kind || actual.GroupVersion() != t.GroupVersion()) {
		cause := fmt.Sprintf("converting (%s.%s) to (%s.%s): unknown conversion", actual.Version, actual.Kind, internalPackage(t.Group), t.Kind)
		return nil, nil, &DecodeError{Message: fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", actual.Kind, actual.Version, t.Kind, cause), Cause: cause}
	}
	if got != into {
		return nil, nil, &DecodeError{Message: fmt.Sprintf("the object provided is unrecognized (must be of type %s)", t.Kind)}
	}
	into.GetObjectKind().SetGroupVersionKind(t.GroupVersionKind())
	return into, strict, nil
}

// internalPackage names kube's internal API package of a group, as its
// conversion errors do: "core" for the legacy group, else the group's
// first label ("apps", "rbac", "networking").
func internalPackage(group string) string {
	if group == "" {
		return "core"
	}
	pkg, _, _ := strings.Cut(group, ".")
	return pkg
}

// StrictMessage is the 400 message for a Strict field validation failure.
func StrictMessage(t *schema.Type, strict []string) string {
	msg := "strict decoding error: "
	for i, s := range strict {
		if i > 0 {
			msg += ", "
		}
		msg += s
	}
	return fmt.Sprintf("%s in version %q cannot be handled as a %s: %s", t.Kind, t.Version, t.Kind, msg)
}

func isParseError(err error) bool {
	var se *json.SyntaxError
	return errors.As(err, &se) || bytes.Contains([]byte(err.Error()), []byte("couldn't get version/kind"))
}

// truncate summarises a body in a decoding error as kube-apiserver does:
// a JSON object as text, anything else (YAML, CBOR, Protobuf) in hex.
func truncate(b []byte) string {
	const max = 30
	switch {
	case len(b) == 0:
		return "<empty>"
	case b[0] == '{':
		if len(b) > max {
			return string(b[:max]) + " ..."
		}
		return string(b)
	case len(b) > max:
		return hex.EncodeToString(b[:max]) + " ..."
	}
	return hex.EncodeToString(b)
}

// StorageBytes is the stored form of obj: compact JSON without kind and
// apiVersion (the storage resource implies them, and list items are
// written without them, as kube-apiserver writes typed lists).
func StorageBytes(obj runtime.Object) ([]byte, error) {
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m := make(map[string]interface{}, len(u.Object))
		for k, v := range u.Object {
			if k != "apiVersion" && k != "kind" {
				m[k] = v
			}
		}
		return json.Marshal(m)
	}
	ok := obj.GetObjectKind()
	gvk := ok.GroupVersionKind()
	ok.SetGroupVersionKind(runtimeschema.GroupVersionKind{})
	defer ok.SetGroupVersionKind(gvk)
	return json.Marshal(obj)
}

// FromStorage decodes stored bytes into a new object of t's storage Go
// type (for events.k8s.io that is core/v1 Event), with TypeMeta set.
func FromStorage(newObj func() runtime.Object, gvk runtimeschema.GroupVersionKind, data []byte) (runtime.Object, error) {
	obj := newObj()
	if u, ok := obj.(*unstructured.Unstructured); ok {
		// Unstructured's own decoder wants kind and apiVersion, which
		// stored bytes do not carry.
		u.Object = nil
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, &u.Object); err != nil {
			return nil, fmt.Errorf("codecs: decode stored object: %w", err)
		}
		if u.GetAPIVersion() != "" {
			// The version it was stored in (WithStoredVersion), which
			// the Type's FromStorage converts from.
			u.SetKind(gvk.Kind)
			return u, nil
		}
		u.SetGroupVersionKind(gvk)
		return u, nil
	}
	if err := sigsjson.UnmarshalCaseSensitivePreserveInts(data, obj); err != nil {
		return nil, fmt.Errorf("codecs: decode stored object: %w", err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// WithStoredVersion adds apiVersion to stored object bytes, for a kind
// whose objects remember the version they were stored in (custom
// resources); such bytes are always decoded, never served as they are.
func WithStoredVersion(stored []byte, apiVersion string) []byte {
	if len(stored) < 2 || stored[0] != '{' {
		return stored
	}
	head := `{"apiVersion":` + quote(apiVersion)
	rest := bytes.TrimLeft(stored[1:], " \t\r\n")
	out := make([]byte, 0, len(head)+1+len(rest))
	out = append(out, head...)
	if len(rest) > 0 && rest[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...)
}

// WithTypeMeta prefixes stored object bytes with kind and apiVersion, the
// way a single object is written on the wire.
func WithTypeMeta(stored []byte, apiVersion, kind string) []byte {
	head, rest := TypeMetaParts(stored, apiVersion, kind)
	if rest == nil {
		return head
	}
	out := make([]byte, 0, len(head)+len(rest))
	return append(append(out, head...), rest...)
}

// TypeMetaParts is WithTypeMeta's answer in two parts, head then rest,
// with rest the stored bytes themselves (nil when head is the whole
// answer): an answer written part by part copies none of the object.
func TypeMetaParts(stored []byte, apiVersion, kind string) (head, rest []byte) {
	h := `{"kind":` + quote(kind) + `,"apiVersion":` + quote(apiVersion)
	if len(stored) < 2 || stored[0] != '{' {
		return []byte(h + "}"), nil
	}
	trimmed := bytes.TrimSpace(stored[1:])
	if len(trimmed) == 1 && trimmed[0] == '}' {
		return []byte(h + "}"), nil
	}
	return []byte(h + ","), stored[1:]
}

// quote is s as a JSON string. API versions and kinds are plain names,
// written as they are; anything else goes through the encoder.
func quote(s string) string {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			b, _ := json.Marshal(s)
			return string(b)
		}
	}
	return `"` + s + `"`
}

// Encode writes obj (TypeMeta set) in mediaType.
func (c *Codec) Encode(w io.Writer, mediaType string, obj runtime.Object, pretty bool) error {
	switch mediaType {
	case Protobuf:
		return c.proto.Encode(obj, w)
	case CBOR:
		return c.EncodeCBOR(w, obj)
	case YAML:
		j, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	default:
		j, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		return WriteJSON(w, j, pretty)
	}
}

// EncodeCBOR writes obj in kube's CBOR, self-described tag first. Map
// keys are left in no particular order, as kube-apiserver writes its
// responses (sorting them costs time no client needs).
func (c *Codec) EncodeCBOR(w io.Writer, obj runtime.Object) error {
	if c.cbor == nil {
		return errors.New("codecs: CBOR is not served") // negotiation never picks it then
	}
	return c.cbor.EncodeNondeterministic(obj, w)
}

// CBORBytes is obj in CBOR (see EncodeCBOR).
func (c *Codec) CBORBytes(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	err := c.EncodeCBOR(&buf, obj)
	return buf.Bytes(), err
}

// WriteJSON writes a JSON document as kube-apiserver does: compact with a
// trailing newline, or indented without one.
func WriteJSON(w io.Writer, j []byte, pretty bool) error {
	if pretty {
		var buf bytes.Buffer
		if err := json.Indent(&buf, j, "", "  "); err != nil {
			return err
		}
		_, err := w.Write(buf.Bytes())
		return err
	}
	if _, err := w.Write(j); err != nil {
		return err
	}
	_, err := w.Write([]byte{'\n'})
	return err
}

// EncodeRawJSON writes already-serialized JSON in mediaType, converting it
// for YAML; Protobuf needs a typed object and goes through Encode.
func EncodeRawJSON(w io.Writer, mediaType string, j []byte, pretty bool) error {
	if mediaType == YAML {
		y, err := yaml.JSONToYAML(j)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	}
	return WriteJSON(w, j, pretty)
}

// SetList puts items into a typed list object.
func SetList(list runtime.Object, items []runtime.Object) error { return meta.SetList(list, items) }

// ProtobufRaw encodes obj's fields without the "k8s\x00" envelope, as the
// frames of a Protobuf watch stream are written.
func (c *Codec) ProtobufRaw(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	err := c.raw.Encode(obj, &buf)
	return buf.Bytes(), err
}

// ProtobufBytes encodes obj with the envelope.
func (c *Codec) ProtobufBytes(obj runtime.Object) ([]byte, error) {
	var buf bytes.Buffer
	err := c.proto.Encode(obj, &buf)
	return buf.Bytes(), err
}

// DecodeInto decodes a small request body (DeleteOptions and the like) of
// mediaType into obj, which must be registered in the scheme.
func (c *Codec) DecodeInto(mediaType string, body []byte, obj runtime.Object) error {
	info, ok := runtime.SerializerInfoForMediaType(c.factory.SupportedMediaTypes(), mediaType)
	if !ok {
		return &DecodeError{Message: "unsupported media type " + mediaType}
	}
	_, _, err := info.Serializer.Decode(body, nil, obj)
	if err != nil {
		return &DecodeError{Message: err.Error()}
	}
	return nil
}

// EncodeJSON writes v as JSON, compact or indented.
func EncodeJSON(w io.Writer, v any, pretty bool) error {
	j, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return WriteJSON(w, j, pretty)
}

// The decoders of DeleteOptions bodies: meta.k8s.io's own scheme, as
// kube-apiserver's delete handlers use it (not strict; CBOR beside).
var deleteOptionsCodecs = serializer.NewCodecFactory(metainternalversionscheme.Scheme, serializer.WithSerializer(cbor.NewSerializerInfo))

// DeleteOptionsCodecs are the codecs DELETE bodies are read with (and
// recorded in the audit log with).
func DeleteOptionsCodecs() runtime.NegotiatedSerializer { return deleteOptionsCodecs }

// DecodeDeleteOptions decodes a DELETE's body into opts: meta.k8s.io/v1
// DeleteOptions unless the body names another group's (accepted, as kube
// accepts them for old clients); a body of any other kind is an error.
// The group-version is the body's, which kube's audit records it in.
func DecodeDeleteOptions(mediaType string, body []byte, opts *metav1.DeleteOptions) (runtimeschema.GroupVersion, error) {
	info, ok := runtime.SerializerInfoForMediaType(deleteOptionsCodecs.SupportedMediaTypes(), mediaType)
	if !ok {
		return runtimeschema.GroupVersion{}, &DecodeError{Message: "unsupported media type " + mediaType}
	}
	defaultGVK := metav1.SchemeGroupVersion.WithKind("DeleteOptions")
	obj, gvk, err := deleteOptionsCodecs.DecoderToVersion(info.Serializer, metav1.SchemeGroupVersion).Decode(body, &defaultGVK, opts)
	if err != nil {
		return runtimeschema.GroupVersion{}, &DecodeError{Message: err.Error()}
	}
	if obj != opts {
		return runtimeschema.GroupVersion{}, &DecodeError{Message: "decoded object cannot be converted to DeleteOptions"}
	}
	return gvk.GroupVersion(), nil
}
