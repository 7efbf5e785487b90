package server_test

import (
	"bytes"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/tabula-dev/tabula/sqlstore"
)

// TestKeptGets: a get in Protobuf or CBOR is answered from the encoding
// kept for the live revision when there is one, byte for byte what the
// write or the first read answered, and from the stored object when the
// object has changed since. Answered so, the store reads the object's
// revision alone (tabula_sql_gets_held_total counts those gets).
func TestKeptGets(t *testing.T) {
	h := refNewHarnessCBOR(t, true)
	held := heldGets(t)
	wantHeld := func(what string, n float64) {
		t.Helper()
		if got := heldGets(t) - held; got != n {
			t.Fatalf("%s: %v gets answered from a held encoding so far; want %v", what, got, n)
		}
	}
	const path = "/api/v1/namespaces/default/configmaps"
	pb := map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}
	decode := func(what string, b []byte) *corev1.ConfigMap {
		t.Helper()
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(b, nil, nil)
		cm, ok := obj.(*corev1.ConfigMap)
		if err != nil || !ok {
			t.Fatalf("%s: %v %T", what, err, obj)
		}
		return cm
	}

	// A create answered in Protobuf keeps its encoding: the get after it
	// is that answer again.
	created := h.do("POST", path, map[string]string{"Accept": "application/vnd.kubernetes.protobuf", "Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"kept"},"data":{"k":"one"}}`))
	if created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	got := h.do("GET", path+"/kept", pb, nil)
	if got.Code != http.StatusOK || !bytes.Equal(got.Body.Bytes(), created.Body.Bytes()) {
		t.Fatalf("get after a Protobuf create: %d, %d bytes; want the create's %d bytes", got.Code, got.Body.Len(), created.Body.Len())
	}
	if ct := got.Header().Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf" {
		t.Errorf("Content-Type %q", ct)
	}
	first := decode("get after create", got.Body.Bytes())
	wantHeld("get after a Protobuf create", 1)

	// A change in JSON keeps no Protobuf encoding: the get reads the
	// object, and the one after it is answered from what that read kept.
	updated := h.do("PUT", path+"/kept", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"kept","resourceVersion":"`+first.ResourceVersion+`"},"data":{"k":"two"}}`))
	if updated.Code != http.StatusOK {
		t.Fatalf("update: %d %s", updated.Code, updated.Body)
	}
	read := h.do("GET", path+"/kept", pb, nil)
	cm := decode("get after update", read.Body.Bytes())
	if read.Code != http.StatusOK || cm.Data["k"] != "two" || cm.ResourceVersion == first.ResourceVersion {
		t.Fatalf("get after update: %d %+v; want the update's data at a new resourceVersion", read.Code, cm)
	}
	wantHeld("get after a JSON update", 1)
	again := h.do("GET", path+"/kept", pb, nil)
	if again.Code != http.StatusOK || !bytes.Equal(again.Body.Bytes(), read.Body.Bytes()) {
		t.Fatalf("second get: %d, %d bytes; want the first get's %d", again.Code, again.Body.Len(), read.Body.Len())
	}
	wantHeld("second get", 2)

	// CBOR likewise.
	cb := map[string]string{"Accept": "application/cbor"}
	c1 := h.do("GET", path+"/kept", cb, nil)
	c2 := h.do("GET", path+"/kept", cb, nil)
	var v map[string]any
	if c1.Code != http.StatusOK || c1.Header().Get("Content-Type") != "application/cbor" || cbordirect.Unmarshal(c1.Body.Bytes(), &v) != nil {
		t.Fatalf("CBOR get: %d %q", c1.Code, c1.Header().Get("Content-Type"))
	}
	if meta, _ := v["metadata"].(map[string]any); meta["resourceVersion"] != cm.ResourceVersion || v["kind"] != "ConfigMap" {
		t.Fatalf("CBOR get: %v; want the ConfigMap at %s", v, cm.ResourceVersion)
	}
	if c2.Code != http.StatusOK || !bytes.Equal(c2.Body.Bytes(), c1.Body.Bytes()) {
		t.Fatalf("second CBOR get: %d, %d bytes; want the first's %d", c2.Code, c2.Body.Len(), c1.Body.Len())
	}
	wantHeld("two CBOR gets", 3)

	// A JSON get is the stored object itself: always read.
	if j := h.do("GET", path+"/kept", nil, nil); j.Code != http.StatusOK || !bytes.Contains(j.Body.Bytes(), []byte(`"k":"two"`)) {
		t.Fatalf("JSON get: %d %s", j.Code, j.Body)
	}
	wantHeld("a JSON get", 3)

	// Gone: not found, whatever was kept of it.
	if d := h.do("DELETE", path+"/kept", nil, nil); d.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", d.Code, d.Body)
	}
	if r := h.do("GET", path+"/kept", pb, nil); r.Code != http.StatusNotFound {
		t.Fatalf("get after delete: %d %s", r.Code, r.Body)
	}
}

// heldGets reads tabula_sql_gets_held_total, counted for every store in
// the process: the tests that use it are not parallel, so no other test
// runs meanwhile.
func heldGets(t *testing.T) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sqlstore.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "tabula_sql_gets_held_total" {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("no tabula_sql_gets_held_total")
	return 0
}
