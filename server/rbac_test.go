package server_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/auth/authz"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// authServer is a server with kube's production chain (Node,RBAC, with
// anonymous requests) and the static users of users (token-file lines:
// token,user,uid,"groups"), on cfg; as builds a request's headers for a
// token ("" for none).
func authServer(t *testing.T, users string, cfg server.Config) (h *refHarness, srv *server.Server, as func(token string, more ...string) map[string]string) {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte(users), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{TokenFile: tokens, ServiceAccountTokens: cfg.ServiceAccountTokens})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Store, cfg.Authenticator = storetest.Open(t, "sqlite://:memory:"), a
	cfg.AuthorizationModes, cfg.AnonymousAuth = authz.DefaultModes, true
	srv = servertest.Server(t, cfg)
	h = &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	as = func(token string, more ...string) map[string]string {
		hd := map[string]string{"Content-Type": "application/json"}
		if token != "" {
			hd["Authorization"] = "Bearer " + token
		}
		for i := 0; i+1 < len(more); i += 2 {
			hd[more[i]] = more[i+1]
		}
		return hd
	}
	return h, srv, as
}

// rbacHarness is authServer with root (system:masters), alice and bob (no
// groups but system:authenticated).
func rbacHarness(t *testing.T) (*refHarness, func(token string, more ...string) map[string]string) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-alice,alice,2\ntok-bob,bob,3\n", server.Config{})
	return h, as
}

