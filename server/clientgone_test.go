package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/server"
)

// TestClientGone: a request whose client has gone (its context cancelled,
// as HTTP/2 does on RST_STREAM or a closed connection) is answered as
// kube-apiserver's handlers answer it, 504 with reason Timeout, and it is
// not logged as the server's failure: the server did nothing wrong.
func TestClientGone(t *testing.T) {
	var logged bytes.Buffer
	srv := aliceAndRootServer(t, server.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	h := srv.Handler()
	body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"gone"},"data":{"a":"b"}}`
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/api/v1/namespaces/default/configmaps", body},
		{"GET", "/api/v1/namespaces/default/configmaps", ""},
		{"GET", "/api/v1/namespaces/default/configmaps/gone", ""},
	} {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		req := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body)).WithContext(ctx)
		req.Header.Set("Authorization", "Bearer tok-root")
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		var st metav1.Status
		_ = json.Unmarshal(rec.Body.Bytes(), &st)
		if rec.Code != http.StatusGatewayTimeout || st.Reason != metav1.StatusReasonTimeout {
			t.Errorf("%s %s with its client gone: %d %s, want 504 Timeout", c.method, c.path, rec.Code, rec.Body)
		}
	}
	// The create whose client was gone before it began wrote nothing.
	req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps/gone", nil)
	req.Header.Set("Authorization", "Bearer tok-root")
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNotFound {
		t.Errorf("get after the abandoned create: %d %s, want 404", rec.Code, rec.Body)
	}
	if strings.Contains(logged.String(), "level=ERROR") {
		t.Errorf("a gone client's request was logged as an error:\n%s", logged.String())
	}
}

// TestTooLargeRVNotLoggedAsError: a read at a revision the store has not
// reached is answered with kube's 504 (retry after a second) and logged
// as no failure of the server's.
func TestTooLargeRVNotLoggedAsError(t *testing.T) {
	var logged bytes.Buffer
	srv := aliceAndRootServer(t, server.Config{Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	req := httptest.NewRequest("GET", "/api/v1/namespaces/default/configmaps?resourceVersion=999999999&resourceVersionMatch=NotOlderThan", nil)
	req.Header.Set("Authorization", "Bearer tok-root")
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusGatewayTimeout || !strings.Contains(rec.Body.String(), "Too large resource version: 999999999") || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("list at a future revision: %d %s (Retry-After %q); want 504 Too large resource version, Retry-After 1", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	if strings.Contains(logged.String(), "level=ERROR") {
		t.Errorf("a too-large resourceVersion was logged as an error:\n%s", logged.String())
	}
}
