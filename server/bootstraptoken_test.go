package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/auth/authz"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// bootstrapTokenServer is a server with RBAC, the static user tok-root
// (system:masters) and bootstrap tokens on or off.
func bootstrapTokenServer(t *testing.T, on bool) *refHarness {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("tok-root,root,1,\"system:masters\"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := auth.NewAuthenticator(auth.Options{TokenFile: tokens, BootstrapTokens: on})
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Authenticator: a,
		AuthorizationModes: authz.DefaultModes, AnonymousAuth: true})
	return &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
}

// bootstrapTokenSecret is a kube-system Secret as kubeadm token create
// writes it.
func bootstrapTokenSecret(id, secret, expiration, usage string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"bootstrap-token-%s","namespace":"kube-system"},
		"type":"bootstrap.kubernetes.io/token","stringData":{"token-id":%q,"token-secret":%q,"expiration":%q,
		"usage-bootstrap-authentication":%q,"usage-bootstrap-signing":"true","auth-extra-groups":"system:bootstrappers:kubeadm:default-node-token"}}`,
		id, id, secret, expiration, usage)
}

// TestBootstrapTokens: with --enable-bootstrap-token-auth, a bootstrap
// token authenticates as kube's authenticator decides from its Secret:
// system:bootstrap:<id> in system:bootstrappers and the Secret's extra
// groups, while the Secret is there, matches, allows authentication
// and has not expired. As that user a kubelet starting its TLS bootstrap
// creates its CSR (kubeadm binds system:node-bootstrapper to the group).
// Without the flag the same token is refused.
func TestBootstrapTokens(t *testing.T) {
	h := bootstrapTokenServer(t, true)
	root := map[string]string{"Authorization": "Bearer tok-root", "Content-Type": "application/json"}
	bearer := func(tok string) map[string]string {
		return map[string]string{"Authorization": "Bearer " + tok, "Content-Type": "application/json"}
	}
	future := time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	past := time.Now().Add(-time.Hour).UTC().Format(time.RFC3339)
	for _, s := range []string{
		bootstrapTokenSecret("abcdef", "0123456789abcdef", future, "true"),
		bootstrapTokenSecret("expird", "0123456789abcdef", past, "true"),
		bootstrapTokenSecret("nouse1", "0123456789abcdef", future, "false"),
	} {
		if r := h.do("POST", "/api/v1/namespaces/kube-system/secrets", root, []byte(s)); r.Code != http.StatusCreated {
			t.Fatalf("create Secret: %d %s", r.Code, r.Body)
		}
	}
	review := func(tok string) (int, string) {
		r := h.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", bearer(tok), []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		return r.Code, r.Body.String()
	}
	code, body := review("abcdef.0123456789abcdef")
	if code != http.StatusCreated || !strings.Contains(body, `"username":"system:bootstrap:abcdef"`) ||
		!strings.Contains(body, `"groups":["system:bootstrappers","system:bootstrappers:kubeadm:default-node-token","system:authenticated"]`) {
		t.Fatalf("SelfSubjectReview with a bootstrap token: %d %s", code, body)
	}
	for tok, why := range map[string]string{
		"abcdef.0123456789abcdee": "a wrong secret",
		"expird.0123456789abcdef": "an expired token",
		"nouse1.0123456789abcdef": "a token not for authentication",
		"zzzzzz.0123456789abcdef": "a token without a Secret",
	} {
		if code, body := review(tok); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s; want 401", why, code, body)
		}
	}
	// A TokenReview finds it too, for the API server's audiences.
	if r := h.do("POST", "/apis/authentication.k8s.io/v1/tokenreviews", root, []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"abcdef.0123456789abcdef"}}`)); r.Code != http.StatusCreated ||
		!strings.Contains(r.Body.String(), `"authenticated":true`) || !strings.Contains(r.Body.String(), `"username":"system:bootstrap:abcdef"`) {
		t.Errorf("TokenReview of a bootstrap token: %d %s", r.Code, r.Body)
	}

	// kubelet TLS bootstrap: the CSR as the bootstrap user.
	if r := h.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", root, []byte(`{"metadata":{"name":"kubeadm:kubelet-bootstrap"},
		"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"system:node-bootstrapper"},
		"subjects":[{"apiGroup":"rbac.authorization.k8s.io","kind":"Group","name":"system:bootstrappers:kubeadm:default-node-token"}]}`)); r.Code != http.StatusCreated {
		t.Fatalf("binding: %d %s", r.Code, r.Body)
	}
	csr := `{"apiVersion":"certificates.k8s.io/v1","kind":"CertificateSigningRequest","metadata":{"name":"node-csr-1"},"spec":{"request":"` + nodeCSRPEM(t) + `",
		"signerName":"kubernetes.io/kube-apiserver-client-kubelet","usages":["digital signature","client auth"]}}`
	h.waitFor("the binding to authorize the CSR", func() bool {
		r := h.do("POST", "/apis/certificates.k8s.io/v1/certificatesigningrequests", bearer("abcdef.0123456789abcdef"), []byte(csr))
		if r.Code == http.StatusCreated && !strings.Contains(r.Body.String(), `"username":"system:bootstrap:abcdef"`) {
			t.Fatalf("CSR of the bootstrap user: %s", r.Body)
		}
		return r.Code == http.StatusCreated
	})

	// The token ends with its Secret.
	if r := h.do("DELETE", "/api/v1/namespaces/kube-system/secrets/bootstrap-token-abcdef", root, nil); r.Code != http.StatusOK {
		t.Fatalf("delete Secret: %d %s", r.Code, r.Body)
	}
	if code, body := review("abcdef.0123456789abcdef"); code != http.StatusUnauthorized {
		t.Errorf("after its Secret is deleted: %d %s; want 401", code, body)
	}

	off := bootstrapTokenServer(t, false)
	if r := off.do("POST", "/api/v1/namespaces/kube-system/secrets", root, []byte(bootstrapTokenSecret("abcdef", "0123456789abcdef", future, "true"))); r.Code != http.StatusCreated {
		t.Fatalf("create Secret: %d %s", r.Code, r.Body)
	}
	if r := off.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", bearer("abcdef.0123456789abcdef"), []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)); r.Code != http.StatusUnauthorized {
		t.Errorf("without --enable-bootstrap-token-auth: %d %s; want 401", r.Code, r.Body)
	}
}

// nodeCSRPEM is a kubelet's client certificate request, as its TLS
// bootstrap makes it, in PEM and then base64 (the field's bytes).
func nodeCSRPEM(t *testing.T) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "system:node:n1", Organization: []string{"system:nodes"}}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))
}
