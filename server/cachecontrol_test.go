package server_test

import (
	"net/http"
	"strings"
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

// TestVersionAccept: /version's route produces JSON alone, as kube's: an
// Accept without */* or application/json is its router's 406.
func TestVersionAccept(t *testing.T) {
	h := refNewHarness(t)
	for accept, code := range map[string]int{
		"": http.StatusOK, "application/json": http.StatusOK, "*/*": http.StatusOK, "application/vnd.kubernetes.protobuf, */*": http.StatusOK,
		"application/vnd.kubernetes.protobuf": http.StatusNotAcceptable, "application/yaml": http.StatusNotAcceptable,
		"text/html": http.StatusNotAcceptable, "application/*": http.StatusNotAcceptable,
	} {
		hd := map[string]string{}
		if accept != "" {
			hd["Accept"] = accept
		}
		rec := h.do("GET", "/version", hd, nil)
		if rec.Code != code {
			t.Errorf("/version with Accept %q: %d; want %d", accept, rec.Code, code)
		}
		if code == http.StatusNotAcceptable && accept == "text/html" && !strings.Contains(rec.Body.String(), `406: Not Acceptable\n\nAvailable representations: application/json`) {
			t.Errorf("/version 406 body %s; want the router's", rec.Body)
		}
	}
}
