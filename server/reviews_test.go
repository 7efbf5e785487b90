package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
)

// TestReviews: each review resource answers a create with the answer in
// status (201, nothing stored), and refuses malformed questions as
// kube-apiserver does.
func TestReviews(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	for _, c := range []struct {
		name, path, body string
		code             int
		want             []string
	}{
		{"who am I", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`,
			http.StatusCreated, []string{`"kind":"SelfSubjectReview"`, `"userInfo":{"username":"`}},
		{"may I", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"resourceAttributes":{"verb":"create","group":"apps","resource":"deployments","namespace":"default"}}}`,
			http.StatusCreated, []string{`"status":{"allowed":true}`}},
		{"may she", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane","nonResourceAttributes":{"verb":"get","path":"/healthz"}}}`,
			http.StatusCreated, []string{`"status":{"allowed":true}`}},
		{"may she here", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}}`,
			http.StatusCreated, []string{`"namespace":"default"`, `"allowed":true`}},
		{"what may I", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{"namespace":"default"}}`,
			http.StatusCreated, []string{`"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"]}]`, `"nonResourceRules":[{"verbs":["*"],"nonResourceURLs":["*"]}]`, `"incomplete":false`}},
		{"unknown token", "/apis/authentication.k8s.io/v1/tokenreviews",
			`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"nope"}}`,
			http.StatusCreated, []string{`"status":{"user":{}}`}},

		{"no token", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{}}`,
			http.StatusBadRequest, []string{"token is required for TokenReview in authentication"}},
		{"no attributes", "/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane"}}`,
			http.StatusUnprocessableEntity, []string{"exactly one of nonResourceAttributes or resourceAttributes must be specified"}},
		{"no subject", "/apis/authorization.k8s.io/v1/subjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`,
			http.StatusUnprocessableEntity, []string{"at least one of user or group must be specified"}},
		{"other namespace", "/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"LocalSubjectAccessReview","spec":{"user":"jane","resourceAttributes":{"verb":"get","resource":"pods","namespace":"kube-system"}}}`,
			http.StatusUnprocessableEntity, []string{`spec.resourceAttributes.namespace: Invalid value: \"kube-system\": must match metadata.namespace`}},
		{"rules without namespace", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
			`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","spec":{}}`,
			http.StatusBadRequest, []string{"no namespace on request"}},
	} {
		r := h.do("POST", c.path, ct, []byte(c.body))
		if r.Code != c.code {
			t.Errorf("%s: %d %s; want %d", c.name, r.Code, r.Body, c.code)
			continue
		}
		for _, w := range c.want {
			if !strings.Contains(r.Body.String(), w) {
				t.Errorf("%s: %s lacks %s", c.name, r.Body, w)
			}
		}
	}
	// Reviews are create-only: no GET of the collection (405), no route
	// for one (404, TestNamedPathOfCreateOnlyKind).
	if r := h.do("GET", "/apis/authentication.k8s.io/v1/selfsubjectreviews", nil, nil); r.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET selfsubjectreviews: %d; want 405", r.Code)
	}
}

