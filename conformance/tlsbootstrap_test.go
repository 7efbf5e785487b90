package conformance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate/csr"
)

// tlsBootstrap: a kubelet joins as kubeadm join sets it up. A bootstrap
// token (Tabula's --enable-bootstrap-token-auth) authenticates it as
// system:bootstrap:<id> in kubeadm's node group; client-go's CSR helpers,
// which the kubelet's TLS bootstrap runs, request a client certificate;
// kube-controller-manager's csrapproving approves it (the group may
// create nodeclient requests, checked by a SubjectAccessReview) and its
// csrsigning signs it with the cluster CA; the certificate then
// authenticates as the node.
func (c *cluster) tlsBootstrap(t *testing.T, ctx context.Context, _ string) {
	const id, secret, group = "tbjoin", "0123456789abcdef", "system:bootstrappers:kubeadm:default-node-token"
	if _, err := c.cs.CoreV1().Secrets("kube-system").Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "bootstrap-token-" + id},
		Type:       corev1.SecretTypeBootstrapToken,
		StringData: map[string]string{"token-id": id, "token-secret": secret, "usage-bootstrap-authentication": "true",
			"auth-extra-groups": group, "expiration": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// kubeadm's two bindings for the group.
	for name, role := range map[string]string{
		"kubeadm:kubelet-bootstrap":          "system:node-bootstrapper",
		"kubeadm:node-autoapprove-bootstrap": "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
	} {
		if _, err := c.cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.GroupKind, Name: group}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	bootCfg := rest.AnonymousClientConfig(c.tg.restConfig())
	bootCfg.BearerToken = id + "." + secret
	boot, err := kubernetes.NewForConfig(bootCfg)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	const node = "joined-node"
	request, err := certutil.MakeCSR(key, &pkix.Name{CommonName: "system:node:" + node, Organization: []string{"system:nodes"}}, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	var name string
	var uid types.UID
	// The bindings may take a moment to reach every replica's authorizer.
	waitFor(t, "the bootstrap user's CSR created", clusterWait, func() (bool, string) {
		n, u, err := csr.RequestCertificateWithContext(ctx, boot, request, "", certificatesv1.KubeAPIServerClientKubeletSignerName, nil,
			[]certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}, key)
		if err != nil {
			return false, err.Error()
		}
		name, uid = n, u
		return true, ""
	})
	wctx, cancel := context.WithTimeout(ctx, clusterWait)
	defer cancel()
	certPEM, err := csr.WaitForCertificate(wctx, boot, name, uid)
	if err != nil {
		got, _ := c.cs.CertificatesV1().CertificateSigningRequests().Get(ctx, name, metav1.GetOptions{})
		t.Fatalf("waiting for kube-controller-manager to approve and sign %s: %v\n%+v", name, err, got)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	nodeCfg := rest.AnonymousClientConfig(c.tg.restConfig())
	nodeCfg.CertData, nodeCfg.KeyData = certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER})
	nodeClient, err := kubernetes.NewForConfig(nodeCfg)
	if err != nil {
		t.Fatal(err)
	}
	r, err := nodeClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := r.Status.UserInfo; u.Username != "system:node:"+node || !slices.Contains(u.Groups, "system:nodes") {
		t.Errorf("the issued certificate authenticates as %s %v; want system:node:%s in system:nodes", u.Username, u.Groups, node)
	}
}
