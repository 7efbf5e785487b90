package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWritesKeepTheURLName: as kube-apiserver's update and patch handlers
// check the body, and the patched or applied object, against the URL, a
// write whose object loses or lacks its name is refused, not given the
// URL's, and changes nothing; an apply naming a uid creates nothing.
func TestWritesKeepTheURLName(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	if r := h.do("POST", cms, map[string]string{"Content-Type": "application/json"},
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p1","labels":{"a":"b"}},"data":{"k":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	const noName = "the name of the object (p1 based on URL) was undeterminable: name must be provided"
	for _, c := range []struct {
		name, method, path, ct, body string
		code                         int
		text                         string
	}{
		{"PUT without a name", "PUT", cms + "/p1", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"q":"1"}}`,
			http.StatusBadRequest, noName},
		{"PUT of another name", "PUT", cms + "/p1", "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p2"},"data":{"q":"1"}}`,
			http.StatusBadRequest, "the name of the object (p2) does not match the name on the URL (p1)"},
		{"JSON patch removing the name", "PATCH", cms + "/p1", "application/json-patch+json", `[{"op":"remove","path":"/metadata/name"}]`,
			http.StatusBadRequest, noName},
		{"JSON patch replacing the whole object", "PATCH", cms + "/p1", "application/json-patch+json", `[{"op":"replace","path":"","value":null}]`,
			http.StatusUnprocessableEntity, `"message":"the server rejected our request due to an error in our request"`},
		{"merge patch renaming", "PATCH", cms + "/p1", "application/merge-patch+json", `{"metadata":{"name":"p3"}}`,
			http.StatusBadRequest, "the name of the object (p3) does not match the name on the URL (p1)"},
		{"merge patch moving namespaces", "PATCH", cms + "/p1", "application/merge-patch+json", `{"metadata":{"namespace":"kube-system"}}`,
			http.StatusBadRequest, "the namespace of the provided object does not match the namespace sent on the request"},
		{"apply in another namespace", "PATCH", cms + "/p1?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"p1","namespace":"kube-system"}}`,
			http.StatusBadRequest, "the namespace of the provided object does not match the namespace sent on the request"},
		{"apply creating with a uid", "PATCH", cms + "/ssa3?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"ssa3","uid":"abc"}}`,
			http.StatusConflict, "uid mismatch: the provided object specified uid abc, and no existing object was found"},
		{"apply creating without a name", "PATCH", cms + "/ssa4?fieldManager=m", "application/apply-patch+yaml", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{},"data":{"a":"b"}}`,
			http.StatusBadRequest, "the name of the object (ssa4 based on URL) was undeterminable: name must be provided"},
	} {
		r := h.do(c.method, c.path, map[string]string{"Content-Type": c.ct}, []byte(c.body))
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, r.Code, r.Body, c.code, c.text)
		}
	}
	var cm struct {
		Metadata struct {
			Name   string
			Labels map[string]string
		}
		Data map[string]string
	}
	if err := json.Unmarshal(h.do("GET", cms+"/p1", nil, nil).Body.Bytes(), &cm); err != nil {
		t.Fatal(err)
	}
	if cm.Metadata.Name != "p1" || cm.Metadata.Labels["a"] != "b" || cm.Data["k"] != "v" || cm.Data["q"] != "" {
		t.Errorf("p1 after the refused writes: %+v; want it as created", cm)
	}
	for _, name := range []string{"ssa3", "ssa4"} {
		if r := h.do("GET", cms+"/"+name, nil, nil); r.Code != http.StatusNotFound {
			t.Errorf("get %s after a refused apply: %d; want 404", name, r.Code)
		}
	}
}

// TestNamesNoPathSegmentHolds: a request naming an object "." or "..", or
// with a '%' in its name, is refused as kube-apiserver's storage refuses
// it (400), whatever the verb.
func TestNamesNoPathSegmentHolds(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps/"
	for _, c := range []struct{ method, name, text string }{
		{"GET", "..", `Name parameter invalid: \"..\": may not be '..'`},
		{"GET", ".", `Name parameter invalid: \".\": may not be '.'`},
		{"DELETE", "..", `Name parameter invalid: \"..\": may not be '..'`},
		{"GET", "a%25b", `Name parameter invalid: \"a%b\": may not contain '%'`},
		{"PUT", "a%25b", `Name parameter invalid: \"a%b\": may not contain '%'`},
	} {
		r := h.do(c.method, cms+c.name, map[string]string{"Content-Type": "application/json"}, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}`))
		if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s %s: %d %s; want 400 with %q", c.method, c.name, r.Code, r.Body, c.text)
		}
	}
}
