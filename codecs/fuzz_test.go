package codecs_test

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberuntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
)

// The fuzzers below feed (*codecs.Codec).Decode and codecs.Negotiate with
// arbitrary input. Decode may refuse a body, but only with a *DecodeError
// (the server turns anything else into a 500), and it must never panic.
//
// Seeds come from the request bodies recorded against a real kube-apiserver
// in the repository's testdata/reference (see RECORDING.md there) plus a few hand-made edge
// cases; run one with e.g.
//
//	GOFLAGS=-mod=mod go test ./codecs -run '^$' -fuzz '^FuzzDecodeJSON$' -fuzztime 20s

// fuzzReferenceDir is the repository's testdata/reference seen from the package directory.
const fuzzReferenceDir = "../testdata/reference"

func fuzzCodec(tb testing.TB) (*codecs.Codec, *schema.Type) {
	tb.Helper()
	reg := schema.NewBuiltin()
	t, ok := reg.Lookup("", "v1", "configmaps")
	if !ok {
		tb.Fatal("configmaps not registered")
	}
	return codecs.New(reg.Scheme, codecs.Options{CBOR: true}), t
}

// referenceBodies returns the request bodies of recorded cases whose
// Content-Type has the given prefix, as they were sent (JSON objects
// re-marshalled, text bodies verbatim). Large elided bodies are skipped.
func referenceBodies(tb testing.TB, contentTypePrefix string) [][]byte {
	tb.Helper()
	var out [][]byte
	for _, dir := range []string{"errors", "crud", "writes", "representations"} {
		files, _ := filepath.Glob(filepath.Join(fuzzReferenceDir, dir, "*.json"))
		if len(files) == 0 {
			tb.Fatalf("no recorded cases in %s/%s", fuzzReferenceDir, dir)
		}
		for _, f := range files {
			raw, err := os.ReadFile(f)
			if err != nil {
				continue
			}
			var c struct {
				Request struct {
					Headers map[string]string `json:"headers"`
					Body    json.RawMessage   `json:"body"`
				} `json:"request"`
			}
			if json.Unmarshal(raw, &c) != nil || len(c.Request.Body) == 0 || string(c.Request.Body) == "null" {
				continue
			}
			if !strings.HasPrefix(c.Request.Headers["Content-Type"], contentTypePrefix) {
				continue
			}
			if bytes.Contains(c.Request.Body, []byte(`"$elided_large_body"`)) {
				continue
			}
			if c.Request.Body[0] == '"' {
				var s string
				if json.Unmarshal(c.Request.Body, &s) == nil {
					out = append(out, []byte(s))
				}
				continue
			}
			var buf bytes.Buffer
			if json.Compact(&buf, c.Request.Body) == nil {
				out = append(out, buf.Bytes())
			}
		}
	}
	return out
}

// checkDecoded asserts what a successful or failed Decode must look like.
func checkDecoded(t *testing.T, c *codecs.Codec, ct *schema.Type, mediaType string, obj interface{}, err error) {
	t.Helper()
	if err != nil {
		var de *codecs.DecodeError
		if !errors.As(err, &de) {
			t.Fatalf("Decode failed with %T (%v); only *codecs.DecodeError is a 400", err, err)
		}
		if obj != nil && !isNilObject(obj) {
			t.Fatalf("Decode returned an object (%T) together with an error", obj)
		}
		return
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok {
		t.Fatalf("Decode succeeded with %T, want *v1.ConfigMap", obj)
	}
	if gvk := cm.GroupVersionKind(); gvk != ct.GroupVersionKind() {
		t.Fatalf("decoded object has GVK %v, want %v", gvk, ct.GroupVersionKind())
	}
	// What was decoded must survive JSON round trips through the codec:
	// the server stores and serves that form. From JSON or YAML the first
	// trip must give the same object back. From Protobuf the first trip
	// may normalise what JSON cannot express (invalid UTF-8 in strings, a
	// present but empty fieldsV1), but from there on the form must be
	// stable.
	json1 := encodeJSON(t, c, cm)
	again := decodeJSON(t, c, ct, json1)
	json2 := encodeJSON(t, c, again)
	if mediaType != codecs.Protobuf && mediaType != codecs.CBOR {
		if !apiequality.Semantic.DeepEqual(cm, again) {
			t.Fatalf("JSON round trip changed the object:\nbefore %#v\nafter  %#v", cm, again)
		}
		return
	}
	third := encodeJSON(t, c, decodeJSON(t, c, ct, json2))
	var second, last interface{}
	_ = json.Unmarshal(json2, &second)
	_ = json.Unmarshal(third, &last)
	if !reflect.DeepEqual(second, last) {
		t.Fatalf("JSON round trip is not stable:\nbefore %s\nafter  %s", json2, third)
	}
}

func encodeJSON(t *testing.T, c *codecs.Codec, obj *corev1.ConfigMap) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := c.Encode(&buf, codecs.JSON, obj, false); err != nil {
		t.Fatalf("decoded object does not encode: %v", err)
	}
	return buf.Bytes()
}

