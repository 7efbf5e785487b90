package conformance

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/server/auth/authnconfig/oidctest"
)

// The shared servers trust one test OpenID Connect issuer, started with
// the first of them and stopped by TestMain after them, through an
// AuthenticationConfiguration (--authentication-config) as a cluster
// trusting a company's identity provider would.
var sharedIssuer struct {
	once sync.Once
	is   *oidctest.Issuer
	err  error
}

func testIssuer() (*oidctest.Issuer, error) {
	sharedIssuer.once.Do(func() { sharedIssuer.is, sharedIssuer.err = oidctest.Start() })
	return sharedIssuer.is, sharedIssuer.err
}

// stopIssuer stops the issuer if it was started.
func stopIssuer() {
	if sharedIssuer.is != nil {
		sharedIssuer.is.Close()
	}
}

// authenticationArgs writes the shared authentication configuration into
// dir and returns its flag.
func authenticationArgs(dir string) ([]string, error) {
	is, err := testIssuer()
	if err != nil {
		return nil, err
	}
	// The issuer's users are "oidc:<email>" in groups "oidc:<group>".
	path := filepath.Join(dir, "authentication-config.yaml")
	if err := os.WriteFile(path, []byte(is.AuthenticationConfig("oidc:")), 0o600); err != nil {
		return nil, err
	}
	return []string{"--authentication-config", path}, nil
}

// TestExternalIdentity: a user of an external OpenID Connect issuer is
// known by the claims the configuration maps, gets what RBAC grants its
// mapped groups, and a token the configuration's rules refuse is a 401.
func TestExternalIdentity(t *testing.T) {
	if !ownServerOnly(t, "the issuer is one the suite starts and its servers trust") {
		return
	}
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "oidc", func(t *testing.T) { externalIdentityScenario(t, tg) })
	})
}

func externalIdentityScenario(t *testing.T, tg *target) {
	is, err := testIssuer()
	if err != nil {
		t.Fatal(err)
	}
	admin := newKubectl(t, tg)
	ns := newNamespace(t, tg)
	sign := func(claims map[string]any) string {
		tok, err := is.Token(claims)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	claims := func() map[string]any {
		return map[string]any{"sub": "u-42", "aud": "tabula", "email": "dana@example.com", "hd": "example.com",
			"groups": []string{"dev"}, "team": "payments"}
	}
	dana := tokenKubectl(t, tg, sign(claims()))

	// The server fetches the issuer's keys in the background after start;
	// until then its tokens are refused.
	var who string
	waitFor(t, "the issuer's keys fetched", 30*time.Second, func() (bool, string) {
		r := dana.run(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username} {.status.userInfo.uid} {.status.userInfo.groups} {.status.userInfo.extra}")
		who = r.stdout
		return r.code == 0, r.String()
	})
	if want := `oidc:dana@example.com u-42 ["oidc:dev","system:authenticated"] {"example.com/team":["payments"]}`; who != want {
		t.Errorf("kubectl auth whoami:\n got %s\nwant %s", who, want)
	}

	// RBAC sees the mapped names.
	r := dana.fails(t, runOpts{}, "get", "configmaps", "-n", ns)
	if want := `configmaps is forbidden: User "oidc:dana@example.com" cannot list resource "configmaps" in API group "" in the namespace "` + ns + `"`; !strings.Contains(r.stderr, want) {
		t.Errorf("before a binding:\n%s\nwant %q", r, want)
	}
	admin.ok(t, "create", "rolebinding", "dev-view", "--clusterrole=view", "--group=oidc:dev", "-n", ns)
	waitFor(t, "the group binding in effect", 30*time.Second, func() (bool, string) {
		r := dana.run(t, "get", "configmaps", "-n", ns)
		return r.code == 0, r.String()
	})
	if r := dana.run(t, "auth", "can-i", "create", "configmaps", "-n", ns); r.code != 1 || strings.TrimSpace(r.stdout) != "no" {
		t.Errorf("dana may create configmaps:\n%s", r)
	}

	// Tokens the configuration refuses.
	for name, c := range map[string]map[string]any{
		"another hosted domain": func() map[string]any { c := claims(); c["hd"] = "elsewhere.org"; return c }(),
		"another audience":      func() map[string]any { c := claims(); c["aud"] = "other-app"; return c }(),
		"expired":               func() map[string]any { c := claims(); c["exp"] = time.Now().Add(-time.Minute).Unix(); return c }(),
	} {
		r := tokenKubectl(t, tg, sign(c)).fails(t, runOpts{}, "get", "configmaps", "-n", ns)
		if !strings.Contains(r.stderr, "You must be logged in to the server") {
			t.Errorf("%s: want a 401:\n%s", name, r)
		}
	}
}
