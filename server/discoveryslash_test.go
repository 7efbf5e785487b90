package server_test

import (
	"net/http"
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
