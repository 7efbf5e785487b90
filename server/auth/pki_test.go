package auth

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

func mustPKI(t *testing.T, dir string, sans ...string) *PKI {
	t.Helper()
	p, err := EnsurePKI(dir, sans)
	if err != nil {
		t.Fatalf("EnsurePKI: %v", err)
	}
	return p
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestEnsurePKIGeneratesThenReuses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p1 := mustPKI(t, dir)

	if m := fileMode(t, dir); m != 0o700 {
		t.Errorf("dir mode = %o, want 700", m)
	}
	for _, f := range []string{p1.CAKeyPath, p1.ServingKeyPath, p1.AdminKeyPath} {
		if m := fileMode(t, f); m != 0o600 {
			t.Errorf("%s mode = %o, want 600", f, m)
		}
	}
	for _, f := range []string{CACertFile, CAKeyFile, ServingCertFile, ServingKeyFile, AdminCertFile, AdminKeyFile} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil || !bytes.HasPrefix(data, []byte("-----BEGIN ")) {
			t.Errorf("%s: not PEM (err %v)", f, err)
		}
	}

	ca := p1.CACert
	if ca.Subject.CommonName != "tabula-ca" || !ca.IsCA {
		t.Errorf("CA subject %q IsCA %v", ca.Subject.CommonName, ca.IsCA)
	}
	if pk, ok := ca.PublicKey.(*ecdsa.PublicKey); !ok || pk.Curve != elliptic.P256() {
		t.Errorf("CA key is %T, want ECDSA P-256", ca.PublicKey)
	}
	if life := ca.NotAfter.Sub(ca.NotBefore); life < 10*365*24*time.Hour {
		t.Errorf("CA lifetime %v, want >= 10 years", life)
	}
	if ca.CheckSignatureFrom(ca) != nil {
		t.Error("CA is not self-signed")
	}

	leaf := p1.ServingCert.Leaf
	if !slices.Contains(leaf.DNSNames, "localhost") || !hasIP(leaf, "127.0.0.1") || !hasIP(leaf, "::1") {
		t.Errorf("serving SANs = %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if leaf.CheckSignatureFrom(ca) != nil {
		t.Error("serving cert not signed by CA")
	}
	admin := p1.AdminCert.Leaf
	if admin.Subject.CommonName != "tabula-admin" || !slices.Equal(admin.Subject.Organization, []string{"system:masters"}) {
		t.Errorf("admin subject = %v", admin.Subject)
	}

	p2 := mustPKI(t, dir)
	if !bytes.Equal(p1.CAPEM, p2.CAPEM) {
		t.Error("second EnsurePKI returned a different CA")
	}
	if p1.ServingCert.Leaf.SerialNumber.Cmp(p2.ServingCert.Leaf.SerialNumber) != 0 {
		t.Error("second EnsurePKI reissued the serving cert")
	}
	if p1.AdminCert.Leaf.SerialNumber.Cmp(p2.AdminCert.Leaf.SerialNumber) != 0 {
		t.Error("second EnsurePKI reissued the admin cert")
	}
}

func hasIP(c *x509.Certificate, ip string) bool {
	want := net.ParseIP(ip)
	return slices.ContainsFunc(c.IPAddresses, want.Equal)
}

