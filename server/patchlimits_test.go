package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestJSONPatchOperationLimit: a JSON Patch of more than 10,000
// operations is refused as too large (413), as on kube-apiserver, and
// one of 10,000 is applied.
func TestJSONPatchOperationLimit(t *testing.T) {
	h := refNewHarness(t)
	const cm = "/api/v1/namespaces/default/configmaps/big"
	if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	ops := func(n int) []byte {
		return []byte("[" + strings.TrimSuffix(strings.Repeat(`{"op":"test","path":"/data/k","value":"v"},`, n), ",") + "]")
	}
	ct := map[string]string{"Content-Type": "application/json-patch+json"}
	r := h.do("PATCH", cm, ct, ops(10001))
	if r.Code != http.StatusRequestEntityTooLarge || !strings.Contains(r.Body.String(), "The allowed maximum operations in a JSON patch is 10000, got 10001") ||
		!strings.Contains(r.Body.String(), `"reason":"RequestEntityTooLarge"`) {
		t.Errorf("10,001 operations: %d %s; want 413 RequestEntityTooLarge", r.Code, r.Body)
	}
	if r := h.do("PATCH", cm, ct, ops(10000)); r.Code != http.StatusOK {
		t.Errorf("10,000 operations: %d %s; want 200", r.Code, r.Body)
	}
}
