package server_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
)

// TestReadOptionsAsKube: request options kube-apiserver 1.35's read
// handlers check before they answer: a legacy named watch's field
// selector must name its object, a Table watch's includeObject is checked
// before the stream, ?export is refused on a get, ?pretty is read as a Go
// boolean and only a Mozilla/5.0 browser gets indentation unasked, and
// events.k8s.io has no "source" field label.
func TestReadOptionsAsKube(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"p0"}}`, http.StatusCreated)
	for _, c := range []struct {
		path    string
		headers map[string]string
		code    int
		want    string
	}{
		{"/api/v1/watch/namespaces/default/configmaps/p0?timeoutSeconds=1&fieldSelector=metadata.name%3Dp1", nil,
			http.StatusBadRequest, "fieldSelector metadata.name doesn't match requested name"},
		{"/api/v1/watch/namespaces/default/configmaps/p0?timeoutSeconds=1&fieldSelector=metadata.namespace%3Ddefault", nil,
			http.StatusBadRequest, "fieldSelector metadata.name doesn't match requested name"},
		{"/api/v1/watch/namespaces/default/configmaps/p0?timeoutSeconds=1&fieldSelector=metadata.name%3Dp0", nil,
			http.StatusOK, `"type":"ADDED"`},
		{cms + "?watch=1&timeoutSeconds=1&includeObject=bogus", map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"},
			http.StatusBadRequest, "Unable to convert to Table as requested"},
		{cms + "/p0?export=true", nil, http.StatusBadRequest, "the export parameter, deprecated since v1.14, is no longer supported"},
		{cms + "/p0?export=maybe", nil, http.StatusBadRequest, "no longer supported"}, // anything but 0 and false is true
		{cms + "/p0?export=false", nil, http.StatusOK, `"name":"p0"`},
		{cms + "/p0?pretty=True", nil, http.StatusOK, "{\n  \"kind\": \"ConfigMap\""},
		{cms + "/p0?pretty=0", map[string]string{"User-Agent": "curl/8.0"}, http.StatusOK, `{"kind":"ConfigMap"`},
		{cms + "/p0", map[string]string{"User-Agent": "Mozilla/4.0"}, http.StatusOK, `{"kind":"ConfigMap"`},
		// pretty=1 on the Accept entry, as kube's negotiation reads it.
		{cms + "/p0?pretty=0", map[string]string{"Accept": "application/json;pretty=1"}, http.StatusOK, "{\n  \"kind\": \"ConfigMap\""},
		{cms + "/p0", map[string]string{"User-Agent": "Mozilla/5.0 (X11)"}, http.StatusOK, "{\n  \"kind\": \"ConfigMap\""},
		{"/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=source%3Dkubelet", nil, http.StatusBadRequest, "field label not supported: source"},
		{"/api/v1/namespaces/default/events?fieldSelector=source%3Dkubelet", nil, http.StatusOK, `"kind":"EventList"`},
	} {
		r := h.do("GET", c.path, c.headers, nil)
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.want) {
			t.Errorf("GET %s %v: %d %.300s; want %d with %q", c.path, c.headers, r.Code, r.Body, c.code, c.want)
		}
	}
}

// TestWatchOfUnwatchableKind: a watch of a kind that lists but does not
// watch is kube's 405 naming it.
func TestWatchOfUnwatchableKind(t *testing.T) {
	h := refNewHarness(t)
	r := h.do("GET", "/api/v1/componentstatuses?watch=1", nil, nil)
	if r.Code != http.StatusMethodNotAllowed || !strings.Contains(r.Body.String(), `"message":"watch is not supported on resources of kind \"componentstatuses\""`) ||
		!strings.Contains(r.Body.String(), `"details":{"kind":"componentstatuses"}`) {
		t.Errorf("watch of componentstatuses: %d %s", r.Code, r.Body)
	}
}

// TestPatchOfSubresourceWithoutPatch: a subresource whose discovery lists
// no patch has no PATCH route (kube's finalize storage only updates).
func TestPatchOfSubresourceWithoutPatch(t *testing.T) {
	h := refNewHarness(t)
	for _, path := range []string{"/api/v1/namespaces/default/finalize", "/api/v1/namespaces/default/pods/p/log", "/api/v1/namespaces/default/serviceaccounts/default/token"} {
		r := h.do("PATCH", path, map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"labels":{"a":"b"}}}`))
		if r.Code != http.StatusMethodNotAllowed {
			t.Errorf("PATCH %s: %d %s; want 405", path, r.Code, r.Body)
		}
	}
	if r := h.do("PATCH", "/api/v1/namespaces/default/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"labels":{"a":"b"}}}`)); r.Code != http.StatusOK {
		t.Errorf("PATCH of a namespace's status: %d %s; want 200", r.Code, r.Body)
	}
	// Nor a GET route for one that is not read.
	if r := h.do("GET", "/api/v1/namespaces/default/finalize", nil, nil); r.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET of a namespace's finalize: %d %s; want 405", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/namespaces/default/status", nil, nil); r.Code != http.StatusOK {
		t.Errorf("GET of a namespace's status: %d %s; want 200", r.Code, r.Body)
	}
}