func TestEnsurePKIReissuesServingForNewSANs(t *testing.T) {
	dir := t.TempDir()
	p1 := mustPKI(t, dir)

	p2 := mustPKI(t, dir, "tabula.example.com", "10.0.0.5", "[fd00::1]")
	if !bytes.Equal(p1.CAPEM, p2.CAPEM) {
		t.Fatal("CA changed on SAN reissue")
	}
	if p1.AdminCert.Leaf.SerialNumber.Cmp(p2.AdminCert.Leaf.SerialNumber) != 0 {
		t.Error("admin cert changed on SAN reissue")
	}
	leaf := p2.ServingCert.Leaf
	if leaf.SerialNumber.Cmp(p1.ServingCert.Leaf.SerialNumber) == 0 {
		t.Fatal("serving cert not reissued")
	}
	if !slices.Contains(leaf.DNSNames, "tabula.example.com") || !hasIP(leaf, "10.0.0.5") || !hasIP(leaf, "fd00::1") {
		t.Errorf("serving SANs = %v %v", leaf.DNSNames, leaf.IPAddresses)
	}
	if slices.Contains(leaf.DNSNames, "10.0.0.5") {
		t.Error("IP SAN encoded as DNS name")
	}
	if !hasIP(leaf, "127.0.0.1") || !slices.Contains(leaf.DNSNames, "localhost") {
		t.Error("default SANs dropped")
	}

	// A subset of the SANs already present (names compared case-insensitively)
	// needs no reissue.
	p3 := mustPKI(t, dir, "TABULA.example.com", "10.0.0.5")
	if p3.ServingCert.Leaf.SerialNumber.Cmp(leaf.SerialNumber) != 0 {
		t.Error("serving cert reissued although it covered the SANs")
	}
}

func TestEnsurePKIRepairsLeafButNotCA(t *testing.T) {
	dir := t.TempDir()
	p1 := mustPKI(t, dir)

	// A damaged leaf is reissued from the existing CA.
	if err := os.WriteFile(p1.ServingCertPath, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	p2 := mustPKI(t, dir)
	if !bytes.Equal(p1.CAPEM, p2.CAPEM) || p2.ServingCert.Leaf == nil {
		t.Fatal("serving cert not repaired under the same CA")
	}

	// A damaged CA is an error: regenerating it would invalidate clients.
	if err := os.Remove(p1.CAKeyPath); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsurePKI(dir, nil); err == nil {
		t.Fatal("EnsurePKI with missing CA key: want error")
	}
}

// TestTLSHandshakeAuthenticatesAdmin runs a real TLS server with
// ServerTLSConfig and checks what Authenticate sees for each kind of client.
func TestTLSHandshakeAuthenticatesAdmin(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	a, err := NewAuthenticator(Options{ClientCA: p.CAPool})
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		OK    bool   `json:"ok"`
		User  *User  `json:"user"`
		Proto string `json:"proto"`
	}
	ts := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, ok, err := a.Authenticate(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusUnauthorized)
			return
		}
		json.NewEncoder(w).Encode(result{OK: ok, User: u, Proto: r.Proto})
	}))
	ts.TLS = p.ServerTLSConfig()
	ts.Config.ErrorLog = log.New(io.Discard, "", 0)
	ts.StartTLS()
	defer ts.Close()

	get := func(t *testing.T, certs ...tls.Certificate) (result, error) {
		t.Helper()
		tr := &http.Transport{
			TLSClientConfig:   &tls.Config{RootCAs: p.CAPool, Certificates: certs},
			ForceAttemptHTTP2: true,
		}
		defer tr.CloseIdleConnections()
		resp, err := (&http.Client{Transport: tr, Timeout: 10 * time.Second}).Get(ts.URL)
		if err != nil {
			return result{}, err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b, _ := io.ReadAll(resp.Body)
			return result{}, fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
		}
		var res result
		if err := json.NewDecoder(resp.Body).Decode(&res); err != nil {
			t.Fatalf("decode (status %d): %v", resp.StatusCode, err)
		}
		return res, nil
	}

	t.Run("admin cert", func(t *testing.T) {
		// The second request is answered from the verified-chain cache;
		// it must name the same user, without groups piling up.
		for range 2 {
			res, err := get(t, p.AdminCert)
			if err != nil {
				t.Fatal(err)
			}
			if !res.OK || res.User.Name != "tabula-admin" ||
				!slices.Equal(res.User.Groups, []string{"system:masters", "system:authenticated"}) {
				t.Fatalf("got %+v %+v", res, res.User)
			}
			if res.Proto != "HTTP/2.0" {
				t.Errorf("proto = %s, want HTTP/2.0 (h2 via ALPN)", res.Proto)
			}
		}
	})
	t.Run("no cert is anonymous", func(t *testing.T) {
		res, err := get(t)
		if err != nil {
			t.Fatal(err)
		}
		if res.OK || res.User != nil {
			t.Fatalf("got %+v", res)
		}
	})
	// A bad certificate passes the handshake (the server only requests
	// one) and is refused by the authenticator, which the server answers
	// with 401, as kube-apiserver does.
	t.Run("bad client certificates", func(t *testing.T) {
		other := mustPKI(t, t.TempDir())
		for name, cert := range map[string]tls.Certificate{
			"another CA":           other.AdminCert,
			"expired":              expiredClientCert(t, p),
			"no client-auth usage": p.ServingCert,
		} {
			_, err := get(t, cert)
			if err == nil || !strings.Contains(err.Error(), "HTTP 401") || !strings.Contains(err.Error(), ErrInvalidClientCert.Error()) {
				t.Errorf("%s: %v; want 401 for an invalid client certificate", name, err)
			}
		}
	})
}

