package server_test

import (
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/server"
)

// TestInvalidTimeoutAnywhere: an unparsable ?timeout= is refused with
// kube-apiserver's 400 on every request that is not long-running —
// /version and health included, and before authentication (the e2e
// suite's request-timeout spec asks /version) — while a watch, which has
// no request deadline, goes on to be authorized.
func TestInvalidTimeoutAnywhere(t *testing.T) {
	srv := aliceAndRootServer(t, server.Config{})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	root := map[string]string{"Authorization": "Bearer tok-root"}
	const want = `invalid timeout specified in the request URL - time: invalid duration "invalid"`
	for _, c := range []struct {
		path    string
		headers map[string]string
	}{
		{"/version?timeout=invalid", root},
		{"/healthz?timeout=invalid", root},
		{"/api/v1/namespaces?timeout=invalid", root},
		{"/api/v1/namespaces?timeout=invalid", nil},
	} {
		rec := h.do("GET", c.path, c.headers, nil)
		var st metav1.Status
		if err := json.Unmarshal(rec.Body.Bytes(), &st); err != nil || rec.Code != http.StatusBadRequest ||
			st.Reason != metav1.StatusReasonBadRequest || st.Message != want {
			t.Errorf("GET %s (credentials %v): %d %s", c.path, c.headers != nil, rec.Code, rec.Body)
		}
	}
	// A watch is long-running: the timeout is not its deadline, and the
	// caller without credentials is refused by authentication instead.
	if rec := h.do("GET", "/api/v1/namespaces?watch=1&timeout=invalid", nil, nil); rec.Code != http.StatusUnauthorized {
		t.Errorf("watch without credentials, invalid timeout: %d %s, want 401", rec.Code, rec.Body)
	}
	if rec := h.do("GET", "/version?timeout=5s", root, nil); rec.Code != http.StatusOK {
		t.Errorf("/version?timeout=5s: %d %s", rec.Code, rec.Body)
	}
}
