package auth

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Names used inside the generated kubeconfig.
const (
	KubeconfigCluster = "tabula"
	KubeconfigContext = "tabula"
	KubeconfigUser    = AdminUser
)

// WriteKubeconfig writes an admin kubeconfig for serverURL to path: cluster
// "tabula" trusting the PKI's CA, user "tabula-admin" with the admin client
// certificate embedded, and context "tabula" (namespace default) selected.
// Credentials are embedded rather than referenced by path so the file keeps
// working when copied to another machine.
//
// The file is rewritten only when its content would change (a new server URL,
// or reissued certificates), so an unchanged restart leaves it untouched. It
// always ends up mode 0600 because it carries a private key.
func WriteKubeconfig(path, serverURL string, p *PKI) error {
	if p == nil || len(p.CAPEM) == 0 || len(p.adminCertPEM) == 0 || len(p.adminKeyPEM) == 0 {
		return errors.New("kubeconfig: PKI not loaded (use EnsurePKI)")
	}
	return writeKubeconfig(path, serverURL, p, KubeconfigUser, p.adminCertPEM, p.adminKeyPEM)
}

// WriteComponentKubeconfig writes the kubeconfig of one of Components:
// the same cluster, its own certificate.
func WriteComponentKubeconfig(path, serverURL string, p *PKI, name string) error {
	pair, ok := p.components[name]
	if !ok {
		return fmt.Errorf("kubeconfig: no component %q in the PKI", name)
	}
	return writeKubeconfig(path, serverURL, p, name, pair[0], pair[1])
}

func writeKubeconfig(path, serverURL string, p *PKI, user string, certPEM, keyPEM []byte) error {
	if path == "" {
		return errors.New("kubeconfig: empty path")
	}
	if serverURL == "" {
		return errors.New("kubeconfig: empty server URL")
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[KubeconfigCluster] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: p.ServingCAPEM, // none: the system roots verify a served certificate from files
	}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certPEM,
		ClientKeyData:         keyPEM,
	}
	cfg.Contexts[KubeconfigContext] = &clientcmdapi.Context{
		Cluster:   KubeconfigCluster,
		AuthInfo:  user,
		Namespace: "default",
	}
	cfg.CurrentContext = KubeconfigContext

	// clientcmd.Write rather than clientcmd.WriteToFile: the latter keeps the
	// mode of an existing file (os.WriteFile only applies 0600 on creation)
	// and writes in place, so a reader could see a truncated file.
	content, err := clientcmd.Write(*cfg)
	if err != nil {
		return fmt.Errorf("kubeconfig: encode: %w", err)
	}
	if sameFileContent(path, content) {
		if err := os.Chmod(path, 0o600); err != nil {
			return fmt.Errorf("kubeconfig: %w", err)
		}
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	if err := writeFileAtomic(path, content, 0o600); err != nil {
		return fmt.Errorf("kubeconfig: %w", err)
	}
	return nil
}