func decodeJSON(t *testing.T, c *codecs.Codec, ct *schema.Type, b []byte) *corev1.ConfigMap {
	t.Helper()
	obj, _, err := c.Decode(ct, codecs.JSON, b)
	if err != nil {
		t.Fatalf("re-decoding the encoded object failed: %v\n%s", err, b)
	}
	return obj.(*corev1.ConfigMap)
}

func isNilObject(obj interface{}) bool {
	if obj == nil {
		return true
	}
	cm, ok := obj.(*corev1.ConfigMap)
	return ok && cm == nil
}

func FuzzDecodeJSON(f *testing.F) {
	for _, b := range referenceBodies(f, "application/json") {
		f.Add(b)
	}
	for _, s := range []string{
		``, `null`, `{}`, `[]`, `"x"`, `{"kind":"ConfigMap"}`, `{"apiVersion":"v1"}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"first"},"data":{"k":"second"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","labelz":{"a":"b"}},"spec":{"x":1}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","creationTimestamp":"2020-01-02T03:04:05Z"},"binaryData":{"b":"aGVsbG8="},"immutable":true}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","managedFields":[{"manager":"m","operation":"Update","fieldsType":"FieldsV1","fieldsV1":{"f:data":{}}}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"o","uid":"u"}]}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","deletionGracePeriodSeconds":1e400}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"\ud800"}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","generation":-9223372036854775808}}`,
		`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","creationTimestamp":"not a time"}}`,
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}`,
		`{"apiVersion":"v1","kind":"Status","status":"Failure"}`,
		`{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"ConfigMap"}]}`,
	} {
		f.Add([]byte(s))
	}
	c, ct := fuzzCodec(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, _, err := c.Decode(ct, codecs.JSON, body)
		checkDecoded(t, c, ct, codecs.JSON, obj, err)
	})
}

func FuzzDecodeYAML(f *testing.F) {
	for _, b := range referenceBodies(f, "application/yaml") {
		f.Add(b)
	}
	for _, b := range referenceBodies(f, "application/json") {
		f.Add(b) // JSON is YAML too
	}
	for _, s := range []string{
		"", "---\n", "- a\n- b\n", "apiVersion: v1\nkind: ConfigMap\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: first\ndata:\n  k: second\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: &l {a: b}\n  annotations: *l\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: !!binary aGVsbG8=}\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  yes: no\n  1: 2\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Secret\n",
		"apiVersion: v1\nkind: [unclosed\n",
		"a: &a [*a, *a]\n",
		"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  creationTimestamp: 2020-01-02\n",
		"name: x",
	} {
		f.Add([]byte(s))
	}
	c, ct := fuzzCodec(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, _, err := c.Decode(ct, codecs.YAML, body)
		checkDecoded(t, c, ct, codecs.YAML, obj, err)
	})
}

func FuzzDecodeProtobuf(f *testing.F) {
	c, ct := fuzzCodec(f)
	// The recorded protobuf answer of a real kube-apiserver (a ConfigMap).
	raw, err := os.ReadFile(filepath.Join(fuzzReferenceDir, "representations", "protobuf-get-configmap.json"))
	if err != nil {
		f.Fatal(err)
	}
	var rc struct {
		Response struct {
			Body struct {
				B64 string `json:"$base64"`
			} `json:"body"`
		} `json:"response"`
	}
	if err := json.Unmarshal(raw, &rc); err != nil {
		f.Fatal(err)
	}
	recorded, err := base64.StdEncoding.DecodeString(rc.Response.Body.B64)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(recorded)
	// Protobuf encodings of a few ConfigMaps and of other kinds.
	for _, cm := range []*corev1.ConfigMap{
		{},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", GenerateName: "b-", Finalizers: []string{"f"}}, BinaryData: map[string][]byte{"b": {0, 1, 2}}, Immutable: new(bool)},
	} {
		cm.SetGroupVersionKind(ct.GroupVersionKind())
		b, err := c.ProtobufBytes(cm)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: corev1.SecretTypeOpaque}
	sec.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Secret"))
	if b, err := c.ProtobufBytes(sec); err == nil {
		f.Add(b)
	}
	for _, s := range []string{"", "k8s", "k8s\x00", "k8s\x00\x0a\x00", "k8s\x00\x12\x03abc", "\x0a\x02v1"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, _, err := c.Decode(ct, codecs.Protobuf, body)
		checkDecoded(t, c, ct, codecs.Protobuf, obj, err)
	})
}

// hostileCBOR are inputs meant to make a CBOR decoder fail badly: very
// deep nesting, lengths far beyond the data, indefinite lengths never
// closed, duplicate keys, wrong tags and invalid UTF-8 in text strings.
func hostileCBOR() [][]byte {
	deep := append([]byte{0xd9, 0xd9, 0xf7}, bytes.Repeat([]byte{0x81}, 100000)...)
	deepMaps := append([]byte{0xd9, 0xd9, 0xf7}, bytes.Repeat([]byte{0xa1, 0x41, 'k'}, 50000)...)
	return [][]byte{
		deep, deepMaps,
		{0xd9, 0xd9, 0xf7, 0x5b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}, // byte string of 2^63-1 bytes
		{0xd9, 0xd9, 0xf7, 0x9b, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}, // array of 2^32 items
		{0xd9, 0xd9, 0xf7, 0xbb, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00}, // map of 2^32 pairs
		{0xd9, 0xd9, 0xf7, 0xbf, 0x44, 'k', 'i', 'n', 'd'},                       // indefinite map, never closed
		{0xd9, 0xd9, 0xf7, 0xa2, 0x44, 'k', 'i', 'n', 'd', 0x41, 'a', 0x44, 'k', 'i', 'n', 'd', 0x41, 'b'},
		{0xc1, 0xa0},                         // an epoch-time tag around a map
		{0xd9, 0xd9, 0xf7, 0xd9, 0xd9, 0xf7}, // a tag around nothing
		{0xd9, 0xd9, 0xf7, 0xa1, 0x64, 'k', 'i', 'n', 0xff, 0x41, 'a'}, // text string with invalid UTF-8
		{0xd9, 0xd9, 0xf7, 0xa1, 0xf9, 0x7e, 0x00, 0x41, 'a'},          // a NaN as a key
		{0xd9, 0xd9, 0xf7, 0xa1, 0xa0, 0x41, 'a'},                      // a map as a key
	}
}

func FuzzDecodeCBOR(f *testing.F) {
	c, ct := fuzzCodec(f)
	// The CBOR bodies sent to a real kube-apiserver (testdata/reference/cbor).
	files, _ := filepath.Glob(filepath.Join(fuzzReferenceDir, "cbor", "*.json"))
	seeds := 0
	for _, file := range files {
		raw, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		var rc struct {
			Request struct {
				BodyHex *string `json:"body_hex"`
			} `json:"request"`
		}
		if json.Unmarshal(raw, &rc) != nil || rc.Request.BodyHex == nil {
			continue
		}
		if b, err := hex.DecodeString(*rc.Request.BodyHex); err == nil {
			f.Add(b)
			seeds++
		}
	}
	if seeds == 0 {
		f.Fatal("no CBOR request bodies recorded in testdata/reference/cbor")
	}
	for _, cm := range []*corev1.ConfigMap{
		{},
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": "v"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", GenerateName: "b-", Finalizers: []string{"f"}}, BinaryData: map[string][]byte{"b": {0, 1, 2}}, Immutable: new(bool)},
	} {
		cm.SetGroupVersionKind(ct.GroupVersionKind())
		b, err := c.CBORBytes(cm)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, b := range hostileCBOR() {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		obj, _, err := c.Decode(ct, codecs.CBOR, body)
		checkDecoded(t, c, ct, codecs.CBOR, obj, err)
	})
}

// TestHostileCBOR: every hostile input is a 400-kind DecodeError (never a
// panic or a different error), decoded without allocating anything near
// the lengths it declares.
func TestHostileCBOR(t *testing.T) {
	c, ct := fuzzCodec(t)
	for i, b := range hostileCBOR() {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		obj, _, err := c.Decode(ct, codecs.CBOR, b)
		runtime.ReadMemStats(&after)
		var de *codecs.DecodeError
		if err == nil || !errors.As(err, &de) || obj != nil {
			t.Errorf("input %d: got %v, %v; want a DecodeError and no object", i, obj, err)
		}
		if grew := after.TotalAlloc - before.TotalAlloc; grew > 64<<20 {
			t.Errorf("input %d (%d bytes) allocated %d MiB while failing", i, len(b), grew>>20)
		}
	}
}

func FuzzNegotiate(f *testing.F) {
	for _, s := range []string{
		"", "*/*", "application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
		"application/cbor", "text/html", "application/*",
		"application/vnd.kubernetes.protobuf, application/json",
		"application/vnd.kubernetes.protobuf;as=Table;v=v1;g=meta.k8s.io",
		"application/json;as=Table;v=v1;g=meta.k8s.io",
		"application/json;as=Table;v=v1beta1;g=meta.k8s.io",
		"application/json;as=Table;v=v2;g=meta.k8s.io",
		"application/json;as=Table",
		"application/json;as=Table;v=v1;g=meta.k8s.io, application/json",
		"application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadata;v=v1beta1;g=meta.k8s.io",
		"application/yaml;as=Table;v=v1;g=meta.k8s.io",
		"application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json",
		"application/json;q=0, application/yaml;q=0.5",
		"application/json;q=abc", "application/json;q=-1", "application/json;q=1e400", "application/json;q=NaN",
		"application/json;stream=watch", "application/json;pretty=1", "application/json;charset=utf-8",
		"application/json;;;", "application/json;as=", ",,,", ";", "application/json, ", "\x00",
	} {
		for b := 0; b < 8; b++ {
			f.Add(s, uint8(b))
		}
	}
	f.Fuzz(func(t *testing.T, accept string, flags uint8) {
		offer := codecs.Offer{Protobuf: flags&1 != 0, List: flags&2 != 0, Views: flags&4 != 0}
		out, ok := codecs.Negotiate(accept, offer)
		out2, ok2 := codecs.Negotiate(accept, offer)
		if out != out2 || ok != ok2 {
			t.Fatalf("Negotiate(%q) is not deterministic: %+v/%v then %+v/%v", accept, out, ok, out2, ok2)
		}
		if strings.TrimSpace(accept) == "" && (!ok || out.MediaType != codecs.JSON || out.View != codecs.ViewObject) {
			t.Fatalf("empty Accept must mean plain JSON, got %+v, %v", out, ok)
		}
		if !ok {
			if out != (codecs.Output{}) {
				t.Fatalf("refusal carries an output: %+v", out)
			}
			if offer.Available() == "" {
				t.Fatal("406 without available representations")
			}
			return
		}
		switch out.MediaType {
		case codecs.JSON, codecs.YAML, codecs.Protobuf:
		default:
			t.Fatalf("Negotiate(%q) chose media type %q", accept, out.MediaType)
		}
		if out.ContentType() == "" {
			t.Fatalf("empty Content-Type for %+v", out)
		}
		switch out.View {
		case codecs.ViewObject:
			if out.ViewVersion != "" {
				t.Fatalf("plain object view with a view version: %+v", out)
			}
			if out.MediaType == codecs.Protobuf && !offer.Protobuf {
				t.Fatalf("Negotiate(%q) chose Protobuf for an offer without it: %+v", accept, out)
			}
		case codecs.ViewTable, codecs.ViewPartialObjectMetadata, codecs.ViewPartialObjectMetadataList:
			if !offer.Views {
				t.Fatalf("Negotiate(%q) chose view %v where views are not offered", accept, out.View)
			}
			if out.ViewVersion != "v1" && out.ViewVersion != "v1beta1" {
				t.Fatalf("Negotiate(%q) chose view version %q", accept, out.ViewVersion)
			}
			if out.MediaType == codecs.YAML && offer.Watch {
				t.Fatalf("Negotiate(%q) chose a YAML view for a watch: %+v", accept, out)
			}
			if out.View == codecs.ViewPartialObjectMetadata && offer.List {
				t.Fatalf("Negotiate(%q): PartialObjectMetadata for a list", accept)
			}
			if out.View == codecs.ViewPartialObjectMetadataList && !offer.List {
				t.Fatalf("Negotiate(%q): PartialObjectMetadataList for a single object", accept)
			}
		default:
			t.Fatalf("Negotiate(%q) chose unknown view %v", accept, out.View)
		}
	})
}

// FuzzDecodeProtobufMatchesKube: a Protobuf body decodes to the object
// kube's serializer makes of it, and fails where that fails. Decode takes
// the common envelope apart itself (decodeProtobufInto) and leaves the
// rest to kube's serializer; this holds the two to one answer, for each
// of a few kinds, on their encodings and on envelopes bent every way the
// shortcut looks at (another kind or version, none, a content encoding,
// a field twice or unknown, cut short, trailing bytes).
func FuzzDecodeProtobufMatchesKube(f *testing.F) {
	reg := schema.NewBuiltin()
	c := codecs.New(reg.Scheme, codecs.Options{})
	type kind struct {
		group, version, resource string
		obj                      kuberuntime.Object
	}
	kinds := []kind{
		{"", "v1", "configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "default", Labels: map[string]string{"app": "x"}}, Data: map[string]string{"k": strings.Repeat("v", 300)}}},
		{"", "v1", "secrets", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"b": {0, 1, 2}}}},
		{"", "v1", "pods", &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}}}}},
		{"apps", "v1", "deployments", &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: appsv1.DeploymentSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"a": "b"}}}}},
	}
	types := make([]*schema.Type, len(kinds))
	for i, k := range kinds {
		t, ok := reg.Lookup(k.group, k.version, k.resource)
		if !ok {
			f.Fatalf("%s not registered", k.resource)
		}
		types[i] = t
		k.obj.GetObjectKind().SetGroupVersionKind(t.GroupVersionKind())
		b, err := c.ProtobufBytes(k.obj)
		if err != nil {
			f.Fatal(err)
		}
		for _, body := range protobufVariants(b) {
			for j := range kinds {
				f.Add(uint8(j), body)
			}
		}
	}
	info, ok := kuberuntime.SerializerInfoForMediaType(serializer.NewCodecFactory(reg.Scheme).SupportedMediaTypes(), codecs.Protobuf)
	if !ok {
		f.Fatal("no Protobuf serializer")
	}
	f.Fuzz(func(t *testing.T, which uint8, body []byte) {
		ty := types[int(which)%len(types)]
		into := ty.New()
		gvk := ty.GroupVersionKind()
		got, actual, kerr := info.Serializer.Decode(body, &gvk, into)
		kubeOK := kerr == nil && got == into && actual != nil && *actual == gvk
		obj, _, err := c.Decode(ty, codecs.Protobuf, body)
		switch {
		case kubeOK && err != nil:
			t.Fatalf("%s: kube's serializer decodes %q, Decode refuses it: %v", ty.Kind, body, err)
		case !kubeOK && err == nil:
			t.Fatalf("%s: kube's serializer refuses %q (%v), Decode takes it", ty.Kind, body, kerr)
		case kubeOK:
			into.GetObjectKind().SetGroupVersionKind(gvk)
			if !apiequality.Semantic.DeepEqual(obj, into) {
				t.Fatalf("%s: %q decodes to\n%#v\nkube's serializer makes\n%#v", ty.Kind, body, obj, into)
			}
		}
	})
}

// protobufVariants are body and the same envelope bent: without its
// TypeMeta, with another version or a content encoding, with a field
// twice or a field it does not have, cut short, with bytes after it.
func protobufVariants(body []byte) [][]byte {
	prefix, rest := body[:4], body[4:]
	field := func(num protowire.Number, v []byte) []byte {
		return protowire.AppendBytes(protowire.AppendTag(nil, num, protowire.BytesType), v)
	}
	var typeMeta, raw []byte
	for b := rest; len(b) > 0; {
		num, _, n := protowire.ConsumeTag(b)
		v, m := protowire.ConsumeBytes(b[n:])
		if n < 0 || m < 0 {
			break
		}
		switch num {
		case 1:
			typeMeta = v
		case 2:
			raw = v
		}
		b = b[n+m:]
	}
	env := func(parts ...[]byte) []byte {
		return append(append([]byte(nil), prefix...), bytes.Join(parts, nil)...)
	}
	otherVersion := bytes.Replace(typeMeta, []byte("v1"), []byte("v9"), 1)
	return [][]byte{
		body,
		env(field(2, raw)),
		env(field(1, otherVersion), field(2, raw)),
		env(field(1, typeMeta), field(2, raw), field(3, []byte("gzip"))),
		env(field(1, typeMeta), field(2, raw), field(2, raw[:len(raw)/2])),
		env(field(1, typeMeta), field(1, typeMeta), field(2, raw)),
		env(field(1, typeMeta), field(2, raw), field(5, []byte("x"))),
		env(field(1, append(append([]byte(nil), typeMeta...), field(3, []byte("x"))...)), field(2, raw)),
		body[:len(body)-3],
		append(append([]byte(nil), body...), 0x00),
		env(field(1, typeMeta), field(2, append(append([]byte(nil), raw...), 0xff))),
	}
}
