package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/tabula-dev/tabula/sqlstore/kv"
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

// TestListWithUndecodableItem: a list with a stored row that does not
// decode answers a 500 Status in every form, as kube-apiserver does, and
// never a 200 whose body stops after the good items. The lists served in
// a version other than the stored one convert each item (autoscaling/v1
// HPAs stored as v2; a custom resource's non-storage version).
func TestListWithUndecodableItem(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("corrupt", nil)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	establish(t, h, "gadgets.test.example.com")
	h.mustDo("POST", "/apis/autoscaling/v2/namespaces/corrupt/horizontalpodautoscalers", "application/json",
		`{"metadata":{"name":"a"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},"maxReplicas":2}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/test.example.com/v1/namespaces/corrupt/gadgets", "application/json",
		`{"apiVersion":"test.example.com/v1","kind":"Gadget","metadata":{"name":"a"}}`, http.StatusCreated)
	// A row the server did not write, sorting after the good one.
	for _, resource := range []string{"horizontalpodautoscalers.autoscaling", "gadgets.test.example.com"} {
		_, err := h.store.Create(context.Background(), kv.Key{Resource: resource, Namespace: "corrupt", Name: "z"}, func(int64) (kv.Entry, error) {
			return kv.Entry{Value: []byte("not json"), Fields: map[string]string{"metadata.name": "z", "metadata.namespace": "corrupt"}}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct{ path, accept string }{
		{"/apis/autoscaling/v1/namespaces/corrupt/horizontalpodautoscalers", "application/json"},
		{"/apis/autoscaling/v1/namespaces/corrupt/horizontalpodautoscalers", "application/vnd.kubernetes.protobuf"},
		{"/apis/autoscaling/v2/namespaces/corrupt/horizontalpodautoscalers", "application/vnd.kubernetes.protobuf"},
		{"/apis/autoscaling/v1/horizontalpodautoscalers", "application/json"},
		{"/apis/test.example.com/v1beta1/namespaces/corrupt/gadgets", "application/json"},
	} {
		r := h.do("GET", c.path, map[string]string{"Accept": c.accept}, nil)
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(r.Body.Bytes(), nil, nil)
		st, ok := obj.(*metav1.Status)
		if r.Code != http.StatusInternalServerError || err != nil || !ok || st.Code != http.StatusInternalServerError {
			t.Errorf("%s as %s: %d %q (%v); want a 500 Status", c.path, c.accept, r.Code, r.Body, err)
		}
	}
}
