package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestCreateThroughUpdateNeedsCreate: a PUT or an apply that would create
// its object needs the create verb besides update or patch, as
// kube-apiserver's handlers check; with update alone it is forbidden and
// creates nothing, while updates of existing objects go on.
func TestCreateThroughUpdateNeedsCreate(t *testing.T) {
	h, as := rbacHarness(t)
	createAll(t, h, as("tok-root"), [][2]string{
		{"/api/v1/namespaces", `{"metadata":{"name":"team-b"}}`},
		{"/api/v1/namespaces/team-b/configmaps", `{"metadata":{"name":"c"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/team-b/roles", `{"metadata":{"name":"updater"},"rules":[{"apiGroups":["","coordination.k8s.io"],"resources":["configmaps","leases"],"verbs":["get","update","patch"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/team-b/rolebindings", `{"metadata":{"name":"bob-updates"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"updater"},"subjects":[{"kind":"User","name":"bob"}]}`},
	})
	const leases = "/apis/coordination.k8s.io/v1/namespaces/team-b/leases/"
	const cms = "/api/v1/namespaces/team-b/configmaps/"
	apply := as("tok-bob", "Content-Type", "application/apply-patch+yaml")
	for _, c := range []struct {
		method, path, body string
		headers            map[string]string
		code               int
		text               string
	}{
		{"PUT", leases + "l1", `{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"}}`, as("tok-bob"), http.StatusForbidden,
			`leases.coordination.k8s.io \"l1\" is forbidden: User \"bob\" cannot create resource \"leases\" in API group \"coordination.k8s.io\" in the namespace \"team-b\"`},
		{"PATCH", cms + "cmx?fieldManager=m", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cmx"}}`, apply, http.StatusForbidden,
			`configmaps \"cmx\" is forbidden: User \"bob\" cannot create resource \"configmaps\" in API group \"\" in the namespace \"team-b\"`},
		{"PATCH", cms + "c?fieldManager=m", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"v"}}`, apply, http.StatusOK, `"k":"v"`},
		{"PUT", cms + "c", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"},"data":{"k":"w"}}`, as("tok-bob"), http.StatusOK, `"k":"w"`},
	} {
		r := h.do(c.method, c.path, c.headers, []byte(c.body))
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s %s: %d %s; want %d with %q", c.method, c.path, r.Code, r.Body, c.code, c.text)
		}
	}
	for _, p := range []string{leases + "l1", cms + "cmx"} {
		if r := h.do("GET", p, as("tok-root"), nil); r.Code != http.StatusNotFound {
			t.Errorf("%s after the forbidden create: %d; want 404", p, r.Code)
		}
	}
	// With create granted, the same PUT creates.
	if r := h.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-b/roles", as("tok-root"),
		[]byte(`{"metadata":{"name":"creator"},"rules":[{"apiGroups":["coordination.k8s.io"],"resources":["leases"],"verbs":["create"]}]}`)); r.Code != http.StatusCreated {
		t.Fatalf("role: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-b/rolebindings", as("tok-root"),
		[]byte(`{"metadata":{"name":"bob-creates"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"creator"},"subjects":[{"kind":"User","name":"bob"}]}`)); r.Code != http.StatusCreated {
		t.Fatalf("binding: %d %s", r.Code, r.Body)
	}
	h.waitFor("bob's PUT to create the lease once create is bound", func() bool {
		return h.do("PUT", leases+"l1", as("tok-bob"), []byte(`{"apiVersion":"coordination.k8s.io/v1","kind":"Lease","metadata":{"name":"l1"}}`)).Code == http.StatusCreated
	})
}

// TestWatchParamOnNamedPathIsAGet: ?watch=true on an object's own path is
// a get, as kube's request info reads it: authorized as get, answered
// with the object once; only the collection's watch (or the legacy
// /watch/ prefix) streams, and that needs the watch verb.
func TestWatchParamOnNamedPathIsAGet(t *testing.T) {
	h, as := rbacHarness(t)
	createAll(t, h, as("tok-root"), [][2]string{
		{"/api/v1/namespaces", `{"metadata":{"name":"team-w"}}`},
		{"/api/v1/namespaces/team-w/configmaps", `{"metadata":{"name":"c"},"data":{"k":"v"}}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/team-w/roles", `{"metadata":{"name":"getter"},"rules":[{"apiGroups":[""],"resources":["configmaps","configmaps/status"],"verbs":["get"]}]}`},
		{"/apis/rbac.authorization.k8s.io/v1/namespaces/team-w/rolebindings", `{"metadata":{"name":"bob-gets"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"getter"},"subjects":[{"kind":"User","name":"bob"}]}`},
	})
	const cms = "/api/v1/namespaces/team-w/configmaps"
	for _, p := range []string{cms + "/c?watch=true", cms + "/c?watch=1&timeoutSeconds=1"} {
		r := h.do("GET", p, as("tok-bob"), nil)
		if r.Code != http.StatusOK || r.Header().Get("Content-Type") != "application/json" ||
			!strings.HasPrefix(r.Body.String(), `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"`) || strings.Contains(r.Body.String(), `"type":"ADDED"`) {
			t.Errorf("GET %s with get alone: %d %q %s; want the object, once", p, r.Code, r.Header().Get("Content-Type"), r.Body)
		}
	}
	for _, p := range []string{cms + "?watch=true", "/api/v1/watch/namespaces/team-w/configmaps/c", cms + "?watch=true&fieldSelector=metadata.name%3Dc"} {
		if r := h.do("GET", p, as("tok-bob"), nil); r.Code != http.StatusForbidden || !strings.Contains(r.Body.String(), `cannot watch resource \"configmaps\"`) {
			t.Errorf("GET %s with get alone: %d %s; want 403", p, r.Code, r.Body)
		}
	}
}
