package auth

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// File names inside the PKI directory. They follow kubeadm's naming so the
// files are recognisable to anyone who has looked at /etc/kubernetes/pki.
const (
	CACertFile      = "ca.crt"
	CAKeyFile       = "ca.key"
	ServingCertFile = "serving.crt"
	ServingKeyFile  = "serving.key"
	AdminCertFile   = "admin.crt"
	AdminKeyFile    = "admin.key"
	// The client certificate the API server presents to kubelets (logs,
	// exec, node proxy), kubeadm's apiserver-kubelet-client.
	KubeletClientCertFile = "apiserver-kubelet-client.crt"
	KubeletClientKeyFile  = "apiserver-kubelet-client.key"
	// The front proxy's own CA and the client certificate the server
	// presents to aggregated API servers (kubeadm's front-proxy-ca and
	// front-proxy-client): a CA apart from the cluster's, so no client
	// certificate the cluster CA signs (CSRs included) can claim to be the
	// proxy and name any user in request headers.
	FrontProxyCACertFile     = "front-proxy-ca.crt"
	FrontProxyCAKeyFile      = "front-proxy-ca.key"
	FrontProxyClientCertFile = "front-proxy-client.crt"
	FrontProxyClientKeyFile  = "front-proxy-client.key"
)

const (
	// The CA lives long because replacing it invalidates every kubeconfig
	// handed out; kubeadm uses the same 10 years.
	caValidity = 10 * 365 * 24 * time.Hour
	// Leaf certificates get 1 year, like kubeadm's. That bounds the damage of
	// a leaked key, and costs nothing in operation because EnsurePKI reissues
	// a leaf that is within renewBefore of expiry, so a restart renews it.
	leafValidity = 365 * 24 * time.Hour
	renewBefore  = 30 * 24 * time.Hour
	// Backdating NotBefore tolerates clients whose clocks run a little behind.
	clockSkew = 5 * time.Minute

	caCommonName = "tabula-ca"
	// FrontProxyClientUser is the front-proxy client certificate's name,
	// the one allowed name of the generated request-header configuration.
	FrontProxyClientUser   = "front-proxy-client"
	frontProxyCACommonName = "tabula-front-proxy-ca"
	servingCommonName      = "tabula-apiserver"
	// AdminUser and AdminGroup are the identity of the admin client
	// certificate; system:masters is the group Kubernetes RBAC treats as
	// superuser.
	AdminUser  = "tabula-admin"
	AdminGroup = "system:masters"
	// KubeletClientUser is the name the API server goes by at kubelets,
	// kube-apiserver's own under kubeadm; a kubelet authorizing with
	// webhook mode asks the API server whether it may.
	KubeletClientUser = "kube-apiserver-kubelet-client"
)

// Component is a control-plane member the PKI gives an identity of its
// own (a client certificate) and a kubeconfig, as kubeadm writes
// scheduler.conf and controller-manager.conf: its bootstrap ClusterRole
// grants it what it needs under RBAC, and no more.
type Component struct {
	// Name names its files: <name>.crt and <name>.key in the PKI
	// directory, <name>.kubeconfig beside the admin kubeconfig.
	Name string
	// User is the certificate's common name, the user RBAC binds.
	User string
}

// Components are the members kube's bootstrap policy has roles for.
var Components = []Component{
	{Name: "scheduler", User: "system:kube-scheduler"},
	{Name: "controller-manager", User: "system:kube-controller-manager"},
}

// defaultSANs are always on the serving certificate so local clients work
// whatever extra names the caller passes.
var defaultSANs = []string{"localhost", "127.0.0.1", "::1"}