// TestRBAC: requests are decided by kube's RBAC over the bootstrap policy
// and the objects written, with kube-apiserver's 403 texts; a binding
// authorizes from the request after the one that wrote it.
func TestRBAC(t *testing.T) {
	h, as := rbacHarness(t)
	call := func(method, path, token, body string) (int, string) {
		t.Helper()
		var b []byte
		if body != "" {
			b = []byte(body)
		}
		rec := h.do(method, path, as(token), b)
		return rec.Code, rec.Body.String()
	}
	forbidden := func(what, method, path, token, body, message string) {
		t.Helper()
		code, out := call(method, path, token, body)
		var st struct {
			Message, Reason string
			Code            int
		}
		_ = json.Unmarshal([]byte(out), &st)
		if code != http.StatusForbidden || st.Reason != "Forbidden" || st.Code != 403 || st.Message != message {
			t.Errorf("%s: %d %s\nwant 403 %q", what, code, out, message)
		}
	}
	ok := func(what, method, path, token, body string, want int) {
		t.Helper()
		if code, out := call(method, path, token, body); code != want {
			t.Errorf("%s: %d %s; want %d", what, code, out, want)
		}
	}

	// Anonymous: the public info and nothing else.
	for _, p := range []string{"/version", "/healthz", "/readyz", "/livez"} {
		ok("anonymous "+p, "GET", p, "", "", http.StatusOK)
	}
	forbidden("anonymous list", "GET", "/api/v1/pods", "", "",
		`pods is forbidden: User "system:anonymous" cannot list resource "pods" in API group "" at the cluster scope`)
	forbidden("anonymous discovery", "GET", "/apis", "", "",
		`forbidden: User "system:anonymous" cannot get path "/apis"`)

	// An authenticated user without bindings: discovery and reviews of
	// themselves, nothing in a namespace.
	ok("alice discovery", "GET", "/apis", "tok-alice", "", http.StatusOK)
	ok("root creates team-a", "POST", "/api/v1/namespaces", "tok-root", `{"metadata":{"name":"team-a"}}`, http.StatusCreated)
	forbidden("alice lists configmaps", "GET", "/api/v1/namespaces/team-a/configmaps", "tok-alice", "",
		`configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "team-a"`)
	forbidden("alice reads a named subresource", "GET", "/api/v1/namespaces/team-a/pods/p/log", "tok-alice", "",
		`pods "p" is forbidden: User "alice" cannot get resource "pods/log" in API group "" in the namespace "team-a"`)
	forbidden("alice asks for an unknown resource", "GET", "/apis/example.com/v1/widgets", "tok-alice", "",
		`widgets.example.com is forbidden: User "alice" cannot list resource "widgets" in API group "example.com" at the cluster scope`)
	ok("root asks for an unknown resource", "GET", "/apis/example.com/v1/widgets", "tok-root", "", http.StatusNotFound)

	// Bound to admin in team-a: everything there, nothing cluster-wide;
	// the binding counts from the next request.
	ok("root binds alice", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings", "tok-root",
		`{"metadata":{"name":"alice-admin"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"admin"},"subjects":[{"kind":"User","name":"alice"}]}`, http.StatusCreated)
	ok("alice creates a configmap", "POST", "/api/v1/namespaces/team-a/configmaps", "tok-alice", `{"metadata":{"name":"c"}}`, http.StatusCreated)
	ok("alice lists secrets", "GET", "/api/v1/namespaces/team-a/secrets", "tok-alice", "", http.StatusOK)
	forbidden("alice lists nodes", "GET", "/api/v1/nodes", "tok-alice", "",
		`nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope`)
	forbidden("alice in another namespace", "GET", "/api/v1/namespaces/default/configmaps", "tok-alice", "",
		`configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default"`)

	// RBAC's own rules: alice may grant what she holds in team-a, not more.
	ok("alice grants what she holds", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles", "tok-alice",
		`{"metadata":{"name":"cm-reader"},"rules":[{"apiGroups":[""],"resources":["configmaps"],"verbs":["get","list"]}]}`, http.StatusCreated)
	ok("alice binds bob to it", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings", "tok-alice",
		`{"metadata":{"name":"bob-reads"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"cm-reader"},"subjects":[{"kind":"User","name":"bob"}]}`, http.StatusCreated)
	ok("bob reads", "GET", "/api/v1/namespaces/team-a/configmaps/c", "tok-bob", "", http.StatusOK)
	forbidden("bob writes", "DELETE", "/api/v1/namespaces/team-a/configmaps/c", "tok-bob", "",
		`configmaps "c" is forbidden: User "bob" cannot delete resource "configmaps" in API group "" in the namespace "team-a"`)
	forbidden("alice grants nodes", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/roles", "tok-alice",
		`{"metadata":{"name":"too-much"},"rules":[{"apiGroups":[""],"resources":["nodes"],"verbs":["list"]}]}`,
		`roles.rbac.authorization.k8s.io "too-much" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:[""], Resources:["nodes"], Verbs:["list"]}`)
	forbidden("alice binds cluster-admin", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/team-a/rolebindings", "tok-alice",
		`{"metadata":{"name":"bob-root"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"cluster-admin"},"subjects":[{"kind":"User","name":"bob"}]}`,
		`rolebindings.rbac.authorization.k8s.io "bob-root" is forbidden: user "alice" (groups=["system:authenticated"]) is attempting to grant RBAC permissions not currently held:
{APIGroups:["*"], Resources:["*"], Verbs:["*"]}
{NonResourceURLs:["*"], Verbs:["*"]}`)

	// Reviews answer with the same authorizer.
	code, out := call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "tok-bob",
		`{"spec":{"resourceAttributes":{"namespace":"team-a","verb":"list","resource":"configmaps"}}}`)
	if code != http.StatusCreated || !strings.Contains(out, `"allowed":true`) || !strings.Contains(out, `RBAC: allowed by RoleBinding \"bob-reads/team-a\" of Role \"cm-reader\" to User \"bob\"`) {
		t.Errorf("bob's access review: %d %s", code, out)
	}
	code, out = call("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "tok-bob",
		`{"spec":{"resourceAttributes":{"namespace":"team-a","verb":"delete","resource":"configmaps"}}}`)
	if code != http.StatusCreated || strings.Contains(out, `"allowed":true`) {
		t.Errorf("bob's delete review: %d %s", code, out)
	}
	code, out = call("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", "tok-bob", `{"spec":{"namespace":"team-a"}}`)
	if code != http.StatusCreated || !strings.Contains(out, `{"verbs":["get","list"],"apiGroups":[""],"resources":["configmaps"]}`) {
		t.Errorf("bob's rules review: %d %s", code, out)
	}
	forbidden("bob asks about alice", "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "tok-bob",
		`{"spec":{"user":"alice","resourceAttributes":{"verb":"get","resource":"pods"}}}`,
		`subjectaccessreviews.authorization.k8s.io is forbidden: User "bob" cannot create resource "subjectaccessreviews" in API group "authorization.k8s.io" at the cluster scope`)
	code, out = call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "tok-root",
		`{"spec":{"user":"alice","resourceAttributes":{"namespace":"team-a","verb":"delete","resource":"secrets"}}}`)
	if code != http.StatusCreated || !strings.Contains(out, `"allowed":true`) {
		t.Errorf("root asks about alice: %d %s", code, out)
	}

	// Impersonation: root may act as bob; alice may not.
	rec := h.do("GET", "/api/v1/namespaces/team-a/configmaps", map[string]string{"Authorization": "Bearer tok-root", "Impersonate-User": "bob"}, nil)
	if rec.Code != http.StatusOK {
		t.Errorf("root as bob lists configmaps: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("DELETE", "/api/v1/namespaces/team-a/configmaps/c", map[string]string{"Authorization": "Bearer tok-root", "Impersonate-User": "bob"}, nil)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `User \"bob\" cannot delete resource \"configmaps\"`) {
		t.Errorf("root as bob deletes: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("GET", "/api/v1/namespaces/team-a/configmaps", map[string]string{"Authorization": "Bearer tok-alice", "Impersonate-User": "bob"}, nil)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope`) {
		t.Errorf("alice as bob: %d %s", rec.Code, rec.Body)
	}
	rec = h.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", map[string]string{"Authorization": "Bearer tok-root", "Impersonate-User": "carol",
		"Impersonate-Group": "devs", "Content-Type": "application/json"}, []byte(`{}`))
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"username":"carol","groups":["devs","system:authenticated"]`) {
		t.Errorf("whoami as carol: %d %s", rec.Code, rec.Body)
	}
}

// TestNodeAuthorization: a kubelet's identity (system:node:<name> in
// system:nodes) reaches the Secrets its node's Pods mount and no others,
// through kube's node authorizer over the graph the Pod watch keeps; a
// Pod deleted takes the access with it.
func TestNodeAuthorization(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-n1,system:node:n1,10,\"system:nodes\"\n", server.Config{})
	mk := func(path, body string) {
		t.Helper()
		if rec := h.do("POST", path, as("tok-root"), []byte(body)); rec.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	const ns = "/api/v1/namespaces/default"
	mk(ns+"/secrets", `{"metadata":{"name":"s1"}}`)
	mk(ns+"/secrets", `{"metadata":{"name":"s2"}}`)
	pod := func(name, node, secret string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"nodeName":"` + node + `","volumes":[{"name":"v","secret":{"secretName":"` + secret + `"}}],"containers":[{"name":"c","image":"busybox"}]}}`
	}
	mk(ns+"/pods", pod("p1", "n1", "s1"))
	mk(ns+"/pods", pod("p2", "n2", "s2"))

	if rec := h.do("GET", ns+"/secrets/s1", as("tok-n1"), nil); rec.Code != http.StatusOK {
		t.Errorf("n1 reads the secret its pod mounts: %d %s", rec.Code, rec.Body)
	}
	rec := h.do("GET", ns+"/secrets/s2", as("tok-n1"), nil)
	if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), `User \"system:node:n1\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\": no relationship found between node 'n1' and this object`) {
		t.Errorf("n1 reads another node's secret: %d %s", rec.Code, rec.Body)
	}
	// Pods: its own, not others (kube 1.35's AuthorizeNodeWithSelectors);
	// a list only with its spec.nodeName. (Writing another node's pod
	// status is the authorizer's to allow and NodeRestriction admission's
	// to refuse, as on kube-apiserver.)
	if rec := h.do("GET", ns+"/pods/p1", as("tok-n1"), nil); rec.Code != http.StatusOK {
		t.Errorf("n1 reads its pod: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", ns+"/pods/p2", as("tok-n1"), nil); rec.Code != http.StatusForbidden {
		t.Errorf("n1 reads another node's pod: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dn1", as("tok-n1"), nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"name":"p1"`) || strings.Contains(rec.Body.String(), `"name":"p2"`) {
		t.Errorf("n1 lists its pods: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/api/v1/pods", as("tok-n1"), nil); rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), "can only list/watch pods with spec.nodeName field selector") {
		t.Errorf("n1 lists every pod: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("DELETE", ns+"/pods/p1?gracePeriodSeconds=0", as("tok-root"), nil); rec.Code != http.StatusOK {
		t.Fatalf("delete p1: %d %s", rec.Code, rec.Body)
	}
	if rec := h.do("GET", ns+"/secrets/s1", as("tok-n1"), nil); rec.Code != http.StatusForbidden {
		t.Errorf("n1 reads s1 after the pod mounting it went: %d %s", rec.Code, rec.Body)
	}
}

// TestRequestHeaderPublished: the front proxy's CA, names and headers are
// published in kube-system/extension-apiserver-authentication under
// kube-apiserver's keys, for the cluster's members that trust the same
// proxy.
func TestRequestHeaderPublished(t *testing.T) {
	rh := &auth.RequestHeader{CAPEM: []byte("-----BEGIN CERTIFICATE-----\nproxy\n-----END CERTIFICATE-----\n"), AllowedNames: []string{"front-proxy-client"},
		UsernameHeaders: []string{"X-Remote-User"}, GroupHeaders: []string{"X-Remote-Group"}, ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), ClientCABundle: []byte("client-ca"), RequestHeader: rh})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	rec := h.do("GET", "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication", nil, nil)
	var cm struct{ Data map[string]string }
	if err := json.Unmarshal(rec.Body.Bytes(), &cm); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("extension-apiserver-authentication: %d %s", rec.Code, rec.Body)
	}
	want := map[string]string{
		"client-ca-file":                     "client-ca",
		"requestheader-client-ca-file":       string(rh.CAPEM),
		"requestheader-allowed-names":        `["front-proxy-client"]`,
		"requestheader-username-headers":     `["X-Remote-User"]`,
		"requestheader-uid-headers":          `[]`,
		"requestheader-group-headers":        `["X-Remote-Group"]`,
		"requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`,
	}
	for k, v := range want {
		if cm.Data[k] != v {
			t.Errorf("%s = %q, want %q", k, cm.Data[k], v)
		}
	}
	if len(cm.Data) != len(want) {
		t.Errorf("extension-apiserver-authentication holds %v", cm.Data)
	}
}
