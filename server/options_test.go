package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWatchParameter: watch= is read as kube-apiserver's parameter codec
// reads booleans: only "0" and "false" (any case) mean a list.
func TestWatchParameter(t *testing.T) {
	h := refNewHarness(t)
	base := "/api/v1/namespaces/default/configmaps?timeoutSeconds=1&"
	for q, watch := range map[string]bool{
		"watch=":      true,
		"watch=yes":   true,
		"watch=1":     true,
		"watch=True":  true,
		"watch=0":     false,
		"watch=FALSE": false,
		"":            false,
	} {
		rec := h.do("GET", base+q, nil, nil)
		body := rec.Body.String()
		isWatch := strings.Contains(body, `"type":"ADDED"`)
		isList := strings.Contains(body, `"kind":"ConfigMapList"`)
		if rec.Code != http.StatusOK || isWatch != watch || isList == watch {
			t.Errorf("?%s: %d, watch=%v list=%v; want watch=%v", q, rec.Code, isWatch, isList, watch)
		}
	}
}

// TestFieldManagerLength: a fieldManager longer than 128 characters is
// refused as kube-apiserver refuses it, before the body is read.
func TestFieldManagerLength(t *testing.T) {
	h := refNewHarness(t)
	long := strings.Repeat("m", 129)
	rec := h.do("POST", "/api/v1/namespaces/default/configmaps?fieldManager="+long, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fm"}}`))
	want := `CreateOptions.meta.k8s.io \"\" is invalid: fieldManager: Too long: may not be more than 128 bytes`
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("create with a 129-character fieldManager: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/api/v1/namespaces/default/configmaps/fm", nil, nil); rec.Code != http.StatusNotFound {
		t.Errorf("the refused create stored the object: %d", rec.Code)
	}
	rec = h.do("POST", "/api/v1/namespaces/default/configmaps?fieldManager="+strings.Repeat("m", 128), map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fm"}}`))
	if rec.Code != http.StatusCreated {
		t.Errorf("create with a 128-character fieldManager: %d %s", rec.Code, rec.Body)
	}
}