// PKI is the loaded state of a PKI directory written by EnsurePKI.
type PKI struct {
	// Dir is the PKI directory; the *Path fields are the files inside it.
	Dir             string
	CACertPath      string
	CAKeyPath       string
	ServingCertPath string
	ServingKeyPath  string
	AdminCertPath   string
	AdminKeyPath    string
	// KubeletClientCertPath and KubeletClientKeyPath are the client
	// certificate the server presents to kubelets.
	KubeletClientCertPath string
	KubeletClientKeyPath  string
	// FrontProxyClientCertPath and FrontProxyClientKeyPath are the
	// certificate the server presents to aggregated API servers;
	// FrontProxyCAPEM and FrontProxyCAPool verify it (the generated
	// request-header configuration).
	FrontProxyClientCertPath string
	FrontProxyClientKeyPath  string
	FrontProxyCAPEM          []byte
	FrontProxyCAPool         *x509.CertPool

	// CACert is the parsed CA certificate and CAPool a pool holding only it,
	// used both to verify client certificates and by clients to verify the
	// server.
	CACert *x509.Certificate
	CAPool *x509.CertPool
	// CAPEM is the PEM encoding of the CA certificate, as published in the
	// kube-root-ca.crt ConfigMap and in kubeconfig certificate-authority-data.
	CAPEM []byte

	// ServingCert is the server's certificate and key, Leaf populated.
	ServingCert tls.Certificate
	// ServingCAPEM is what clients should trust to verify ServingCert:
	// CAPEM, or another CA when the serving certificate came from files
	// (nil: the clients' system roots).
	ServingCAPEM []byte
	// ClientCAPool verifies client certificates: CAPool, or it and the
	// CAs of --client-ca-file.
	ClientCAPool *x509.CertPool
	// ClientCAPEM is ClientCAPool's certificates in PEM, as kube-apiserver
	// publishes its client CA bundle.
	ClientCAPEM []byte
	// AdminCert is the admin client certificate and key, for in-process
	// clients (tests, tooling) that do not go through a kubeconfig.
	AdminCert tls.Certificate

	adminCertPEM []byte
	adminKeyPEM  []byte
	// components holds each Component's certificate and key (PEM).
	components map[string][2][]byte
}

