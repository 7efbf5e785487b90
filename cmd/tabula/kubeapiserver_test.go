package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"flag"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/tabula-dev/tabula/server/auth"
)

// TestKubeAPIServerFlags: kube-apiserver's command line, as
// controller-runtime's envtest gives it, becomes Tabula's configuration;
// the flags only kube-apiserver has map to their meaning here, storage
// flags are ignored, and an unknown flag is refused as kube-apiserver
// refuses it.
func TestKubeAPIServerFlags(t *testing.T) {
	m := NewMain()
	if err := m.ParseKubeAPIServerFlags(nil); err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.Listen != "0.0.0.0:6443" || c.DataDir != "/var/run/kubernetes" || c.DB != "sqlite://:memory:" || c.TLSCertFile != "" {
		t.Errorf("defaults: listen %q, data dir %q, db %q, tls %q; want kube-apiserver's 0.0.0.0:6443 and /var/run/kubernetes, in memory, generated",
			c.Listen, c.DataDir, c.DB, c.TLSCertFile)
	}

	certDir := t.TempDir()
	for _, f := range []string{"apiserver.crt", "apiserver.key"} {
		if err := os.WriteFile(filepath.Join(certDir, f), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	m = NewMain()
	err := m.ParseKubeAPIServerFlags([]string{
		"--advertise-address=127.0.0.1", "--etcd-servers=http://127.0.0.1:2379", "--cert-dir=" + certDir,
		"--secure-port=7443", "--bind-address", "127.0.0.1", "--disable-admission-plugins=ServiceAccount",
		"--service-cluster-ip-range=10.0.0.0/24", "--allow-privileged=true", "--authorization-mode=RBAC",
		"--service-account-issuer=https://127.0.0.1:7443/", "--watch-cache=false", "--v=4",
	})
	if err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.Listen != "127.0.0.1:7443" || c.DataDir != certDir || c.ServiceCIDR != "10.0.0.0/24" ||
		strings.Join(c.AuthorizationModes, ",") != "RBAC" || strings.Join(c.Admission.Disable, ",") != "ServiceAccount" {
		t.Errorf("envtest's flags: %+v", c)
	}
	if c.TLSCertFile != filepath.Join(certDir, "apiserver.crt") || c.TLSPrivateKeyFile != filepath.Join(certDir, "apiserver.key") {
		t.Errorf("serving files: %q, %q; want the cert dir's apiserver.crt and apiserver.key", c.TLSCertFile, c.TLSPrivateKeyFile)
	}

	m = NewMain()
	if err := m.ParseKubeAPIServerFlags([]string{"--cert-dir=" + certDir, "--data-dir=/elsewhere", "--listen=127.0.0.1:9", "--db=sqlite://x.db"}); err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.DataDir != "/elsewhere" || c.Listen != "127.0.0.1:9" || c.DB != "sqlite://x.db" {
		t.Errorf("Tabula's own flags: data dir %q, listen %q, db %q; want them to win", c.DataDir, c.Listen, c.DB)
	}

	for _, bad := range [][]string{{"--insecure-port=0"}, {"--no-such-flag"}, {"--secure-port=70000"}} {
		if err := NewMain().ParseKubeAPIServerFlags(bad); err == nil {
			t.Errorf("%v: accepted; want refused", bad)
		}
	}

	// envtest reads --help to learn whether the server still has
	// --insecure-port (kube-apiserver before 1.24).
	m = NewMain()
	if err := m.ParseKubeAPIServerFlags([]string{"--help"}); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("--help: %v", err)
	}
	var help bytes.Buffer
	m.WriteUsage(&help)
	if h := help.String(); !strings.HasPrefix(h, "Usage: kube-apiserver") || !strings.Contains(h, "\n  --secure-port ") || strings.Contains(h, "--insecure-port") {
		t.Errorf("help:\n%s", h)
	}
}

// TestCommandByName: linked as kube-apiserver or etcd, the binary is that
// command.
func TestCommandByName(t *testing.T) {
	for _, tc := range []struct {
		argv []string
		name string
		args []string
	}{
		{[]string{"/assets/kube-apiserver", "--secure-port=1"}, "kube-apiserver", []string{"--secure-port=1"}},
		{[]string{"etcd", "--data-dir=x"}, "etcd", []string{"--data-dir=x"}},
		{[]string{"/usr/bin/tabula", "serve", "--db=x"}, "serve", []string{"--db=x"}},
		{[]string{"tabula", "kube-apiserver"}, "kube-apiserver", []string{}},
	} {
		name, args, ok := command(tc.argv)
		if !ok || name != tc.name || strings.Join(args, " ") != strings.Join(tc.args, " ") {
			t.Errorf("%v: %q %v %v; want %q %v", tc.argv, name, args, ok, tc.name, tc.args)
		}
	}
	if _, _, ok := command([]string{"tabula"}); ok {
		t.Error("tabula alone: a command; want usage")
	}
}

// TestEtcdStandIn answers etcd's health checks on --listen-client-urls,
// and nothing else.
func TestEtcdStandIn(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serveEtcdStandIn(ctx, "http://"+addr) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	var resp *http.Response
	for deadline := time.Now().Add(10 * time.Second); ; {
		if resp, err = http.Get("http://" + addr + "/health"); err == nil || time.Now().After(deadline) {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var h struct{ Health string }
	if resp.StatusCode != http.StatusOK || json.Unmarshal(body, &h) != nil || h.Health != "true" {
		t.Errorf("/health: %d %s; want 200 and health true", resp.StatusCode, body)
	}
	resp, err = http.Get("http://" + addr + "/v3/kv/range")
	if err != nil {
		t.Fatal(err)
	}
	body, _ = io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), "needs no etcd") {
		t.Errorf("another path: %d %s; want 404 saying what the stand-in is", resp.StatusCode, body)
	}
	if err := serveEtcdStandIn(context.Background(), "https://"+addr); err == nil {
		t.Error("an https URL: served; want refused")
	}
}

// defaultAccountToken is a token of the default namespace's default
// ServiceAccount. A fresh server's controllers put that account there
// just after start, as kube-controller-manager does, so a request made
// at once may find it missing: it is asked for again until it is there.
func defaultAccountToken(t *testing.T, cs *kubernetes.Clientset) *authenticationv1.TokenRequest {
	t.Helper()
	var tr *authenticationv1.TokenRequest
	err := wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		var err error
		tr, err = cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("a token of default/default: %v", err)
	}
	return tr
}

