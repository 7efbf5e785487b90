package server_test

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// cborCase is one recording of testdata/reference/cbor (record.py there).
type cborCase struct {
	Name    string `json:"name"`
	Request struct {
		Method  string            `json:"method"`
		Path    string            `json:"path"`
		Headers map[string]string `json:"headers"`
		BodyHex *string           `json:"body_hex"`
	} `json:"request"`
	Response struct {
		Status      int             `json:"status"`
		ContentType string          `json:"content_type"`
		Warnings    []string        `json:"warnings"`
		BodyHex     string          `json:"body_hex"`
		Body        json.RawMessage `json:"body"`
	} `json:"response"`
}

// TestCBORReference replays what a kube-apiserver 1.35.4 started with
// --feature-gates=CBORServingAndStorage=true answered to CBOR requests:
// objects, lists and metadata in CBOR, CBOR bodies (right and wrong) for
// create, apply, delete options and custom resources, and the 406/415
// answers that name application/cbor. Answers are compared as data items
// (kube writes CBOR maps in no fixed order, so two of its own answers differ
// byte for byte), after the server-made values (uid, resourceVersion, times)
// are blanked; every CBOR answer must carry the self-described tag.
func TestCBORReference(t *testing.T) {
	dir := filepath.Join(refDir, "cbor")
	h := refNewHarnessCBOR(t, true)
	crd, err := os.ReadFile(filepath.Join(dir, "widgets-crd.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The state record.py creates before its cases, as its User-Agent.
	ua := map[string]string{"User-Agent": "cbor-recorder/1.0", "Content-Type": "application/json"}
	for _, setup := range [][2]string{
		{"/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"ref-cbor"}}`},
		{"/api/v1/namespaces/ref-cbor/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"existing","labels":{"cbor":"ref"}},"data":{"k":"v"}}`},
		{"/apis/apiextensions.k8s.io/v1/customresourcedefinitions", string(crd)},
	} {
		if r := h.do("POST", setup[0], ua, []byte(setup[1])); r.Code != http.StatusCreated {
			t.Fatalf("setup %s: %d %s", setup[0], r.Code, r.Body)
		}
	}
	h.waitFor("widgets served", func() bool {
		return h.do("GET", "/apis/example.com/v1/namespaces/ref-cbor/widgets", nil, nil).Code == http.StatusOK
	})

	// record.py's order: later cases see what earlier ones wrote.
	names := []string{"get-missing", "get", "get-metadata", "list", "list-metadata", "table-not-acceptable", "not-acceptable",
		"watch-not-acceptable", "watch-cbor-seq-accept", "unsupported-media-type", "create", "create-unknown-field-warn",
		"create-unknown-field-strict", "create-duplicate-key", "create-truncated", "create-break", "create-empty",
		"create-wrong-type", "create-wrong-kind", "create-text-strings-untagged", "apply", "apply-truncated",
		"apply-duplicate-key", "merge-patch-cbor", "delete-options-cbor", "discovery-group-version", "discovery-api",
		"discovery-apis", "discovery-group", "cr-create", "cr-get", "cr-list", "cr-duplicate-key", "cr-truncated"}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != len(names)+1 { // and the CRD
		t.Errorf("%d recordings in %s, %d replayed: list them all here", len(files)-1, dir, len(names))
	}
	for _, name := range names {
		b, err := os.ReadFile(filepath.Join(dir, name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var rc cborCase
		if err := json.Unmarshal(b, &rc); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		t.Run(name, func(t *testing.T) {
			var body []byte
			if rc.Request.BodyHex != nil {
				if body, err = hex.DecodeString(*rc.Request.BodyHex); err != nil {
					t.Fatal(err)
				}
				if name == "unsupported-media-type" {
					body = []byte("x")
				}
			}
			hd := map[string]string{"User-Agent": "cbor-recorder/1.0"}
			for k, v := range rc.Request.Headers {
				hd[k] = v
			}
			r := h.do(rc.Request.Method, rc.Request.Path, hd, body)
			want := rc.Response
			if r.Code != want.Status {
				t.Errorf("status %d, want %d: %s", r.Code, want.Status, truncateBody(r.Body.Bytes()))
			}
			if ct := r.Header().Get("Content-Type"); ct != want.ContentType {
				t.Errorf("Content-Type %q, want %q", ct, want.ContentType)
			}
			var warnings []string
			for _, w := range r.Header().Values("Warning") {
				warnings = append(warnings, w)
			}
			if want.Warnings == nil {
				want.Warnings = []string{}
			}
			if warnings == nil {
				warnings = []string{}
			}
			if !reflect.DeepEqual(warnings, want.Warnings) {
				t.Errorf("warnings %q, want %q", warnings, want.Warnings)
			}
			var got, exp any
			if strings.HasPrefix(want.ContentType, "application/cbor") {
				wb, _ := hex.DecodeString(want.BodyHex)
				got, exp = cborItem(t, r.Body.Bytes()), cborItem(t, wb)
			} else {
				_ = json.Unmarshal(r.Body.Bytes(), &got)
				_ = json.Unmarshal(want.Body, &exp)
			}
			got, exp = blankServerValues(got), blankServerValues(exp)
			if !reflect.DeepEqual(got, exp) {
				gj, _ := json.Marshal(got)
				ej, _ := json.Marshal(exp)
				t.Errorf("body differs:\n got  %s\n want %s", gj, ej)
			}
		})
	}
}

// cborItem decodes one CBOR data item with kube's decoder, after checking
// it carries the self-described tag kube's encoder always writes.
func cborItem(t *testing.T, b []byte) any {
	t.Helper()
	if !bytes.HasPrefix(b, []byte{0xd9, 0xd9, 0xf7}) {
		t.Errorf("CBOR answer without the self-described tag: %x", truncateBody(b))
	}
	var v any
	if err := cbordirect.Unmarshal(b, &v); err != nil {
		t.Fatalf("answer is not one CBOR data item: %v", err)
	}
	return v
}

func truncateBody(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// blankServerValues replaces what each server makes its own (uids,
// resourceVersions, timestamps) with a placeholder, in place.
func blankServerValues(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			switch k {
			case "uid", "resourceVersion", "creationTimestamp", "time":
				x[k] = "<" + k + ">"
			default:
				x[k] = blankServerValues(e)
			}
		}
	case []any:
		for i, e := range x {
			x[i] = blankServerValues(e)
		}
	}
	return v
}

// TestDeleteStatusInProtobuf: the Success Status of a delete comes in the
// binary form a typed client asks for (kube-apiserver writes it
// negotiated; the CBOR case is in the recordings above).
func TestDeleteStatusInProtobuf(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if r := h.do("POST", cms, map[string]string{"Content-Type": "application/json"}, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gone"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	r := h.do("DELETE", cms+"/gone", map[string]string{"Accept": "application/vnd.kubernetes.protobuf, application/json"}, nil)
	if r.Code != http.StatusOK || r.Header().Get("Content-Type") != "application/vnd.kubernetes.protobuf" {
		t.Fatalf("delete: %d %q", r.Code, r.Header().Get("Content-Type"))
	}
	obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(r.Body.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	st, ok := obj.(*metav1.Status)
	if !ok || st.Status != metav1.StatusSuccess || st.Details == nil || st.Details.Name != "gone" || st.Details.Kind != "configmaps" {
		t.Errorf("delete answered %#v", obj)
	}
}