// EnsurePKI loads the PKI in dir, creating whatever is missing. The first call
// generates the CA, serving and admin certificates; later calls reuse them.
// The serving certificate is reissued (by the existing CA) when it lacks one
// of the requested SANs, and a leaf certificate is reissued when it is
// unreadable, not signed by the CA, or close to expiry. The CA itself is never
// replaced implicitly: a broken CA is an error, because regenerating it would
// silently invalidate every client credential already handed out.
//
// sans are added to localhost, 127.0.0.1 and ::1; values that parse as IP
// addresses become IP SANs, the rest DNS names.
func EnsurePKI(dir string, sans []string) (*PKI, error) {
	if dir == "" {
		return nil, errors.New("pki: empty directory")
	}
	// 0700: the directory holds private keys, including the CA's.
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	p := &PKI{
		Dir:             dir,
		CACertPath:      filepath.Join(dir, CACertFile),
		CAKeyPath:       filepath.Join(dir, CAKeyFile),
		ServingCertPath: filepath.Join(dir, ServingCertFile),
		ServingKeyPath:  filepath.Join(dir, ServingKeyFile),
		AdminCertPath:   filepath.Join(dir, AdminCertFile),
		AdminKeyPath:    filepath.Join(dir, AdminKeyFile),

		KubeletClientCertPath: filepath.Join(dir, KubeletClientCertFile),
		KubeletClientKeyPath:  filepath.Join(dir, KubeletClientKeyFile),

		FrontProxyClientCertPath: filepath.Join(dir, FrontProxyClientCertFile),
		FrontProxyClientKeyPath:  filepath.Join(dir, FrontProxyClientKeyFile),
	}
	now := time.Now()

	ca, newCA, err := loadOrGenerateCA(p.CACertPath, p.CAKeyPath, caCommonName, now)
	if err != nil {
		return nil, err
	}
	p.setCA(ca.cert, ca.certPEM)

	dnsNames, ips := splitSANs(append(append([]string{}, defaultSANs...), sans...))
	servingOK := func(c *x509.Certificate) bool { return coversSANs(c, dnsNames, ips) }
	p.ServingCert, _, _, err = p.ensureLeaf(p.ServingCertPath, p.ServingKeyPath, newCA, now,
		x509.ExtKeyUsageServerAuth, servingOK, func() *x509.Certificate {
			return &x509.Certificate{
				Subject:     pkix.Name{CommonName: servingCommonName},
				DNSNames:    dnsNames,
				IPAddresses: ips,
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			}
		}, ca)
	if err != nil {
		return nil, err
	}

	p.AdminCert, p.adminCertPEM, p.adminKeyPEM, err = p.ensureLeaf(p.AdminCertPath, p.AdminKeyPath, newCA, now,
		x509.ExtKeyUsageClientAuth, nil, func() *x509.Certificate {
			return &x509.Certificate{
				Subject:     pkix.Name{CommonName: AdminUser, Organization: []string{AdminGroup}},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}
		}, ca)
	if err != nil {
		return nil, err
	}

	_, _, _, err = p.ensureLeaf(p.KubeletClientCertPath, p.KubeletClientKeyPath, newCA, now,
		x509.ExtKeyUsageClientAuth, nil, func() *x509.Certificate {
			return &x509.Certificate{
				Subject:     pkix.Name{CommonName: KubeletClientUser, Organization: []string{AdminGroup}},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}
		}, ca)
	if err != nil {
		return nil, err
	}
	p.components = map[string][2][]byte{}
	for _, c := range Components {
		_, certPEM, keyPEM, err := p.ensureLeaf(filepath.Join(dir, c.Name+".crt"), filepath.Join(dir, c.Name+".key"), newCA, now,
			x509.ExtKeyUsageClientAuth, nil, func() *x509.Certificate {
				return &x509.Certificate{
					Subject:     pkix.Name{CommonName: c.User},
					ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
				}
			}, ca)
		if err != nil {
			return nil, err
		}
		p.components[c.Name] = [2][]byte{certPEM, keyPEM}
	}

	fp, newFP, err := loadOrGenerateCA(filepath.Join(dir, FrontProxyCACertFile), filepath.Join(dir, FrontProxyCAKeyFile), frontProxyCACommonName, now)
	if err != nil {
		return nil, err
	}
	p.FrontProxyCAPEM, p.FrontProxyCAPool = fp.certPEM, fp.pool
	_, _, _, err = p.ensureLeaf(p.FrontProxyClientCertPath, p.FrontProxyClientKeyPath, newFP, now,
		x509.ExtKeyUsageClientAuth, nil, func() *x509.Certificate {
			return &x509.Certificate{
				Subject:     pkix.Name{CommonName: FrontProxyClientUser},
				ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
			}
		}, fp)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// EnsureFrontProxyCA loads the front proxy's CA in dir, generating it
// when missing, and returns its certificate and key (PEM).
func EnsureFrontProxyCA(dir string) (certPEM, keyPEM []byte, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("pki: create %s: %w", dir, err)
	}
	keyPath := filepath.Join(dir, FrontProxyCAKeyFile)
	ca, _, err := loadOrGenerateCA(filepath.Join(dir, FrontProxyCACertFile), keyPath, frontProxyCACommonName, time.Now())
	if err != nil {
		return nil, nil, err
	}
	keyPEM, err = os.ReadFile(keyPath)
	return ca.certPEM, keyPEM, err
}

// ServerTLSConfig returns the TLS configuration for the API server: the
// serving certificate, and client certificates requested (naming the CA
// they should come from) but not required or verified in the handshake:
// the authenticator verifies them and answers a bad one with 401, as
// kube-apiserver does (a client may instead authenticate with a bearer
// token, or not at all for health endpoints).
func (p *PKI) ServerTLSConfig() *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{p.ServingCert},
		ClientAuth:   tls.RequestClientCert,
		ClientCAs:    p.ClientCAPool,
		MinVersion:   tls.VersionTLS12,
		// h2 first: client-go prefers HTTP/2 and watches multiplex over it.
		NextProtos: []string{"h2", "http/1.1"},
	}
}

// issuer is a loaded CA: what signs leaves and verifies them.
type issuer struct {
	cert    *x509.Certificate
	certPEM []byte
	pool    *x509.CertPool
	key     crypto.Signer
}