// TestServiceAccountKeyFiles: --service-account-signing-key-file signs the
// tokens (the published key is its key) and --service-account-key-file may
// name that key as a certificate. kubeadm's RSA sa.key and sa.pub serve as
// they are, tokens are RS256, and a key-file key other than the signing
// key verifies the tokens it signed (a rotation); a signing key kube
// cannot sign with, or a key file with no key, stops the start.
func TestServiceAccountKeyFiles(t *testing.T) {
	dir := t.TempDir()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := writePEM(t, dir, "sa.key", "PRIVATE KEY", der)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	certDER, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certFile := writePEM(t, dir, "sa.crt", "CERTIFICATE", certDER)

	_, cs := serve(t, "--service-account-signing-key-file", keyFile, "--service-account-key-file", certFile)
	ctx := context.Background()
	tr := defaultAccountToken(t, cs)
	// The token's signature verifies with the given key.
	parts := strings.Split(tr.Status.Token, ".")
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		t.Fatalf("signature: %v (%d bytes)", err, len(sig))
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	if !ecdsa.Verify(&key.PublicKey, digest[:], new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])) {
		t.Error("the token is not signed with --service-account-signing-key-file's key")
	}
	authenticated := func(cs *kubernetes.Clientset, token string) bool {
		t.Helper()
		review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return review.Status.Authenticated
	}
	if !authenticated(cs, tr.Status.Token) {
		t.Error("the token: not authenticated")
	}

	// kubeadm's files: an RSA sa.key (PKCS #1) and its sa.pub, with the
	// key of an earlier signing key beside it.
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	rsaFile := writePEM(t, dir, "rsa.key", "RSA PRIVATE KEY", x509.MarshalPKCS1PrivateKey(rsaKey))
	rsaPubDER, err := x509.MarshalPKIXPublicKey(&rsaKey.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	rsaPubFile := writePEM(t, dir, "rsa.pub", "PUBLIC KEY", rsaPubDER)
	earlier, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	earlierDER, err := x509.MarshalPKIXPublicKey(&earlier.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	earlierFile := writePEM(t, dir, "earlier.pub", "PUBLIC KEY", earlierDER)
	_, cs = serve(t, "--service-account-signing-key-file", rsaFile, "--service-account-key-file", rsaPubFile, "--service-account-key-file", earlierFile)
	tr = defaultAccountToken(t, cs)
	headerJSON, _ := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	if !strings.Contains(string(headerJSON), `"alg":"RS256"`) || !authenticated(cs, tr.Status.Token) {
		t.Errorf("a token of the RSA key (header %s): want RS256 and authenticated", headerJSON)
	}
	sa, err := cs.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	earlierTokens, err := auth.NewServiceAccountTokens(earlier)
	if err != nil {
		t.Fatal(err)
	}
	earlierToken, err := earlierTokens.Issue(auth.TokenSubject{Namespace: "default", Name: "default", UID: string(sa.UID), Expiry: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !authenticated(cs, earlierToken) {
		t.Error("a token of the earlier key in --service-account-key-file: not authenticated")
	}

	p224, err := ecdsa.GenerateKey(elliptic.P224(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p224DER, err := x509.MarshalECPrivateKey(p224)
	if err != nil {
		t.Fatal(err)
	}
	p224File := writePEM(t, dir, "p224.key", "EC PRIVATE KEY", p224DER)
	noKeyFile := writePEM(t, dir, "nokey.pem", "CERTIFICATE REQUEST", []byte("not a key"))
	for _, args := range [][]string{
		{"--service-account-signing-key-file", p224File},
		{"--service-account-signing-key-file", keyFile, "--service-account-key-file", noKeyFile},
	} {
		m := NewMain()
		if err := m.ParseFlags(append([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}, args...)); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		if err == nil {
			m.Close()
			t.Errorf("%v: started; want refused", args)
		} else if !strings.Contains(err.Error(), "--service-account-") {
			t.Errorf("%v: %v; want the flag named", args, err)
		}
	}
}

func writePEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
