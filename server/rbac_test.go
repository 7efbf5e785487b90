package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
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

// TestNodeRestriction: what a kubelet's identity may change is limited as
// kube's NodeRestriction admission limits it on kube-apiserver — its own
// Node (without the labels reserved to admins), its own Lease, the
// status of pods bound to it, mirror pods only, tokens only for its own
// pods — while the admin is not limited; kube's 403 texts.
func TestNodeRestriction(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-n1,system:node:n1,10,\"system:nodes\"\n", server.Config{})
	do := func(token, method, path, body string, more ...string) *httptest.ResponseRecorder {
		t.Helper()
		return h.do(method, path, as(token, more...), []byte(body))
	}
	forbidden := func(what string, rec *httptest.ResponseRecorder, text string) {
		t.Helper()
		if rec.Code != http.StatusForbidden || !strings.Contains(rec.Body.String(), text) {
			t.Errorf("%s: %d %s\nwant 403 with %q", what, rec.Code, rec.Body, text)
		}
	}
	const ns = "/api/v1/namespaces/default"

	// Nodes: its own, with its own labels.
	if rec := do("tok-n1", "POST", "/api/v1/nodes", `{"metadata":{"name":"n1","labels":{"kubernetes.io/hostname":"n1"}}}`); rec.Code != http.StatusCreated {
		t.Fatalf("n1 registers itself: %d %s", rec.Code, rec.Body)
	}
	forbidden("n1 registers n2", do("tok-n1", "POST", "/api/v1/nodes", `{"metadata":{"name":"n2"}}`), `node \"n1\" is not allowed to modify node \"n2\"`)
	forbidden("n1 gives itself a reserved label",
		do("tok-n1", "PATCH", "/api/v1/nodes/n1", `{"metadata":{"labels":{"node-restriction.kubernetes.io/trusted":"yes"}}}`, "Content-Type", "application/merge-patch+json"),
		`is not allowed to modify labels: node-restriction.kubernetes.io/trusted`)
	if rec := do("tok-root", "PATCH", "/api/v1/nodes/n1", `{"metadata":{"labels":{"node-restriction.kubernetes.io/trusted":"yes"}}}`, "Content-Type", "application/merge-patch+json"); rec.Code != http.StatusOK {
		t.Errorf("the admin labels n1: %d %s", rec.Code, rec.Body)
	}
	if rec := do("tok-n1", "PATCH", "/api/v1/nodes/n1/status", `{"status":{"capacity":{"cpu":"4"}}}`, "Content-Type", "application/merge-patch+json"); rec.Code != http.StatusOK {
		t.Errorf("n1 updates its status: %d %s", rec.Code, rec.Body)
	}

	// Pods: mirror pods bound to itself; the status of its own pods.
	pod := func(name, node string, mirror bool) string {
		ann := ""
		if mirror {
			ann = `,"annotations":{"kubernetes.io/config.mirror":"x"}`
		}
		return `{"metadata":{"name":"` + name + `"` + ann + `},"spec":{"nodeName":"` + node + `","containers":[{"name":"c","image":"busybox"}]}}`
	}
	forbidden("n1 creates an ordinary pod", do("tok-n1", "POST", ns+"/pods", pod("plain", "n1", false)), `can only create mirror pods`)
	forbidden("n1 creates a mirror pod for n2", do("tok-n1", "POST", ns+"/pods", pod("m2", "n2", true)), `node \"n1\" can only create pods with spec.nodeName set to itself`)
	// A mirror pod must be owned by its node (kube's rule since 1.17).
	rec := do("tok-root", "GET", "/api/v1/nodes/n1", "")
	var node struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(rec.Body.Bytes(), &node)
	mirror := `{"metadata":{"name":"m1","annotations":{"kubernetes.io/config.mirror":"x"},"ownerReferences":[{"apiVersion":"v1","kind":"Node","name":"n1","uid":"` + node.Metadata.UID + `","controller":true}]},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`
	if rec := do("tok-n1", "POST", ns+"/pods", mirror); rec.Code != http.StatusCreated {
		t.Errorf("n1 creates its mirror pod: %d %s", rec.Code, rec.Body)
	}
	if rec := do("tok-root", "POST", ns+"/pods", pod("other", "n2", false)); rec.Code != http.StatusCreated {
		t.Fatalf("the admin creates a pod on n2: %d %s", rec.Code, rec.Body)
	}
	forbidden("n1 writes the status of n2's pod",
		do("tok-n1", "PATCH", ns+"/pods/other/status", `{"status":{"phase":"Running"}}`, "Content-Type", "application/merge-patch+json"),
		`node \"n1\" can only update pod status for pods with spec.nodeName set to itself`)
	forbidden("n1 deletes n2's pod", do("tok-n1", "DELETE", ns+"/pods/other", ""), `node \"n1\" can only delete pods with spec.nodeName set to itself`)

	// Leases: its own.
	if rec := do("tok-root", "POST", "/api/v1/namespaces", `{"metadata":{"name":"kube-node-lease"}}`); rec.Code != http.StatusCreated && rec.Code != http.StatusConflict {
		t.Fatalf("kube-node-lease: %d %s", rec.Code, rec.Body)
	}
	lease := func(name string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"holderIdentity":"` + name + `","leaseDurationSeconds":40}}`
	}
	if rec := do("tok-n1", "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease("n1")); rec.Code != http.StatusCreated {
		t.Errorf("n1 creates its lease: %d %s", rec.Code, rec.Body)
	}
	forbidden("n1 creates n2's lease", do("tok-n1", "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", lease("n2")),
		`can only access node lease with the same name as the requesting node`)

	// A mirror pod may name no account or secret (kube's ServiceAccount
	// admission leaves mirror pods unchanged and checks that).
	withSA := strings.Replace(mirror, `"name":"m1"`, `"name":"m3"`, 1)
	withSA = strings.Replace(withSA, `"spec":{`, `"spec":{"serviceAccountName":"robot",`, 1)
	forbidden("n1 creates a mirror pod naming an account", do("tok-n1", "POST", ns+"/pods", withSA), `a mirror pod may not reference service accounts`)

	// Tokens: only bound to its own pods (the node authorizer lets it ask
	// for the accounts of pods bound to it; admission checks the binding).
	if rec := do("tok-root", "POST", ns+"/serviceaccounts", `{"metadata":{"name":"robot"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("serviceaccount: %d %s", rec.Code, rec.Body)
	}
	rec = do("tok-root", "POST", ns+"/pods", `{"metadata":{"name":"worker"},"spec":{"nodeName":"n1","serviceAccountName":"robot","containers":[{"name":"c","image":"busybox"}]}}`)
	if rec.Code != http.StatusCreated {
		t.Fatalf("the admin creates a pod on n1: %d %s", rec.Code, rec.Body)
	}
	var worker struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(rec.Body.Bytes(), &worker)
	forbidden("n1 asks for an unbound token", do("tok-n1", "POST", ns+"/serviceaccounts/robot/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`),
		`node requested token not bound to a pod`)
	bound := `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"apiVersion":"v1","kind":"Pod","name":"worker","uid":"` + worker.Metadata.UID + `"}}}`
	if rec := do("tok-n1", "POST", ns+"/serviceaccounts/robot/token", bound); rec.Code != http.StatusCreated {
		t.Errorf("n1 asks for a token bound to its pod: %d %s", rec.Code, rec.Body)
	}
}