// loadOrGenerateCA loads the CA at certPath/keyPath, or generates it when
// neither file exists. isNew reports a fresh CA, which forces every leaf
// it signs to be reissued.
func loadOrGenerateCA(certPath, keyPath, commonName string, now time.Time) (ca *issuer, isNew bool, err error) {
	certPEM, certErr := os.ReadFile(certPath)
	keyPEM, keyErr := os.ReadFile(keyPath)
	switch {
	case errors.Is(certErr, fs.ErrNotExist) && errors.Is(keyErr, fs.ErrNotExist):
		ca, err = generateCA(certPath, keyPath, commonName, now)
		return ca, err == nil, err
	case certErr != nil:
		return nil, false, fmt.Errorf("pki: read CA certificate: %w", certErr)
	case keyErr != nil:
		return nil, false, fmt.Errorf("pki: read CA key: %w", keyErr)
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, false, fmt.Errorf("pki: %s: %w", certPath, err)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, false, fmt.Errorf("pki: %s: %w", keyPath, err)
	}
	if !publicKeysEqual(key.Public(), cert.PublicKey) {
		return nil, false, fmt.Errorf("pki: %s does not match %s", keyPath, certPath)
	}
	if !cert.IsCA {
		return nil, false, fmt.Errorf("pki: %s is not a CA certificate", certPath)
	}
	return newIssuer(cert, certPEM, key), false, nil
}

func newIssuer(cert *x509.Certificate, certPEM []byte, key crypto.Signer) *issuer {
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return &issuer{cert: cert, certPEM: certPEM, pool: pool, key: key}
}

func generateCA(certPath, keyPath, commonName string, now time.Time) (*issuer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("pki: generate CA key: %w", err)
	}
	serial, err := newSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		// The CA signs leaves directly; forbidding intermediates narrows what
		// a stolen CA-signed leaf could be used for.
		MaxPathLenZero: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, fmt.Errorf("pki: create CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := encodePair(der, key)
	if err != nil {
		return nil, err
	}
	// Key first: a crash between the writes leaves no certificate, which the
	// next start reports instead of trusting a certificate without its key.
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return nil, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return nil, err
	}
	return newIssuer(cert, certPEM, key), nil
}

func (p *PKI) setCA(cert *x509.Certificate, certPEM []byte) {
	p.CACert = cert
	p.CAPEM = certPEM
	p.CAPool = x509.NewCertPool()
	p.CAPool.AddCert(cert)
	p.ClientCAPool = p.CAPool
	p.ClientCAPEM = certPEM
	p.ServingCAPEM = certPEM
}

// ensureLeaf returns the leaf certificate at certPath/keyPath, reissuing it
// from template() when it is missing, unusable, or fails extraOK. Unlike the
// CA, a leaf is cheap to replace, so any problem with it means reissue.
func (p *PKI) ensureLeaf(certPath, keyPath string, forceNew bool, now time.Time, usage x509.ExtKeyUsage,
	extraOK func(*x509.Certificate) bool, template func() *x509.Certificate, ca *issuer,
) (tls.Certificate, []byte, []byte, error) {
	if !forceNew {
		certPEM, certErr := os.ReadFile(certPath)
		keyPEM, keyErr := os.ReadFile(keyPath)
		if certErr == nil && keyErr == nil {
			// X509KeyPair also checks that the key matches the certificate.
			pair, err := tls.X509KeyPair(certPEM, keyPEM)
			if err == nil && leafUsable(ca, pair.Leaf, usage, now) && (extraOK == nil || extraOK(pair.Leaf)) {
				return pair, certPEM, keyPEM, nil
			}
		}
	}

	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("pki: generate key for %s: %w", certPath, err)
	}
	serial, err := newSerial()
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	tmpl := template()
	tmpl.SerialNumber = serial
	tmpl.NotBefore = now.Add(-clockSkew)
	tmpl.NotAfter = now.Add(leafValidity)
	// ECDSA keys only sign; KeyEncipherment applies to RSA key transport.
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature
	tmpl.BasicConstraintsValid = true
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return tls.Certificate{}, nil, nil, fmt.Errorf("pki: create %s: %w", certPath, err)
	}
	certPEM, keyPEM, err := encodePair(der, key)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	if err := writeFileAtomic(keyPath, keyPEM, 0o600); err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	if err := writeFileAtomic(certPath, certPEM, 0o644); err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return tls.Certificate{}, nil, nil, err
	}
	return pair, certPEM, keyPEM, nil
}