// expiredClientCert is an admin client certificate from p's CA whose
// validity ended an hour ago.
func expiredClientCert(t *testing.T, p *PKI) tls.Certificate {
	t.Helper()
	keyPEM, err := os.ReadFile(p.CAKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	caKey, err := parseKeyPEM(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(p.CACertPath)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := parseCertPEM(caPEM)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(now.UnixNano()),
		Subject:      pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
		NotBefore:    now.Add(-48 * time.Hour), NotAfter: now.Add(-time.Hour),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, caCert, key.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func TestServerTLSConfig(t *testing.T) {
	p := mustPKI(t, t.TempDir())
	c := p.ServerTLSConfig()
	if c.ClientAuth != tls.RequestClientCert || c.ClientCAs != p.CAPool || c.MinVersion != tls.VersionTLS12 ||
		!slices.Equal(c.NextProtos, []string{"h2", "http/1.1"}) || len(c.Certificates) != 1 {
		t.Fatalf("unexpected config %+v", c)
	}
}

// TestEnsurePKIFrontProxy: the front proxy has a CA of its own, which
// the cluster CA's client certificates do not chain to, and a client
// certificate named front-proxy-client that only it verifies; both are
// kept across starts.
func TestEnsurePKIFrontProxy(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	p1 := mustPKI(t, dir)
	pair, err := tls.LoadX509KeyPair(p1.FrontProxyClientCertPath, p1.FrontProxyClientKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	client := pair.Leaf
	if client.Subject.CommonName != FrontProxyClientUser {
		t.Errorf("front-proxy client subject = %v", client.Subject)
	}
	clientAuth := []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	if _, err := client.Verify(x509.VerifyOptions{Roots: p1.FrontProxyCAPool, KeyUsages: clientAuth}); err != nil {
		t.Errorf("front-proxy client does not verify with the front-proxy CA: %v", err)
	}
	if _, err := client.Verify(x509.VerifyOptions{Roots: p1.CAPool, KeyUsages: clientAuth}); err == nil {
		t.Error("front-proxy client verifies with the cluster CA")
	}
	if _, err := p1.AdminCert.Leaf.Verify(x509.VerifyOptions{Roots: p1.FrontProxyCAPool, KeyUsages: clientAuth}); err == nil {
		t.Error("the admin certificate verifies with the front-proxy CA")
	}
	if m := fileMode(t, filepath.Join(dir, FrontProxyCAKeyFile)); m != 0o600 {
		t.Errorf("front-proxy CA key mode = %o, want 600", m)
	}
	p2 := mustPKI(t, dir)
	again, err := tls.LoadX509KeyPair(p2.FrontProxyClientCertPath, p2.FrontProxyClientKeyPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(p1.FrontProxyCAPEM, p2.FrontProxyCAPEM) || again.Leaf.SerialNumber.Cmp(client.SerialNumber) != 0 {
		t.Error("a second EnsurePKI replaced the front proxy's CA or client certificate")
	}
}
