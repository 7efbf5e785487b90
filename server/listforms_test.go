package server_test

import (
	"encoding/json"
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
	// kube-root-ca.crt arrives on its own: wait for it, then count.
	gcHarness{h, t}.eventually("kube-root-ca.crt in forms", func() bool {
		return h.do("GET", "/api/v1/namespaces/forms/configmaps/kube-root-ca.crt", nil, nil).Code == http.StatusOK
	})
	var all struct{ Items []any }
	if r := h.do("GET", "/api/v1/namespaces/forms/configmaps", nil, nil); json.Unmarshal(r.Body.Bytes(), &all) != nil || len(all.Items) < 3 {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	n := len(all.Items) - 1 // one per page: the rest remain
	for _, c := range []struct {
		name    string
		headers map[string]string
		path    string
		want    string
	}{
		{"json", map[string]string{"Accept": "application/json"}, "?limit=1", fmt.Sprintf(`"remainingItemCount":%d`, n)},
		{"pretty json", map[string]string{"Accept": "application/json"}, "?limit=1&pretty=true", fmt.Sprintf(`"remainingItemCount": %d`, n)},
		{"yaml", map[string]string{"Accept": "application/yaml"}, "?limit=1", fmt.Sprintf("remainingItemCount: %d", n)},
		{"protobuf", map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}, "?limit=1", string([]byte{0x20, byte(n)})},
	} {
		r := h.do("GET", "/api/v1/namespaces/forms/configmaps"+c.path, c.headers, nil)
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), c.want) {
			t.Errorf("%s: %d %q lacks %q", c.name, r.Code, r.Body, c.want)
		}
	}
}