// TestReviewsHaveNoTable: reviews and bindings have no Table form on
// kube-apiserver (their storage converts nothing to one), so a client
// asking only for a Table gets 406 — the e2e suite's "406 for a backend
// which does not implement metadata" spec — and one that also accepts
// JSON gets the object.
func TestReviewsHaveNoTable(t *testing.T) {
	h := refNewHarness(t)
	const table = "application/json;as=Table;v=v1;g=meta.k8s.io"
	ssar := []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","spec":{"nonResourceAttributes":{"path":"/","verb":"get"}}}`)
	for _, c := range []struct {
		path, accept string
		body         []byte
		code         int
		want         string
	}{
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", table, ssar, http.StatusNotAcceptable,
			`"message": "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"`},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", "application/json;as=Table;v=v1beta1;g=meta.k8s.io", ssar, http.StatusNotAcceptable, `"reason": "NotAcceptable"`},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", table + ", application/json", ssar, http.StatusCreated, `"kind":"SelfSubjectAccessReview"`},
		{"/apis/authentication.k8s.io/v1/tokenreviews", table, []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"abc"}}`),
			http.StatusNotAcceptable, `"reason": "NotAcceptable"`},
		{"/api/v1/namespaces/default/bindings", table, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"nope"},"target":{"name":"n1"}}`),
			http.StatusNotAcceptable, `"reason": "NotAcceptable"`},
	} {
		rec := h.do("POST", c.path, map[string]string{"Content-Type": "application/json", "Accept": c.accept}, c.body)
		if rec.Code != c.code || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("POST %s, Accept %s: %d %s; want %d with %s", c.path, c.accept, rec.Code, rec.Body, c.code, c.want)
		}
	}
	// A kind with a Table keeps it.
	if rec := h.do("GET", "/api/v1/namespaces", map[string]string{"Accept": table}, nil); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"kind":"Table"`) {
		t.Errorf("namespaces as a Table: %d %.300s", rec.Code, rec.Body)
	}
}

// TestReviewsAsKube: the review storages' finer points, as kube 1.35's:
// a review's selectors reach the authorizer (the Node authorizer lets a
// node list its own pods by spec.nodeName) and one that does not parse is
// said so; the system's metadata fields a client sends are dropped
// before "metadata must be empty"; the rules review and who-am-I answer
// with new objects; a binding to a missing role is refused naming
// "roles", as kube's escalation check reads it through its storage.
func TestReviewsAsKube(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-alice,alice,2\n", server.Config{})
	root := as("tok-root")
	const sars = "/apis/authorization.k8s.io/v1/subjectaccessreviews"
	review := func(attrs string) map[string]any {
		t.Helper()
		r := h.do("POST", sars, root, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"system:node:n1","groups":["system:nodes"],"resourceAttributes":`+attrs+`}}`))
		if r.Code != http.StatusCreated {
			t.Fatalf("review %s: %d %s", attrs, r.Code, r.Body)
		}
		var out map[string]any
		_ = json.Unmarshal(r.Body.Bytes(), &out)
		return out
	}
	if got := review(`{"verb":"list","resource":"pods","fieldSelector":{"rawSelector":"spec.nodeName=n1"}}`); refDig(got, "status", "allowed") != true {
		t.Errorf("a node listing its own pods by field selector: %v; want allowed", got["status"])
	}
	if got := review(`{"verb":"list","resource":"pods","fieldSelector":{"requirements":[{"key":"spec.nodeName","operator":"In","values":["n1"]}]}}`); refDig(got, "status", "allowed") != true {
		t.Errorf("the same by requirements: %v; want allowed", got["status"])
	}
	if got := review(`{"verb":"list","resource":"pods"}`); refDig(got, "status", "allowed") == true {
		t.Errorf("a node listing every pod: %v; want not allowed", got["status"])
	}
	got := review(`{"verb":"list","resource":"pods","labelSelector":{"rawSelector":"a in (b"}}`)
	if e, _ := refDig(got, "status", "evaluationError").(string); !strings.Contains(e, "spec.resourceAttributes.labelSelector ignored due to parse error") {
		t.Errorf("an unparsable label selector: %v; want it named in evaluationError", got["status"])
	}

	// kube names the kind of the decoded internal object, which has none.
	r := h.do("POST", sars, root, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":{"user":"jane"}}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `"message":".authorization.k8s.io \"\" is invalid: `) {
		t.Errorf("an invalid review: %d %s; want kube's message naming no kind", r.Code, r.Body)
	}
	r = h.do("POST", sars, root, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","metadata":{"namespace":"foo","uid":"abc","creationTimestamp":"2020-01-02T03:04:05Z"},"spec":{"user":"jane","nonResourceAttributes":{"verb":"get","path":"/healthz"}}}`))
	if r.Code != http.StatusCreated || strings.Contains(r.Body.String(), `"abc"`) || strings.Contains(r.Body.String(), `"foo"`) {
		t.Errorf("a review with system metadata: %d %s; want 201 without it", r.Code, r.Body)
	}
	r = h.do("POST", "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", root, []byte(`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectRulesReview","metadata":{"name":"x"},"spec":{"namespace":"default"}}`))
	if r.Code != http.StatusCreated || !strings.Contains(r.Body.String(), `"metadata":{},"spec":{},"status":{`) {
		t.Errorf("rules review: %d %s; want a new object with status alone", r.Code, r.Body)
	}
	r = h.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", root, []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview","metadata":{"name":"x","labels":{"a":"b"}}}`))
	if r.Code != http.StatusCreated || !strings.Contains(r.Body.String(), `"metadata":{"creationTimestamp":"`) || strings.Contains(r.Body.String(), `"name":"x"`) {
		t.Errorf("who am I: %d %s; want a new object stamped now", r.Code, r.Body)
	}

	for path, body := range map[string]string{
		"clusterroles":        `{"metadata":{"name":"binder"},"rules":[{"apiGroups":["rbac.authorization.k8s.io"],"resources":["rolebindings","clusterrolebindings"],"verbs":["create"]}]}`,
		"clusterrolebindings": `{"metadata":{"name":"alice-binder"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"binder"},"subjects":[{"kind":"User","name":"alice"}]}`,
	} {
		if r := h.do("POST", "/apis/rbac.authorization.k8s.io/v1/"+path, root, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", path, r.Code, r.Body)
		}
	}
	for kind, want := range map[string]string{"Role": `roles.rbac.authorization.k8s.io \"nope\" not found`, "ClusterRole": `clusterroles.rbac.authorization.k8s.io \"nope\" not found`} {
		body := `{"metadata":{"name":"b-` + strings.ToLower(kind) + `"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"` + kind + `","name":"nope"},"subjects":[{"kind":"User","name":"alice"}]}`
		var r *httptest.ResponseRecorder
		h.waitFor("alice's binding in force", func() bool {
			r = h.do("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", as("tok-alice"), []byte(body))
			return r.Code != http.StatusForbidden
		})
		if r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), want) {
			t.Errorf("binding to a missing %s: %d %s; want 404 %s", kind, r.Code, r.Body, want)
		}
	}
	// A cluster binding of a Role: the check reads the Role without a
	// namespace, before validation would refuse the kind.
	r = h.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", as("tok-alice"),
		[]byte(`{"metadata":{"name":"crbx"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"writer"},"subjects":[{"kind":"User","name":"x","apiGroup":"rbac.authorization.k8s.io"}]}`))
	if r.Code != http.StatusBadRequest || !strings.Contains(r.Body.String(), `"message":"Namespace parameter required."`) {
		t.Errorf("cluster binding of a Role: %d %s; want 400 Namespace parameter required.", r.Code, r.Body)
	}
}

