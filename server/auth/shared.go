package auth

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Replicas on one database must be one cluster to their clients: the same
// CA (so a kubeconfig from one works on every other, and kube-root-ca.crt
// is one bundle) and the same service-account signing key (so a token one
// issues, another accepts). As k3s servers on one datastore do, the first
// replica started with a token generates them and stores them in the
// database sealed with a key derived from the token; later replicas with
// the same token open them. Each replica still issues its own serving and
// admin certificates from the shared CA.

// ClusterSecrets are the PEM files every replica shares.
type ClusterSecrets struct {
	CACert []byte `json:"caCert"`
	CAKey  []byte `json:"caKey"`
	SAKey  []byte `json:"saKey"`
	// The front proxy's CA: every replica proxies to aggregated API
	// servers as the one proxy they trust (empty in secrets stored before
	// Tabula had one; the first replica to see that adds it).
	FrontProxyCACert []byte `json:"frontProxyCACert,omitempty"`
	FrontProxyCAKey  []byte `json:"frontProxyCAKey,omitempty"`
}

// ErrWrongToken: the sealed secrets do not open with this token.
var ErrWrongToken = errors.New("the token does not open the cluster secrets in the database: start every replica with the token the first one was started with")

// sealVersion prefixes a sealed value, so the format can change later.
const sealVersion = "tabula-sealed-v1:"

func tokenKey(token string) ([]byte, error) {
	// A fixed salt: the token is the secret, and every replica must derive
	// the same key from it.
	return hkdf.Key(sha256.New, []byte(token), []byte("tabula cluster secrets"), "aes-256-gcm key", 32)
}

// SealSecrets encrypts s for storage with AES-256-GCM under a key derived
// from token.
func SealSecrets(token string, s ClusterSecrets) ([]byte, error) {
	if token == "" {
		return nil, errors.New("sealing cluster secrets: empty token")
	}
	plain, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	aead, err := tokenAEAD(token)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	out := append([]byte(sealVersion), nonce...)
	return aead.Seal(out, nonce, plain, []byte(sealVersion)), nil
}

// OpenSecrets decrypts what SealSecrets stored; a different token gives
// ErrWrongToken.
func OpenSecrets(token string, sealed []byte) (ClusterSecrets, error) {
	var s ClusterSecrets
	rest, ok := bytes.CutPrefix(sealed, []byte(sealVersion))
	if !ok {
		return s, fmt.Errorf("cluster secrets: unknown format")
	}
	aead, err := tokenAEAD(token)
	if err != nil {
		return s, err
	}
	if len(rest) < aead.NonceSize() {
		return s, fmt.Errorf("cluster secrets: truncated")
	}
	plain, err := aead.Open(nil, rest[:aead.NonceSize()], rest[aead.NonceSize():], []byte(sealVersion))
	if err != nil {
		return s, ErrWrongToken
	}
	if err := json.Unmarshal(plain, &s); err != nil {
		return s, fmt.Errorf("cluster secrets: %w", err)
	}
	return s, nil
}

func tokenAEAD(token string) (cipher.AEAD, error) {
	key, err := tokenKey(token)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// LocalSecrets reads the shared files of a PKI directory (EnsurePKI and
// EnsureServiceAccountKey make them).
func LocalSecrets(dir string) (ClusterSecrets, error) {
	var s ClusterSecrets
	var err error
	for _, f := range []struct {
		name string
		into *[]byte
	}{{CACertFile, &s.CACert}, {CAKeyFile, &s.CAKey}, {SAKeyFile, &s.SAKey},
		{FrontProxyCACertFile, &s.FrontProxyCACert}, {FrontProxyCAKeyFile, &s.FrontProxyCAKey}} {
		if *f.into, err = os.ReadFile(filepath.Join(dir, f.name)); err != nil {
			return s, err
		}
	}
	return s, nil
}

// InstallSecrets writes s into a PKI directory, replacing what differs;
// EnsurePKI then reissues the leaf certificates an older CA signed.
func InstallSecrets(dir string, s ClusterSecrets) error {
	if _, err := parseCertPEM(s.CACert); err != nil {
		return fmt.Errorf("cluster secrets: CA certificate: %w", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
		perm os.FileMode
	}{{CACertFile, s.CACert, 0o644}, {CAKeyFile, s.CAKey, 0o600}, {SAKeyFile, s.SAKey, 0o600},
		{FrontProxyCACertFile, s.FrontProxyCACert, 0o644}, {FrontProxyCAKeyFile, s.FrontProxyCAKey, 0o600}} {
		p := filepath.Join(dir, f.name)
		if len(f.data) == 0 || sameFileContent(p, f.data) {
			continue
		}
		if err := writeFileAtomic(p, f.data, f.perm); err != nil {
			return err
		}
	}
	return nil
}
