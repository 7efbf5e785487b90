package auth

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
)

// Certificates given as files override the generated ones, with
// kube-apiserver's flags: --tls-cert-file and --tls-private-key-file
// serve another certificate (a company CA's, say), --client-ca-file
// trusts another CA's client certificates.

// UseServingFiles serves the certificate in certFile (with its chain)
// and keyFile. When the chain ends in a self-signed CA, that CA is what
// clients are told to trust (kubeconfig, kube-root-ca.crt); otherwise
// they trust their system roots.
func (p *PKI) UseServingFiles(certFile, keyFile string) error {
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return fmt.Errorf("--tls-cert-file/--tls-private-key-file: %w", err)
	}
	if pair.Leaf == nil {
		if pair.Leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return err
		}
	}
	p.ServingCert = pair
	p.ServingCAPEM = nil
	last, err := x509.ParseCertificate(pair.Certificate[len(pair.Certificate)-1])
	if err != nil {
		return err
	}
	if last.IsCA && bytes.Equal(last.RawIssuer, last.RawSubject) && last.CheckSignatureFrom(last) == nil {
		p.ServingCAPEM = pemCert(last.Raw)
	}
	return nil
}

// UseClientCAFile trusts the client certificates of the CAs in file. The
// generated CA stays trusted too, so the admin kubeconfig Tabula writes
// keeps working.
func (p *PKI) UseClientCAFile(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return fmt.Errorf("--client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return errors.New("--client-ca-file: no PEM certificates in " + file)
	}
	pool.AddCert(p.CACert)
	p.ClientCAPool = pool
	p.ClientCAPEM = append(append(bytes.TrimRight(b, "\n"), '\n'), p.CAPEM...)
	return nil
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
