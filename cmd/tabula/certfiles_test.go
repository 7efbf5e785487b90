package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// testCA issues certificates for TestCertificateFiles.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name}, NotBefore: time.Now().Add(-time.Hour),
		NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue writes a leaf (with the CA after it) and its key as PEM files.
func (ca *testCA) issue(t *testing.T, dir, name string, tmpl *x509.Certificate) (certFile, keyFile string) {
	t.Helper()
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl.SerialNumber = big.NewInt(time.Now().UnixNano())
	tmpl.NotBefore, tmpl.NotAfter = time.Now().Add(-time.Hour), time.Now().Add(time.Hour)
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, _ := x509.MarshalECPrivateKey(key)
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), ca.pem...), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}

// TestCertificateFiles: --tls-cert-file and --tls-private-key-file serve
// another CA's certificate (the kubeconfig then trusts that CA), and
// --client-ca-file admits another CA's client certificates while the
// generated admin certificate keeps working.
func TestCertificateFiles(t *testing.T) {
	dir := t.TempDir()
	company := newTestCA(t, "company-ca")
	servingCrt, servingKey := company.issue(t, dir, "serving", &x509.Certificate{Subject: pkix.Name{CommonName: "company-apiserver"},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	partner := newTestCA(t, "partner-ca")
	clientCrt, clientKey := partner.issue(t, dir, "alice", &x509.Certificate{Subject: pkix.Name{CommonName: "alice", Organization: []string{"system:masters"}},
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, KeyUsage: x509.KeyUsageDigitalSignature})
	partnerFile := filepath.Join(dir, "partner-ca.crt")
	if err := os.WriteFile(partnerFile, partner.pem, 0o644); err != nil {
		t.Fatal(err)
	}

	if err := NewMain().ParseFlags([]string{"--tls-cert-file", servingCrt}); err != nil {
		t.Fatal(err)
	}
	half := NewMain()
	if err := half.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--tls-cert-file", servingCrt}); err != nil {
		t.Fatal(err)
	}
	if err := half.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "go together") {
		half.Close()
		t.Fatalf("--tls-cert-file alone: %v; want an error", err)
	}

	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--tls-cert-file", servingCrt, "--tls-private-key-file", servingKey, "--client-ca-file", partnerFile, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()

	// The generated kubeconfig trusts the company CA and still works.
	cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	if string(cfg.TLSClientConfig.CAData) != string(company.pem) {
		t.Errorf("kubeconfig trusts %q; want the company CA", cfg.TLSClientConfig.CAData)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.Discovery().ServerVersion(); err != nil {
		t.Fatalf("the admin kubeconfig against the company certificate: %v", err)
	}

	// A partner client certificate authenticates.
	roots := x509.NewCertPool()
	roots.AddCert(company.cert)
	pair, err := tls.LoadX509KeyPair(clientCrt, clientKey)
	if err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}}}
	resp, err := client.Get("https://" + m.Addr + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("partner client certificate: %d; want 200", resp.StatusCode)
	}
	if cs := resp.TLS.PeerCertificates[0].Subject.CommonName; cs != "company-apiserver" {
		t.Errorf("served certificate %q; want the company's", cs)
	}
}

// TestProxyClientCertNeedsItsCA: a proxy client certificate of one's own
// needs the request-header CA that verifies it (else the generated front
// proxy's CA would be published and aggregated API servers would refuse
// Tabula's relays); start-up says so.
func TestProxyClientCertNeedsItsCA(t *testing.T) {
	dir := t.TempDir()
	m := NewMain()
	cert, key := filepath.Join(dir, "proxy.crt"), filepath.Join(dir, "proxy.key")
	if err := m.ParseFlags([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error",
		"--proxy-client-cert-file", cert, "--proxy-client-key-file", key}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("started with --proxy-client-cert-file and no --requestheader-client-ca-file")
	}
	if want := "--proxy-client-cert-file needs --requestheader-client-ca-file"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want %q", err, want)
	}
}
