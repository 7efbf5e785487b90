package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
)

// TestCRDOpenAPIV2MatchesReference: a CRD's definitions in /openapi/v2
// are kube-apiserver 1.35.4's (testdata/reference/crds/
// openapi-v2-definitions.json): its value validations kept (enum,
// maxLength, minimum, required — the e2e suite's CustomResourcePublishOpenAPI
// specs compare them with the CRD's schema), defaults pruned, and the
// built-in definitions shared rather than copied as ObjectMeta_v2.
func TestCRDOpenAPIV2MatchesReference(t *testing.T) {
	var create struct {
		Request struct{ Body json.RawMessage }
	}
	var want struct{ Definitions map[string]interface{} }
	for path, into := range map[string]interface{}{
		"../testdata/reference/crds/crd-create.json":             &create,
		"../testdata/reference/crds/openapi-v2-definitions.json": &want,
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatal(err)
		}
	}
	h := refNewHarness(t)
	h.mustDo("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", string(create.Request.Body), http.StatusCreated)
	refCRDEstablished(h)

	var doc struct{ Definitions map[string]interface{} }
	rec := h.do("GET", "/openapi/v2", map[string]string{"Accept": "application/json"}, nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &doc); err != nil {
		t.Fatalf("/openapi/v2: %d %v", rec.Code, err)
	}
	got := map[string]interface{}{}
	for name, def := range doc.Definitions {
		if strings.HasPrefix(name, "com.example.ref.") {
			got[name] = def
		}
		if strings.HasSuffix(name, "_v2") {
			t.Errorf("definition %s: a built-in definition copied under another name", name)
		}
	}
	for name, def := range want.Definitions {
		if !reflect.DeepEqual(got[name], def) {
			g, _ := json.Marshal(got[name])
			w, _ := json.Marshal(def)
			t.Errorf("%s:\n got  %s\n want %s", name, g, w)
		}
	}
	if len(got) != len(want.Definitions) {
		t.Errorf("the CRD brings %d definitions, kube-apiserver's %d", len(got), len(want.Definitions))
	}
}
