package server_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
)

// legacyToken signs a Secret-based token as kube-controller-manager's
// token controller does: ES256 over the legacy issuer's claims, no
// audience, no expiry, the key's id (a hash of its public key) in the
// header.
func legacyToken(t *testing.T, key *ecdsa.PrivateKey, ns, sa, saUID, secret string) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return base64.RawURLEncoding.EncodeToString(b)
	}
	der, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	kid := sha256.Sum256(der)
	in := enc(map[string]string{"alg": "ES256", "kid": base64.RawURLEncoding.EncodeToString(kid[:])}) + "." + enc(map[string]string{
		"iss": auth.LegacyIssuer, "sub": "system:serviceaccount:" + ns + ":" + sa,
		"kubernetes.io/serviceaccount/namespace": ns, "kubernetes.io/serviceaccount/secret.name": secret,
		"kubernetes.io/serviceaccount/service-account.name": sa, "kubernetes.io/serviceaccount/service-account.uid": saUID,
	})
	digest := sha256.Sum256([]byte(in))
	r, s, err := ecdsa.Sign(rand.Reader, key, digest[:])
	if err != nil {
		t.Fatal(err)
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	s.FillBytes(sig[32:])
	return in + "." + base64.RawURLEncoding.EncodeToString(sig)
}

// TestLegacyServiceAccountToken: a token in a kubernetes.io/service-account-token
// Secret authenticates as its ServiceAccount while the Secret holds it,
// with kube-apiserver's tracking: the Secret labelled with the day it was
// used, the audit annotation saying whether the Secret was auto-generated
// (then a Warning too), and a Secret marked invalid refused.
func TestLegacyServiceAccountToken(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{ServiceAccountTokens: newSATokens(t, key),
		Audit: server.AuditConfig{PolicyFile: policy, LogPath: log}})
	t.Cleanup(srv.StopAuditing)
	const ns = "/api/v1/namespaces/default"
	rec := h.do("POST", ns+"/serviceaccounts", as("tok-root"), []byte(`{"metadata":{"name":"old"}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create serviceaccount: %d %s", rec.Code, rec.Body)
	}
	var sa struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(rec.Body.Bytes(), &sa)
	tok := legacyToken(t, key, "default", "old", sa.Metadata.UID, "old-token")
	whoami := func(token string) (int, string, http.Header) {
		rec := h.do("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", as(token), []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
		return rec.Code, rec.Body.String(), rec.Header()
	}
	if code, body, _ := whoami(tok); code != http.StatusUnauthorized {
		t.Fatalf("before its Secret exists: %d %s", code, body)
	}
	secret := `{"metadata":{"name":"old-token","annotations":{"kubernetes.io/service-account.name":"old"}},"type":"kubernetes.io/service-account-token","data":{"token":"` + base64.StdEncoding.EncodeToString([]byte(tok)) + `"}}`
	if rec := h.do("POST", ns+"/secrets", as("tok-root"), []byte(secret)); rec.Code != http.StatusCreated {
		t.Fatalf("create secret: %d %s", rec.Code, rec.Body)
	}
	code, body, hdr := whoami(tok)
	if code != http.StatusCreated || !strings.Contains(body, `"username":"system:serviceaccount:default:old"`) || !strings.Contains(body, `"uid":"`+sa.Metadata.UID+`"`) {
		t.Fatalf("with its Secret: %d %s", code, body)
	}
	if w := hdr.Values("Warning"); len(w) != 0 {
		t.Errorf("a manually created Secret's token warned: %q", w)
	}
	today := time.Now().UTC().Format(time.DateOnly)
	labelled := func() string {
		rec := h.do("GET", ns+"/secrets/old-token", as("tok-root"), nil)
		var s struct {
			Metadata struct{ Labels map[string]string }
		}
		_ = json.Unmarshal(rec.Body.Bytes(), &s)
		return s.Metadata.Labels[auth.LegacyTokenLastUsedLabel]
	}
	if got := labelled(); got != today {
		t.Errorf("last-used label = %q, want %q", got, today)
	}

	// Listed in the account's secrets, it is an auto-generated token: kube
	// warns its user.
	if rec := h.do("PATCH", ns+"/serviceaccounts/old", as("tok-root", "Content-Type", "application/merge-patch+json"), []byte(`{"secrets":[{"name":"old-token"}]}`)); rec.Code != http.StatusOK {
		t.Fatalf("patch serviceaccount: %d %s", rec.Code, rec.Body)
	}
	_, _, hdr = whoami(tok)
	if w := hdr.Values("Warning"); len(w) != 1 || w[0] != `299 - "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens."` {
		t.Errorf("an auto-generated Secret's token: warnings %q", w)
	}

	// TokenReview: valid for the API server's audiences.
	rec = h.do("POST", "/apis/authentication.k8s.io/v1/tokenreviews", as("tok-root"), []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+tok+`"}}`))
	if !strings.Contains(rec.Body.String(), `"authenticated":true`) || !strings.Contains(rec.Body.String(), `"audiences":["`+auth.DefaultIssuer+`"]`) {
		t.Errorf("token review: %d %s", rec.Code, rec.Body)
	}
	// Not for another audience: a Secret's token names none, so it is
	// the API server's alone (a vault asking about its own is refused).
	rec = h.do("POST", "/apis/authentication.k8s.io/v1/tokenreviews", as("tok-root"), []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+tok+`","audiences":["vault"]}}`))
	if strings.Contains(rec.Body.String(), `"authenticated":true`) || !strings.Contains(rec.Body.String(), `is invalid for the target audiences [\"vault\"]`) {
		t.Errorf("token review for another audience: %d %s; want it refused", rec.Code, rec.Body)
	}

	// Refused: marked invalid, another token in the Secret, the Secret gone.
	for _, c := range []struct{ what, patch string }{
		{"marked invalid", `{"metadata":{"labels":{"` + auth.LegacyTokenInvalidSinceLabel + `":"` + today + `"}}}`},
		{"the Secret holds another token", `{"metadata":{"labels":{"` + auth.LegacyTokenInvalidSinceLabel + `":null}},"data":{"token":"` + base64.StdEncoding.EncodeToString([]byte("other")) + `"}}`},
	} {
		if rec := h.do("PATCH", ns+"/secrets/old-token", as("tok-root", "Content-Type", "application/merge-patch+json"), []byte(c.patch)); rec.Code != http.StatusOK {
			t.Fatalf("patch secret: %d %s", rec.Code, rec.Body)
		}
		if code, body, _ := whoami(tok); code != http.StatusUnauthorized {
			t.Errorf("%s: %d %s", c.what, code, body)
		}
	}
	if rec := h.do("DELETE", ns+"/secrets/old-token", as("tok-root"), nil); rec.Code != http.StatusOK {
		t.Fatalf("delete secret: %d %s", rec.Code, rec.Body)
	}
	if code, body, _ := whoami(tok); code != http.StatusUnauthorized {
		t.Errorf("after its Secret is deleted: %d %s", code, body)
	}

	// The audit log says which kind of Secret each use came from.
	srv.StopAuditing()
	annotations := map[string]int{}
	for _, e := range readAudit(t, log) {
		if e.Stage != auditv1.StageResponseComplete {
			continue
		}
		for _, k := range []string{"authentication.k8s.io/legacy-token", "authentication.k8s.io/legacy-token-manual-secret", "authentication.k8s.io/legacy-token-autogenerated-secret", "authentication.k8s.io/legacy-token-invalidated"} {
			if v, ok := e.Annotations[k]; ok {
				annotations[k+"="+v]++
			}
		}
	}
	for _, want := range []string{"authentication.k8s.io/legacy-token-manual-secret=old-token", "authentication.k8s.io/legacy-token-autogenerated-secret=old-token",
		"authentication.k8s.io/legacy-token=system:serviceaccount:default:old"} {
		if annotations[want] == 0 {
			t.Errorf("no audit event with %s; annotations seen: %v", want, annotations)
		}
	}
}
