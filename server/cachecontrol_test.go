package server_test

import (
	"net/http"
	"testing"
)

// TestCacheControlAsKube: every answer says "no-cache, private", as
// kube-apiserver's WithCacheControl filter has it, so no shared cache
// keeps one user's answer for another; aggregated discovery says
// "public" (it is revalidated by its ETag), and errors are private too.
func TestCacheControlAsKube(t *testing.T) {
	h := refNewHarness(t)
	for _, c := range []struct {
		path, accept, want string
		code               int
	}{
		{"/api/v1/namespaces/default/configmaps", "application/json", "no-cache, private", http.StatusOK},
		{"/api/v1/namespaces/default/configmaps/absent", "application/json", "no-cache, private", http.StatusNotFound},
		{"/version", "application/json", "no-cache, private", http.StatusOK},
		{"/apis/apps/v1", "application/json", "no-cache, private", http.StatusOK},
		{"/apis", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList", "public", http.StatusOK},
	} {
		rec := h.do("GET", c.path, map[string]string{"Accept": c.accept}, nil)
		if rec.Code != c.code || rec.Header().Get("Cache-Control") != c.want {
			t.Errorf("GET %s (%s): %d, Cache-Control %q; want %d and %q", c.path, c.accept, rec.Code, rec.Header().Get("Cache-Control"), c.code, c.want)
		}
	}
}
