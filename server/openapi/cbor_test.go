package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"

	"github.com/tabula-dev/tabula/schema"
)

// With CBOR served, the documents name its media types where
// kube-apiserver 1.35.4 with CBORServingAndStorage on names them (read
// from its /openapi/v2): objects, watches, apply patches and
// group-versions' resource lists, but not the discovery documents above.
func TestCBORMediaTypes(t *testing.T) {
	svc, err := New(schema.NewBuiltin(), Info{Title: "Kubernetes", Version: "v1.35.4", CBOR: true})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	defer srv.Close()
	f := &fixture{t: t, svc: svc, srv: srv}
	resp, body := f.get("/openapi/v2", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d", resp.StatusCode)
	}
	var v2 map[string]any
	if err := json.Unmarshal(body, &v2); err != nil {
		t.Fatal(err)
	}
	object := []any{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf", "application/cbor"}
	noCBOR := []any{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	for _, c := range []struct {
		path, method, field string
		want                []any
	}{
		{"/api/v1/namespaces/{namespace}/configmaps/{name}", "get", "produces", object},
		{"/api/v1/namespaces/{namespace}/configmaps/{name}", "patch", "consumes", []any{"application/json-patch+json", "application/merge-patch+json",
			"application/strategic-merge-patch+json", "application/apply-patch+yaml", "application/apply-patch+cbor"}},
		{"/api/v1/watch/namespaces/{namespace}/configmaps", "get", "produces", append(append([]any(nil), object...),
			"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch", "application/cbor-seq")},
		{"/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale", "get", "produces", object},
		{"/apis/apps/v1/", "get", "produces", object},
		{"/api/v1/", "get", "consumes", object},
		{"/apis/", "get", "produces", noCBOR},
		{"/apis/apps/", "get", "produces", noCBOR},
		{"/api/", "get", "produces", noCBOR},
	} {
		if got := dig(v2, "paths", c.path, c.method, c.field); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s %s: %v, want %v", c.method, c.path, c.field, got, c.want)
		}
	}
}