// leafUsable reports whether cert chains to ca for the given usage and
// stays valid for longer than renewBefore.
func leafUsable(ca *issuer, cert *x509.Certificate, usage x509.ExtKeyUsage, now time.Time) bool {
	if cert == nil || now.Add(renewBefore).After(cert.NotAfter) {
		return false
	}
	_, err := cert.Verify(x509.VerifyOptions{
		Roots:       ca.pool,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{usage},
	})
	return err == nil
}

// splitSANs sorts SAN values into DNS names and IPs, dropping blanks and
// duplicates. DNS names are lower-cased because matching is case-insensitive.
func splitSANs(values []string) (dnsNames []string, ips []net.IP) {
	seen := map[string]bool{}
	for _, v := range values {
		v = strings.TrimSpace(v)
		// Accept "[::1]" as written in URLs.
		if strings.HasPrefix(v, "[") && strings.HasSuffix(v, "]") {
			v = v[1 : len(v)-1]
		}
		if v == "" {
			continue
		}
		if ip := net.ParseIP(v); ip != nil {
			if k := "ip:" + ip.String(); !seen[k] {
				seen[k] = true
				ips = append(ips, ip)
			}
			continue
		}
		v = strings.ToLower(v)
		if k := "dns:" + v; !seen[k] {
			seen[k] = true
			dnsNames = append(dnsNames, v)
		}
	}
	return dnsNames, ips
}

// coversSANs reports whether cert lists every wanted name and IP.
func coversSANs(cert *x509.Certificate, dnsNames []string, ips []net.IP) bool {
	for _, want := range dnsNames {
		found := false
		for _, have := range cert.DNSNames {
			if strings.EqualFold(have, want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	for _, want := range ips {
		found := false
		for _, have := range cert.IPAddresses {
			if have.Equal(want) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func newSerial() (*big.Int, error) {
	// 128 random bits: unique without keeping a serial counter on disk.
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("pki: serial number: %w", err)
	}
	return n, nil
}

func encodePair(der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte, err error) {
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, fmt.Errorf("pki: marshal key: %w", err)
	}
	certPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyPEM = pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	return certPEM, keyPEM, nil
}

func parseCertPEM(data []byte) (*x509.Certificate, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no CERTIFICATE PEM block")
		}
		if block.Type == "CERTIFICATE" {
			return x509.ParseCertificate(block.Bytes)
		}
	}
}

// parseKeyPEM accepts the usual private key encodings so that an operator can
// drop in a CA of their own (e.g. an RSA one made with openssl).
func parseKeyPEM(data []byte) (crypto.Signer, error) {
	for {
		var block *pem.Block
		block, data = pem.Decode(data)
		if block == nil {
			return nil, errors.New("no private key PEM block")
		}
		var key any
		var err error
		switch block.Type {
		case "EC PRIVATE KEY":
			key, err = x509.ParseECPrivateKey(block.Bytes)
		case "RSA PRIVATE KEY":
			key, err = x509.ParsePKCS1PrivateKey(block.Bytes)
		case "PRIVATE KEY":
			key, err = x509.ParsePKCS8PrivateKey(block.Bytes)
		default:
			continue // e.g. "EC PARAMETERS" emitted by openssl ecparam
		}
		if err != nil {
			return nil, err
		}
		signer, ok := key.(crypto.Signer)
		if !ok {
			return nil, fmt.Errorf("unsupported private key type %T", key)
		}
		return signer, nil
	}
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	// Every public key type in the standard library has Equal.
	ak, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ak.Equal(b)
}

// writeFileAtomic writes via a temporary file and rename so a reader (or a
// crash) never sees a half-written key or certificate, and so perm applies
// even when the file already existed with a looser mode.
func writeFileAtomic(path string, data []byte, perm os.FileMode) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	tmp := f.Name()
	cleanup := func(err error) error {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Chmod(perm); err != nil {
		return cleanup(err)
	}
	if _, err := f.Write(data); err != nil {
		return cleanup(err)
	}
	if err := f.Sync(); err != nil {
		return cleanup(err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// sameFileContent reports whether path already holds exactly data.
func sameFileContent(path string, data []byte) bool {
	old, err := os.ReadFile(path)
	return err == nil && bytes.Equal(old, data)
}