// TestReviewsPassAdmission: a review is a create, and kube's create
// handler mutates it and its storage validates it with the admission
// chain before answering: a ValidatingAdmissionPolicy on the reviews
// refuses every one of them, and its match conditions see the review.
func TestReviewsPassAdmission(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{})
	root := as("tok-root")
	const ar = "/apis/admissionregistration.k8s.io/v1"
	mustDo := func(path, body string) {
		t.Helper()
		if r := h.do("POST", path, root, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, r.Code, r.Body)
		}
	}
	mustDo(ar+"/validatingadmissionpolicies", `{"metadata":{"name":"no-reviews"},"spec":{
		"matchConstraints":{"resourceRules":[
		 {"apiGroups":["authentication.k8s.io","authorization.k8s.io"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["*"]}]},
		"validations":[{"expression":"false","messageExpression":"'no ' + object.kind"}]}}`)
	mustDo(ar+"/validatingadmissionpolicybindings", `{"metadata":{"name":"no-reviews"},"spec":{"policyName":"no-reviews","validationActions":["Deny"]}}`)
	reviews := []struct{ path, body, kind string }{
		{"/apis/authentication.k8s.io/v1/tokenreviews", `{"spec":{"token":"x"}}`, "TokenReview"},
		{"/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`, "SelfSubjectReview"},
		{"/apis/authorization.k8s.io/v1/subjectaccessreviews", `{"spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods"}}}`, "SubjectAccessReview"},
		{"/apis/authorization.k8s.io/v1/selfsubjectaccessreviews", `{"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, "SelfSubjectAccessReview"},
		{"/apis/authorization.k8s.io/v1/namespaces/default/localsubjectaccessreviews", `{"spec":{"user":"u","resourceAttributes":{"verb":"get","resource":"pods","namespace":"default"}}}`, "LocalSubjectAccessReview"},
		{"/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", `{"spec":{"namespace":"default"}}`, "SelfSubjectRulesReview"},
	}
	h.waitFor("the policy to refuse a TokenReview", func() bool {
		r := h.do("POST", reviews[0].path, root, []byte(reviews[0].body))
		return r.Code == http.StatusUnprocessableEntity
	})
	for _, rv := range reviews {
		r := h.do("POST", rv.path, root, []byte(rv.body))
		if want := "ValidatingAdmissionPolicy 'no-reviews' with binding 'no-reviews' denied request: no " + rv.kind; r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
			t.Errorf("%s: %d %s; want 422 with %q", rv.kind, r.Code, r.Body, want)
		}
	}
	// The review's own checks come first, as in kube's storage.
	if r := h.do("POST", reviews[0].path, root, []byte(`{"spec":{}}`)); r.Code != http.StatusBadRequest {
		t.Errorf("a TokenReview without a token: %d %s; want its 400 before admission", r.Code, r.Body)
	}
}
