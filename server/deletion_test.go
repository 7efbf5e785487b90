package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestFinalizers: an object with a finalizer survives DELETE with a
// deletionTimestamp, refuses new finalizers, and goes away when its last
// finalizer is removed.
func TestFinalizers(t *testing.T) {
	h := refNewHarness(t)
	const path = "/api/v1/namespaces/default/configmaps"
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", path, ct, []byte(`{"metadata":{"name":"fin","finalizers":["example.com/hold"]},"data":{"k":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	del := h.do("DELETE", path+"/fin", nil, nil)
	var obj struct {
		Kind     string
		Metadata struct {
			DeletionTimestamp *string
			Finalizers        []string
		}
	}
	if err := json.Unmarshal(del.Body.Bytes(), &obj); err != nil || del.Code != http.StatusOK || obj.Kind != "ConfigMap" || obj.Metadata.DeletionTimestamp == nil {
		t.Fatalf("delete: %d %s; want 200 with the ConfigMap and a deletionTimestamp", del.Code, del.Body)
	}
	if r := h.do("GET", path+"/fin", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("get while finalizer pending: %d; want 200", r.Code)
	}
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	add := h.do("PATCH", path+"/fin", merge, []byte(`{"metadata":{"finalizers":["example.com/hold","example.com/another"]}}`))
	if add.Code != http.StatusUnprocessableEntity || !strings.Contains(add.Body.String(), "no new finalizers can be added if the object is being deleted") {
		t.Fatalf("adding a finalizer while deleting: %d %s; want 422", add.Code, add.Body)
	}
	if r := h.do("PATCH", path+"/fin", merge, []byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
		t.Fatalf("removing the finalizer: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", path+"/fin", nil, nil); r.Code != http.StatusNotFound {
		t.Fatalf("get after the last finalizer went: %d; want 404", r.Code)
	}
}
