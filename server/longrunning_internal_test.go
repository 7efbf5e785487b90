package server

import (
	"net/http/httptest"
	"testing"
)

// TestLongRunning: the requests kube-apiserver's long-running check
// exempts from the in-flight limits, judged on the parsed path: names
// and namespaces that spell a subresource or "watch" are not exempt.
func TestLongRunning(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/v1/namespaces/default/configmaps?watch=true":     true,
		"/api/v1/watch/namespaces/default/configmaps":          true,
		"/apis/apps/v1/watch/deployments":                      true,
		"/api/v1/namespaces/default/pods/p/log":                true,
		"/api/v1/namespaces/default/pods/p/exec":               true,
		"/api/v1/namespaces/default/services/s/proxy/a/b":      true,
		"/api/v1/namespaces/default/configmaps?watch=false":    false,
		"/api/v1/namespaces/default/configmaps?w%61tch=1":      true,
		"/api/v1/namespaces/default/configmaps?limit=5&watch=": true, // as apimachinery reads a bool
		"/api/v1/namespaces/default/configmaps?limit=5":        false,
		"/api/v1/namespaces/default/configmaps?watch":          true,
		"/api/v1/namespaces/default/configmaps?%zz&watch=1":    true,
		"/api/v1/namespaces/default/configmaps/log":            false,
		"/api/v1/namespaces/proxy/configmaps/c":                false,
		"/apis/example.com/v1/namespaces/watch/widgets/w":      false,
		"/apis/example.com/v1/namespaces/default/widgets/exec": false,
		"/version": false,
		"/api/v1/namespaces/default/pods/p/status": false,
	} {
		if got := longRunning(httptest.NewRequest("GET", path, nil)); got != want {
			t.Errorf("%s: long-running %v, want %v", path, got, want)
		}
	}
}
