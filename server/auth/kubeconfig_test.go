package auth

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

func TestKubeconfigWorksWithClientGo(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	a, err := NewAuthenticator(Options{ClientCA: p.CAPool})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.Authenticate(r)
		if !ok || err != nil {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		io.WriteString(w, u.Name)
	}))
	ts.TLS = p.ServerTLSConfig()
	ts.StartTLS()
	defer ts.Close()

	path := filepath.Join(t.TempDir(), "sub", "kubeconfig")
	if err := WriteKubeconfig(path, ts.URL, p); err != nil {
		t.Fatal(err)
	}
	if m := fileMode(t, path); m != 0o600 {
		t.Errorf("kubeconfig mode = %o, want 600", m)
	}

	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.CurrentContext != "tabula" {
		t.Errorf("current-context = %q", cfg.CurrentContext)
	}
	ctx := cfg.Contexts["tabula"]
	if ctx == nil || ctx.Cluster != "tabula" || ctx.AuthInfo != "tabula-admin" || ctx.Namespace != "default" {
		t.Fatalf("context = %+v", ctx)
	}
	if c := cfg.Clusters["tabula"]; c == nil || c.Server != ts.URL || !bytes.Equal(c.CertificateAuthorityData, p.CAPEM) {
		t.Fatalf("cluster = %+v", c)
	}

	cc := clientcmd.NewDefaultClientConfig(*cfg, &clientcmd.ConfigOverrides{})
	if ns, _, err := cc.Namespace(); err != nil || ns != "default" {
		t.Errorf("namespace = %q, %v", ns, err)
	}
	restCfg, err := cc.ClientConfig()
	if err != nil {
		t.Fatal(err)
	}
	client, err := rest.HTTPClientFor(restCfg)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := client.Get(ts.URL + "/version")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "tabula-admin" {
		t.Fatalf("request via kubeconfig: %d %q", resp.StatusCode, body)
	}
}

func TestWriteKubeconfigRewritesOnlyOnChange(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", p); err != nil {
		t.Fatal(err)
	}
	st1, _ := os.Stat(path)

	// Same inputs: the file is left alone (a rewrite would be a new inode,
	// since writes go through rename), but a loosened mode is tightened.
	if err := os.Chmod(path, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteKubeconfig(path, "https://127.0.0.1:6443", p); err != nil {
		t.Fatal(err)
	}
	st2, _ := os.Stat(path)
	if !os.SameFile(st1, st2) {
		t.Error("unchanged kubeconfig was rewritten")
	}
	if st2.Mode().Perm() != 0o600 {
		t.Errorf("mode = %o, want 600", st2.Mode().Perm())
	}

	if err := WriteKubeconfig(path, "https://tabula.example.com:6443", p); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.LoadFromFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Clusters["tabula"].Server; got != "https://tabula.example.com:6443" {
		t.Errorf("server = %q after URL change", got)
	}
	if fileMode(t, path) != 0o600 {
		t.Error("rewritten kubeconfig not 0600")
	}

	if err := WriteKubeconfig(path, "https://x", &PKI{}); err == nil {
		t.Error("WriteKubeconfig with empty PKI: want error")
	}
}
