package server_test

import (
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestProtobufListAfterUpdate: Protobuf lists are served from cached
// encodings by revision; an update must show in the next list.
func TestProtobufListAfterUpdate(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(`{"metadata":{"name":"pb"},"data":{"v":"one"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	list := func() string {
		t.Helper()
		r := h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}, nil)
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(r.Body.Bytes(), nil, nil)
		if err != nil {
			t.Fatalf("decode list (%d): %v", r.Code, err)
		}
		for _, cm := range obj.(*corev1.ConfigMapList).Items {
			if cm.Name == "pb" {
				return cm.Data["v"]
			}
		}
		t.Fatal("configmap pb not listed")
		return ""
	}
	if got := list(); got != "one" {
		t.Fatalf("first list: v = %q", got)
	}
	if got := list(); got != "one" { // served from the cache
		t.Fatalf("second list: v = %q", got)
	}
	if r := h.do("PATCH", "/api/v1/namespaces/default/configmaps/pb", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"data":{"v":"two"}}`)); r.Code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	if got := list(); got != "two" {
		t.Fatalf("list after the update: v = %q; want two", got)
	}
}
