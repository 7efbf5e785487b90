package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// anonymousOnly is an AuthenticationConfiguration with no issuers whose
// anonymous section admits requests without credentials to /livez only.
const anonymousOnly = `apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
anonymous:
  enabled: true
  conditions:
  - path: /livez
`

// TestAuthenticationConfigAnonymous: the file's anonymous section limits
// anonymous requests to its paths, and may not be combined with
// --anonymous-auth (kube-apiserver's error); a file that does not
// validate stops start-up naming the field.
func TestAuthenticationConfigAnonymous(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "authn.yaml")
	if err := os.WriteFile(cfg, []byte(anonymousOnly), 0o600); err != nil {
		t.Fatal(err)
	}
	run := func(extra ...string) (*Main, error) {
		m := NewMain()
		args := append([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error", "--authentication-config", cfg}, extra...)
		if err := m.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		return m, m.Run(context.Background())
	}

	if _, err := run("--anonymous-auth=true"); err == nil || !strings.Contains(err.Error(), "--anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file") {
		t.Errorf("both set: %v", err)
	}

	m, err := run()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = m.Close() })
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(path string) int {
		resp, err := hc.Get("https://" + m.Addr + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// /livez is anonymous's once the bootstrap policy (public-info-viewer)
	// is in the RBAC cache.
	deadline := time.Now().Add(20 * time.Second)
	for code := get("/livez"); code != http.StatusOK; code = get("/livez") {
		if time.Now().After(deadline) {
			t.Fatalf("anonymous /livez: %d, want 200", code)
		}
		<-time.After(20 * time.Millisecond)
	}
	for _, path := range []string{"/readyz", "/version", "/api/v1/namespaces"} {
		if code := get(path); code != http.StatusUnauthorized {
			t.Errorf("anonymous %s: %d, want 401", path, code)
		}
	}

	if err := os.WriteFile(cfg, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt:\n- issuer: {url: http://idp.example.com}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := run(); err == nil || !strings.Contains(err.Error(), `jwt[0].issuer.url: Invalid value: "http://idp.example.com": URL scheme must be https`) {
		t.Errorf("an invalid file: %v", err)
	}
}
