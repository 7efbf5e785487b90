package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestListFormsCarryTheSameMetadata: a paginated list says how many items
// remain in every form it is answered in: compact JSON, pretty JSON (what
// curl gets), YAML, and Protobuf.
func TestListFormsCarryTheSameMetadata(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"forms"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("namespace: %d %s", r.Code, r.Body)
	}
	for i := range 3 {
		if r := h.do("POST", "/api/v1/namespaces/forms/configmaps", ct, []byte(fmt.Sprintf(`{"metadata":{"name":"cm%d"}}`, i))); r.Code != http.StatusCreated {
			t.Fatalf("configmap: %d %s", r.Code, r.Body)
		}
	}
	// kube-root-ca.crt is there too: four items, one per page, three remain.
	for _, c := range []struct {
		name    string
		headers map[string]string
		path    string
		want    string
	}{
		{"json", map[string]string{"Accept": "application/json"}, "?limit=1", `"remainingItemCount":3`},
		{"pretty json", map[string]string{"Accept": "application/json"}, "?limit=1&pretty=true", `"remainingItemCount": 3`},
		{"yaml", map[string]string{"Accept": "application/yaml"}, "?limit=1", "remainingItemCount: 3"},
		{"protobuf", map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}, "?limit=1", "\x20\x03"},
	} {
		r := h.do("GET", "/api/v1/namespaces/forms/configmaps"+c.path, c.headers, nil)
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), c.want) {
			t.Errorf("%s: %d %q lacks %q", c.name, r.Code, r.Body, c.want)
		}
	}
}
