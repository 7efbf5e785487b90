package server_test

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestRootPaths: / and /index.html answer as kube-apiserver's index, 200
// with the paths served, sorted and indented: the discovery paths of every
// group-version, each health check, the other fixed endpoints; no route
// pattern and no trailing-slash twin but /apis/.
func TestRootPaths(t *testing.T) {
	h := refNewHarness(t)
	for _, path := range []string{"/", "/index.html"} {
		r := h.do("GET", path, nil, nil)
		var out struct{ Paths []string }
		if r.Code != http.StatusOK || r.Header().Get("Content-Type") != "application/json" || !strings.HasPrefix(r.Body.String(), "{\n  \"paths\": [\n") {
			t.Fatalf("GET %s: %d %q %.80s", path, r.Code, r.Header().Get("Content-Type"), r.Body)
		}
		if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		if !slices.IsSorted(out.Paths) {
			t.Errorf("GET %s: paths not sorted", path)
		}
		for _, want := range []string{"/api", "/api/v1", "/apis", "/apis/", "/apis/apps", "/apis/apps/v1", "/apis/autoscaling/v2",
			"/healthz", "/healthz/ping", "/livez/log", "/readyz/poststarthook/rbac/bootstrap-roles", "/openapi/v2", "/openapi/v3", "/version"} {
			if !slices.Contains(out.Paths, want) {
				t.Errorf("GET %s: %s not listed", path, want)
			}
		}
		for _, p := range out.Paths {
			if strings.ContainsAny(p, ":*") || p == "/" || strings.HasSuffix(p, "/") && p != "/apis/" {
				t.Errorf("GET %s lists %q", path, p)
			}
		}
	}
}
