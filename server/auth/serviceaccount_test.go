package auth

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/serviceaccount"
)

func newTokens(t *testing.T) *ServiceAccountTokens {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := NewServiceAccountTokens(key)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestServiceAccountTokens: a token authenticates its account while the
// account (and the object it is bound to) exist with the uids it names;
// expired, foreign, tampered and wrong-audience tokens do not.
func TestServiceAccountTokens(t *testing.T) {
	ctx := context.Background()
	tokens := newTokens(t)
	objects := map[string]string{"ServiceAccount/ns/bot": "uid-bot", "Pod/ns/p": "uid-p"}
	a, err := NewAuthenticator(Options{ServiceAccountTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	a.SetServiceAccountLookup(func(_ context.Context, kind, ns, name string) (string, bool, error) {
		uid, ok := objects[kind+"/"+ns+"/"+name]
		return uid, ok, nil
	})
	issueAt := func(s TokenSubject, at time.Time) string {
		t.Helper()
		tok, err := tokens.Issue(s, at)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	issue := func(s TokenSubject) string { return issueAt(s, time.Now()) }
	bot := TokenSubject{Namespace: "ns", Name: "bot", UID: "uid-bot", Expiry: time.Hour}

	u, auds, ok, err := a.AuthenticateToken(ctx, issue(bot), nil)
	if !ok || err != nil || u.Name != "system:serviceaccount:ns:bot" || u.UID != "uid-bot" ||
		strings.Join(u.Groups, ",") != "system:serviceaccounts,system:serviceaccounts:ns,system:authenticated" ||
		!slices.Equal(auds, tokens.Audiences) || len(u.Extra["authentication.kubernetes.io/credential-id"]) != 1 {
		t.Fatalf("valid token: %+v %v %v %v", u, auds, ok, err)
	}

	bound := bot
	bound.BoundKind, bound.BoundName, bound.BoundUID = "Pod", "p", "uid-p"
	boundTok := issue(bound)
	if u, _, ok, err := a.AuthenticateToken(ctx, boundTok, nil); !ok || err != nil || u.Extra["authentication.kubernetes.io/pod-name"][0] != "p" {
		t.Fatalf("bound token while the pod lives: %+v %v %v", u, ok, err)
	}
	// A Pod's token names its node to tell authorizers; the node is not
	// what it is bound to.
	onNode := bound
	onNode.NodeName, onNode.NodeUID = "n1", "uid-n1"
	if u, _, ok, err := a.AuthenticateToken(ctx, issue(onNode), nil); !ok || err != nil ||
		u.Extra["authentication.kubernetes.io/node-name"][0] != "n1" || u.Extra["authentication.kubernetes.io/node-uid"][0] != "uid-n1" {
		t.Fatalf("pod token naming a node no lookup finds: %+v %v %v", u, ok, err)
	}
	delete(objects, "Pod/ns/p")
	if _, _, ok, err := a.AuthenticateToken(ctx, boundTok, nil); ok || err == nil || err.Error() != "service account token has been invalidated" {
		t.Fatalf("bound token after the pod went: %v %v", ok, err)
	}

	other := bot
	other.Audiences = []string{"https://vault.example.com"}
	foreign := newTokens(t)
	foreignTok, _ := foreign.Issue(bot, time.Now())
	valid := issue(bot)
	tampered := valid[:len(valid)-4] + "AAAA"
	// Times have go-jose's minute of leeway, as kube's validator gives.
	expired := bot
	expired.Expiry = -2 * time.Minute
	justExpired := bot
	justExpired.Expiry = -30 * time.Second
	for name, tok := range map[string]string{"expired 30 s ago": issue(justExpired), "issued 30 s ahead": issueAt(bot, time.Now().Add(30*time.Second))} {
		if _, _, ok, err := a.AuthenticateToken(ctx, tok, nil); !ok || err != nil {
			t.Errorf("%s: %v %v; want accepted", name, ok, err)
		}
	}
	recreated := bot
	recreated.UID = "uid-old"
	for name, tok := range map[string]string{
		"wrong audience":     issue(other),
		"another issuer":     foreignTok,
		"tampered":           tampered,
		"expired":            issue(expired),
		"issued 5 min ahead": issueAt(bot, time.Now().Add(5*time.Minute)),
		"recreated account":  issue(recreated),
		"not a JWT":          "abc.def",
	} {
		if u, _, ok, err := a.AuthenticateToken(ctx, tok, nil); ok || err == nil {
			t.Errorf("%s: authenticated %+v (err %v); want refused", name, u, err)
		}
	}

	// A review for the other audience: valid there, and only there.
	vault := []string{"https://vault.example.com", "https://other.example.com"}
	if u, auds, ok, err := a.AuthenticateToken(ctx, issue(other), vault); !ok || err != nil || u.Name != "system:serviceaccount:ns:bot" ||
		!slices.Equal(auds, []string{"https://vault.example.com"}) {
		t.Errorf("review for the token's audience: %+v %v %v %v", u, auds, ok, err)
	}
	if _, _, ok, err := a.AuthenticateToken(ctx, valid, vault); ok || err == nil ||
		err.Error() != `token audiences ["`+DefaultIssuer+`"] is invalid for the target audiences ["https://vault.example.com" "https://other.example.com"]` {
		t.Errorf("an API server token reviewed for another audience: authenticated (err %v)", err)
	}
}

// TestStaleTokenAnnotation: a token used past the lifetime it asked for
// (its warnafter) is annotated for audit as kube annotates it; a token
// within it is not.
func TestStaleTokenAnnotation(t *testing.T) {
	tokens := newTokens(t)
	a, err := NewAuthenticator(Options{ServiceAccountTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	a.SetServiceAccountLookup(func(_ context.Context, kind, ns, name string) (string, bool, error) {
		if kind == "ServiceAccount" && name == "bot" {
			return "uid-bot", true, nil
		}
		return "", false, nil
	})
	stale := func(warnAfter time.Duration, issued time.Time) (string, bool) {
		t.Helper()
		tok, err := tokens.Issue(TokenSubject{Namespace: "ns", Name: "bot", UID: "uid-bot", Expiry: 24 * time.Hour, WarnAfter: warnAfter}, issued)
		if err != nil {
			t.Fatal(err)
		}
		ctx := audit.WithAuditContext(context.Background())
		if err := audit.AuditContextFrom(ctx).Init(audit.RequestAuditConfig{Level: auditinternal.LevelMetadata}, nil); err != nil {
			t.Fatal(err)
		}
		if _, _, ok, err := a.AuthenticateToken(ctx, tok, nil); !ok || err != nil {
			t.Fatalf("token: %v %v", ok, err)
		}
		return audit.AuditContextFrom(ctx).GetEventAnnotation("authentication.k8s.io/stale-token")
	}
	if v, ok := stale(time.Hour, time.Now().Add(-2*time.Hour)); !ok || !strings.HasPrefix(v, "subject: system:serviceaccount:ns:bot, seconds after warning threshold: ") {
		t.Errorf("a token an hour past its warnafter: %q %v; want kube's stale-token annotation", v, ok)
	}
	if v, ok := stale(time.Hour, time.Now()); ok {
		t.Errorf("a token within its warnafter: annotated %q", v)
	}
}

// TestTokenFormsAsKube: tokens are taken as kube-apiserver's service
// account authenticator takes them. A token kube's own code makes (its
// claims and generator; here with no audience, which counts as the API
// server's) authenticates. A token whose unverified issuer is another's,
// or that is not a compact JWS (the JSON form go-jose also reads), is
// left to other authenticators; one of this issuer with an unknown key id
// or a bad signature fails with kube's errors.
func TestTokenFormsAsKube(t *testing.T) {
	ctx := context.Background()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := NewServiceAccountTokens(key)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(Options{ServiceAccountTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	a.SetServiceAccountLookup(func(_ context.Context, kind, ns, name string) (string, bool, error) {
		return "uid-bot", kind == "ServiceAccount" && ns == "ns" && name == "bot", nil
	})

	// As kube-apiserver makes a token: kube's claims, kube's generator.
	pub, private, err := serviceaccount.Claims(core.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "bot", UID: "uid-bot"}},
		nil, nil, nil, 3600, 0, nil)
	if err != nil {
		t.Fatal(err)
	}
	gen, err := serviceaccount.JWTTokenGenerator(DefaultIssuer, key)
	if err != nil {
		t.Fatal(err)
	}
	kubeToken, err := gen.GenerateToken(ctx, pub, private)
	if err != nil {
		t.Fatal(err)
	}
	if u, auds, ok, err := a.AuthenticateToken(ctx, kubeToken, nil); !ok || err != nil || u.Name != "system:serviceaccount:ns:bot" || !slices.Equal(auds, tokens.Audiences) {
		t.Errorf("a token made by kube's code, no audience: %+v %v %v %v; want the account, for the API server's audiences", u, auds, ok, err)
	}

	mine, err := tokens.Issue(TokenSubject{Namespace: "ns", Name: "bot", UID: "uid-bot", Expiry: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(mine, ".")
	jsonForm := `{"protected":"` + parts[0] + `","payload":"` + parts[1] + `","signature":"` + parts[2] + `"}`
	if _, err := tokens.verify(jsonForm, tokens.Audiences); !errors.Is(err, errNotOurs) {
		t.Errorf("the JSON form of a valid token: %v; want it not taken", err)
	}
	if _, err := tokens.verify(mine+".x", tokens.Audiences); !errors.Is(err, errNotOurs) {
		t.Errorf("four parts: %v; want not taken", err)
	}

	other, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	otherTokens, err := NewServiceAccountTokens(other)
	if err != nil {
		t.Fatal(err)
	}
	foreign, err := otherTokens.Issue(TokenSubject{Namespace: "ns", Name: "bot", UID: "uid-bot", Expiry: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.verify(foreign, tokens.Audiences); err == nil || err.Error() != "invalid signature, no keys found" {
		t.Errorf("this issuer, an unknown key id: %v; want kube's invalid signature, no keys found", err)
	}
	badSig := parts[0] + "." + parts[1] + "." + strings.Split(foreign, ".")[2]
	if _, err := tokens.verify(badSig, tokens.Audiences); err == nil || errors.Is(err, errNotOurs) || !strings.Contains(err.Error(), "cryptographic primitive") {
		t.Errorf("this issuer, a bad signature: %v; want go-jose's error, as kube gives it", err)
	}
	otherTokens.Issuer = "https://elsewhere.example.com"
	elsewhere, err := otherTokens.Issue(TokenSubject{Namespace: "ns", Name: "bot", UID: "uid-bot", Expiry: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tokens.verify(elsewhere, tokens.Audiences); !errors.Is(err, errNotOurs) {
		t.Errorf("another issuer's token: %v; want it left to other authenticators", err)
	}
}
