package server_test

import (
	"encoding/json"
	"net/http"
	"sort"
	"strings"
	"testing"
)

// TestDiscoveryWithTrailingSlash: the discovery documents answer with and
// without a final slash (/apis/, /apis/apps/, /apis/apps/v1/, /api/,
// /api/v1/), as kube-apiserver serves them — the upstream e2e suite reads
// /apis/ — and the same document both ways.
func TestDiscoveryWithTrailingSlash(t *testing.T) {
	h := refNewHarness(t)
	for _, p := range []string{"/api", "/apis", "/apis/apps", "/apis/apps/v1", "/api/v1"} {
		plain := h.do("GET", p, nil, nil)
		slash := h.do("GET", p+"/", nil, nil)
		if plain.Code != http.StatusOK || slash.Code != http.StatusOK {
			t.Errorf("%s: %d, %s/: %d", p, plain.Code, p, slash.Code)
			continue
		}
		if plain.Body.String() != slash.Body.String() {
			t.Errorf("%s/ answers %.200s, %s answers %.200s", p, slash.Body, p, plain.Body)
		}
	}
	if r := h.do("GET", "/apis/nope/", nil, nil); r.Code != http.StatusNotFound {
		t.Errorf("/apis/nope/: %d, want 404", r.Code)
	}
}

// TestLegacyDiscoveryOrderAsKube: a group-version's resource list comes
// in kube-apiserver's order, paths sorted (deployments/scale before
// deployments/status, namespaces/finalize before namespaces/status), as
// its recording of /api/v1 shows.
func TestLegacyDiscoveryOrderAsKube(t *testing.T) {
	h := refNewHarness(t)
	c := refLoad(t, "discovery/api-v1")
	names := func(doc []byte) []string {
		var l struct{ Resources []struct{ Name string } }
		if err := json.Unmarshal(doc, &l); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, r := range l.Resources {
			out = append(out, r.Name)
		}
		return out
	}
	want := names(c.Response.Body)
	got := names(h.do("GET", "/api/v1", map[string]string{"Accept": "application/json"}, nil).Body.Bytes())
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("/api/v1 resources:\n%v\nwant kube's order:\n%v", got, want)
	}
	apps := names(h.do("GET", "/apis/apps/v1", map[string]string{"Accept": "application/json"}, nil).Body.Bytes())
	if !sort.StringsAreSorted(apps) {
		t.Errorf("/apis/apps/v1 resources %v; want them sorted by path", apps)
	}
}

// TestLegacyDiscoveryNegotiated: the legacy discovery documents are
// negotiated as kube's discovery handlers negotiate them: JSON, YAML or
// Protobuf; a group-version's list refuses what its route does not
// produce (the router's 406) and every view (the negotiation's 406), and
// a group's document has no aggregated form.
func TestLegacyDiscoveryNegotiated(t *testing.T) {
	h := refNewHarness(t)
	const aggregated = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	for _, c := range []struct {
		path, accept string
		code         int
		ct, want     string
	}{
		{"/api", "application/yaml", http.StatusOK, "application/yaml", "kind: APIVersions"},
		{"/apis", "application/yaml", http.StatusOK, "application/yaml", "kind: APIGroupList"},
		{"/apis/apps", "application/yaml", http.StatusOK, "application/yaml", "kind: APIGroup"},
		{"/apis/apps/v1", "application/yaml", http.StatusOK, "application/yaml", "kind: APIResourceList"},
		{"/api/v1", "application/vnd.kubernetes.protobuf", http.StatusOK, "application/vnd.kubernetes.protobuf", "k8s\x00"},
		{"/apis/apps/v1", "text/html", http.StatusNotAcceptable, "application/json", `406: Not Acceptable\n\nAvailable representations: application/json, application/yaml, application/vnd.kubernetes.protobuf`},
		{"/apis/apps/v1", "application/json;as=Table;v=v1;g=meta.k8s.io", http.StatusNotAcceptable, "application/json", "only the following media types are accepted"},
		{"/apis/apps/v1", aggregated, http.StatusNotAcceptable, "application/json", "only the following media types are accepted"},
		{"/apis/apps", aggregated, http.StatusNotAcceptable, "application/json", "only the following media types are accepted"},
		{"/apis/", aggregated, http.StatusNotAcceptable, "application/json", "only the following media types are accepted"},
		{"/apis/", aggregated + ",application/json", http.StatusOK, "application/json", `"kind":"APIGroupList"`},
		{"/apis", aggregated, http.StatusOK, aggregated, `"kind":"APIGroupDiscoveryList"`},
		{"/apis/apps/v1", aggregated + ",application/json", http.StatusOK, "application/json", `"kind":"APIResourceList"`},
	} {
		rec := h.do("GET", c.path, map[string]string{"Accept": c.accept}, nil)
		if rec.Code != c.code || rec.Header().Get("Content-Type") != c.ct || !strings.Contains(rec.Body.String(), c.want) {
			t.Errorf("GET %s, Accept %s: %d %s %.200q; want %d %s with %q", c.path, c.accept, rec.Code, rec.Header().Get("Content-Type"), rec.Body, c.code, c.ct, c.want)
		}
	}
}

// TestDiscoveryMethodsAsKube: kube's router has a GET route alone for
// /version, /api, /api/v1 and a local group-version's list (any other
// method: 405), and no route for a group-version nobody serves (404);
// kube-aggregator's /apis and /apis/<group> handlers, and kube-openapi's,
// answer any method.
func TestDiscoveryMethodsAsKube(t *testing.T) {
	h := refNewHarness(t)
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"HEAD", "/version", http.StatusMethodNotAllowed},
		{"POST", "/api", http.StatusMethodNotAllowed},
		{"OPTIONS", "/api/v1", http.StatusMethodNotAllowed},
		{"HEAD", "/apis/apps/v1", http.StatusMethodNotAllowed},
		{"POST", "/apis/nope.example.com/v1", http.StatusNotFound},
		{"POST", "/apis", http.StatusOK},
		{"HEAD", "/apis/apps", http.StatusOK},
		{"OPTIONS", "/apis/", http.StatusOK},
		// kube-openapi's handlers sit on the plain mux too, serving
		// their documents whatever the method (HEAD without the body).
		{"HEAD", "/openapi/v2", http.StatusOK},
		{"HEAD", "/openapi/v3", http.StatusOK},
		{"HEAD", "/openapi/v3/api/v1", http.StatusOK},
		{"POST", "/openapi/v3", http.StatusOK},
		// The index has no slash form: kube-aggregator looks for a
		// document named "".
		{"GET", "/openapi/v3/", http.StatusNotFound},
	} {
		if r := h.do(c.method, c.path, nil, nil); r.Code != c.code {
			t.Errorf("%s %s: %d %.200s; want %d", c.method, c.path, r.Code, r.Body, c.code)
		}
	}
}
