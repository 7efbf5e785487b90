package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPathsServeWhatWasAuthorized: the server finds a request's resource
// in the path the authorizer read, decoded, and refuses paths with empty
// segments ("//"), which kube's router matches to nothing and kube's
// request info reads shifted by a segment: a rule for */scale must not
// reach the Secrets of a namespace named "scale".
func TestPathsServeWhatWasAuthorized(t *testing.T) {
	h, as := rbacHarness(t)
	createAll(t, h, as("tok-root"), [][2]string{
		{"/api/v1/namespaces", `{"metadata":{"name":"scale"}}`},
		{"/api/v1/namespaces/scale/secrets", `{"metadata":{"name":"topsecret"},"stringData":{"pw":"hunter2"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterroles", `{"metadata":{"name":"scaler"},"rules":[{"apiGroups":[""],"resources":["*/scale"],"verbs":["get","update"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"metadata":{"name":"bob-scales"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"scaler"},"subjects":[{"kind":"User","name":"bob"}]}`},
	})
	for _, c := range []struct {
		method, path, token string
		code                int
	}{
		{"GET", "/api/v1/namespaces/scale/secrets/topsecret", "tok-bob", http.StatusForbidden},
		{"GET", "/api/v1//namespaces/scale/secrets/topsecret", "tok-bob", http.StatusNotFound},
		{"GET", "/api/v1//namespaces/scale/secrets", "tok-bob", http.StatusNotFound},
		{"PUT", "/api/v1//namespaces/scale/secrets/topsecret", "tok-bob", http.StatusNotFound},
		{"GET", "/api/v1//secrets", "tok-root", http.StatusNotFound},
		{"GET", "/api/v1/namespaces//secrets", "tok-root", http.StatusNotFound},
		{"GET", "/apis//v1/namespaces/scale/secrets/topsecret", "tok-root", http.StatusNotFound},
		{"GET", "/apis/apps/v1//deployments", "tok-root", http.StatusNotFound},
		// Escapes are decoded before routing, as kube routes them.
		{"GET", "/api/v1/namespaces/sc%61le/secrets/topsecret", "tok-root", http.StatusOK},
		{"GET", "/api/v1/namespaces/sc%61le/secrets/topsecret", "tok-bob", http.StatusForbidden},
		// A trailing slash is let go.
		{"GET", "/api/v1/namespaces/scale/secrets/", "tok-root", http.StatusOK},
	} {
		r := h.do(c.method, c.path, as(c.token), []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"topsecret"},"stringData":{"pw":"owned"}}`))
		if r.Code != c.code || (r.Code != http.StatusOK && strings.Contains(r.Body.String(), "hunter2")) {
			t.Errorf("%s %s as %s: %d %s; want %d", c.method, c.path, c.token, r.Code, r.Body, c.code)
		}
	}
	if r := h.do("GET", "/api/v1/namespaces/scale/secrets/topsecret", as("tok-root"), nil); !strings.Contains(r.Body.String(), `"pw":"aHVudGVyMg=="`) {
		t.Errorf("the secret after the refused requests: %d %s", r.Code, r.Body)
	}
}

// createAll POSTs each (collection path, body) with headers, and stops the
// test at the first that is not created.
func createAll(t *testing.T, h *refHarness, headers map[string]string, objs [][2]string) {
	t.Helper()
	for _, o := range objs {
		if r := h.do("POST", o[0], headers, []byte(o[1])); r.Code != http.StatusCreated {
			t.Fatalf("create in %s: %d %s", o[0], r.Code, r.Body)
		}
	}
}