// TestNamedPathOfCreateOnlyKind: a kind that is only created has no route
// for one object: 404 for every method, as kube; its collection's other
// methods are 405.
func TestNamedPathOfCreateOnlyKind(t *testing.T) {
	h := refNewHarness(t)
	for _, path := range []string{"/apis/authentication.k8s.io/v1/tokenreviews/x", "/apis/authentication.k8s.io/v1/selfsubjectreviews/x",
		"/api/v1/namespaces/default/bindings/x", "/apis/authorization.k8s.io/v1/subjectaccessreviews/x"} {
		for _, method := range []string{"GET", "POST", "DELETE"} {
			if r := h.do(method, path, map[string]string{"Content-Type": "application/json"}, []byte(`{}`)); r.Code != http.StatusNotFound {
				t.Errorf("%s %s: %d %s; want 404", method, path, r.Code, r.Body)
			}
		}
	}
	if r := h.do("GET", "/apis/authentication.k8s.io/v1/tokenreviews", nil, nil); r.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET of tokenreviews: %d %s; want 405", r.Code, r.Body)
	}
}

// TestAdmissionNeighboursAsKube: three answers next to kube's admission
// plugins: a privileged container is allowed (kube-apiserver as kubeadm,
// kind and k3s start it), the system PriorityClasses cannot be deleted,
// and creating a name whose object is being deleted says so.
func TestAdmissionNeighboursAsKube(t *testing.T) {
	h := refNewHarness(t)
	r := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"priv"},"spec":{"containers":[{"name":"c","image":"cni","securityContext":{"privileged":true}}]}}`))
	if r.Code != http.StatusCreated {
		t.Errorf("a privileged pod: %d %s; want 201", r.Code, r.Body)
	}
	r = h.do("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", nil, nil)
	if r.Code != http.StatusForbidden || !strings.Contains(r.Body.String(), "this is a system priority class and cannot be deleted") {
		t.Errorf("deleting system-node-critical: %d %s; want 403", r.Code, r.Body)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"going","finalizers":["example.com/hold"]}}`, http.StatusCreated)
	h.mustDo("DELETE", "/api/v1/namespaces/default/configmaps/going", "", "", http.StatusOK)
	for _, q := range []string{"", "?dryRun=All"} {
		r = h.do("POST", "/api/v1/namespaces/default/configmaps"+q, map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"going"}}`))
		if r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), `"message":"object is being deleted: configmaps \"going\" already exists"`) {
			t.Errorf("creating a name being deleted%s: %d %s", q, r.Code, r.Body)
		}
	}
}

// TestAdmissionPlainErrorIs500: an admission plugin's error that is not
// an API error reaches the client as kube's response writer turns it: 500,
// no reason, its text (the quota plugin's limited-resource scopes).
func TestAdmissionPlainErrorIs500(t *testing.T) {
	file := filepath.Join(t.TempDir(), "admission.yaml")
	if err := os.WriteFile(file, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ResourceQuota
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: ResourceQuotaConfiguration
    limitedResources:
    - resource: pods
      matchScopes:
      - scopeName: PriorityClass
        operator: In
        values: ["system-node-critical"]
`), 0o600); err != nil {
		t.Fatal(err)
	}
	h := refNewHarnessConfig(t, func(cfg *server.Config) { cfg.Admission.ConfigFile = file })
	r := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"crit"},"spec":{"priorityClassName":"system-node-critical","containers":[{"name":"c","image":"x"}]}}`))
	if r.Code != http.StatusInternalServerError || strings.Contains(r.Body.String(), `"reason"`) ||
		!strings.Contains(r.Body.String(), `"message":"insufficient quota to match these scopes: [{PriorityClass In [system-node-critical]}]"`) {
		t.Errorf("a pod in a limited scope without quota: %d %s", r.Code, r.Body)
	}
}
