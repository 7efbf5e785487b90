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
