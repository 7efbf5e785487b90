package authnconfig

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/tabula-dev/tabula/server/auth/authnconfig/oidctest"
)

// config is the test issuer's AuthenticationConfiguration (see
// oidctest), its users' names and groups prefixed.
func config(is *oidctest.Issuer, prefix string) string { return is.AuthenticationConfig(prefix) }

func startIssuer(t *testing.T) *oidctest.Issuer {
	t.Helper()
	is, err := oidctest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(is.Close)
	return is
}

// fromFile writes content to a file and starts an Authenticator on it.
func fromFile(t *testing.T, content string) (*Authenticator, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "authn.yaml")
	write(t, path, content)
	a, err := New(t.Context(), Options{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	return a, path
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// waitHealthy waits for the issuers' keys to be fetched (discovery runs
// in the background, as in kube-apiserver).
func waitHealthy(t *testing.T, a *Authenticator) {
	t.Helper()
	var last error
	if err := wait.PollUntilContextTimeout(t.Context(), 20*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		last = a.Healthy()
		return last == nil, nil
	}); err != nil {
		t.Fatalf("issuer never reached: %v", last)
	}
}

func token(t *testing.T, is *oidctest.Issuer, claims map[string]any) string {
	t.Helper()
	tok, err := is.Token(claims)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// alice's claims, which the configuration accepts.
func alice() map[string]any {
	return map[string]any{"sub": "u-123", "aud": "tabula", "email": "alice@example.com", "hd": "example.com",
		"groups": []string{"dev", "ops"}, "team": "platform"}
}

func with(c map[string]any, k string, v any) map[string]any {
	c[k] = v
	return c
}

func TestJWTAuthenticator(t *testing.T) {
	is := startIssuer(t)
	path := filepath.Join(t.TempDir(), "authn.yaml")
	write(t, path, config(is, "oidc:"))
	a, err := New(t.Context(), Options{Path: path, DisallowedIssuers: []string{"https://kubernetes.default.svc.cluster.local"}})
	if err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, a)
	ctx := context.Background()

	resp, ok, err := a.AuthenticateToken(ctx, token(t, is, alice()))
	if err != nil || !ok {
		t.Fatalf("alice: ok=%v err=%v", ok, err)
	}
	u := resp.User
	if u.GetName() != "oidc:alice@example.com" || u.GetUID() != "u-123" ||
		!reflect.DeepEqual(u.GetGroups(), []string{"oidc:dev", "oidc:ops"}) ||
		!reflect.DeepEqual(u.GetExtra()["example.com/team"], []string{"platform"}) {
		t.Errorf("alice mapped to %q uid %q groups %q extra %v", u.GetName(), u.GetUID(), u.GetGroups(), u.GetExtra())
	}

	// Refusals: kube's own errors, each naming what failed.
	for _, c := range []struct {
		name   string
		claims map[string]any
		want   string
	}{
		{"claim validation rule", with(alice(), "hd", "other.org"), "the hosted domain must be example.com"},
		{"user validation rule", with(alice(), "email", "system:admin"), "system users may not come from the issuer"},
		{"another audience", with(alice(), "aud", "someone-else"), "expected audience"},
		{"expired", with(alice(), "exp", time.Now().Add(-time.Hour).Unix()), "token is expired"},
		{"username claim missing", func() map[string]any { c := alice(); delete(c, "email"); return c }(), "claim not present"},
	} {
		_, ok, err := a.AuthenticateToken(ctx, token(t, is, c.claims))
		if ok || err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ok=%v err=%v, want an error with %q", c.name, ok, err, c.want)
		}
	}

	// A token of an issuer the file does not name is not its concern: the
	// next authenticator (or a 401) decides.
	other := startIssuer(t)
	if _, ok, err := a.AuthenticateToken(ctx, token(t, other, alice())); ok || err != nil {
		t.Errorf("another issuer's token: ok=%v err=%v, want not claimed", ok, err)
	}
	if _, ok, err := a.AuthenticateToken(ctx, "not-a-jwt"); ok || err != nil {
		t.Errorf("not a JWT: ok=%v err=%v, want not claimed", ok, err)
	}
}

func TestDecodeErrors(t *testing.T) {
	is := startIssuer(t)
	sa := "https://kubernetes.default.svc.cluster.local"
	for _, c := range []struct{ name, data, want string }{
		{"empty", "", "empty config data"},
		{"unknown field", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwts: []\n", `unknown field "jwts"`},
		{"another kind", "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthorizationConfiguration\n", "expected AuthenticationConfiguration"},
		{"the service account issuer", strings.Replace(config(is, "oidc:"), is.URL, sa, 1), `jwt[0].issuer.url: Invalid value: "` + sa + `": URL must not overlap with disallowed issuers`},
		{"bad CEL", strings.Replace(config(is, "oidc:"), `claims.hd == "example.com"`, `claims.hd ==`, 1), "jwt[0].claimValidationRules[0].expression: Invalid value"},
		{"http issuer", strings.Replace(config(is, "oidc:"), is.URL, "http://example.com", 1), `jwt[0].issuer.url: Invalid value: "http://example.com": URL scheme must be https`},
	} {
		_, err := Decode([]byte(c.data), []string{sa})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error with %q", c.name, err, c.want)
		}
	}
	// Older versions are read too.
	v1beta1 := strings.Replace(config(is, "oidc:"), "apiserver.config.k8s.io/v1", "apiserver.config.k8s.io/v1beta1", 1)
	if _, err := Decode([]byte(v1beta1), []string{sa}); err != nil {
		t.Errorf("v1beta1: %v", err)
	}
}

// TestReload: a changed file replaces the issuers' mappings once its
// issuers answer; an invalid one is refused and the previous kept.
func TestReload(t *testing.T) {
	is := startIssuer(t)
	a, path := fromFile(t, config(is, "oidc:"))
	waitHealthy(t, a)
	name := func() string {
		resp, ok, err := a.AuthenticateToken(context.Background(), token(t, is, alice()))
		if !ok || err != nil {
			t.Fatalf("alice: ok=%v err=%v", ok, err)
		}
		return resp.User.GetName()
	}
	if err := a.Reload(t.Context()); err != nil || name() != "oidc:alice@example.com" {
		t.Fatalf("an unchanged file: %v, %s", err, name())
	}
	write(t, path, config(is, "corp:"))
	if err := a.Reload(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := name(); got != "corp:alice@example.com" {
		t.Errorf("after the reload alice is %q", got)
	}
	write(t, path, "apiVersion: apiserver.config.k8s.io/v1\nkind: AuthenticationConfiguration\njwt: [{}]\n")
	if err := a.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "jwt[0].issuer.url: Required value") {
		t.Errorf("an invalid file: %v", err)
	}
	if got := name(); got != "corp:alice@example.com" {
		t.Errorf("after an invalid file alice is %q", got)
	}
	// The anonymous section is fixed at start.
	write(t, path, config(is, "corp:")+"anonymous:\n  enabled: true\n")
	if err := a.Reload(t.Context()); err == nil || !strings.Contains(err.Error(), "anonymous: Forbidden: changed from initial configuration file") {
		t.Errorf("a changed anonymous section: %v", err)
	}
}

func TestAnonymousSection(t *testing.T) {
	is := startIssuer(t)
	a, _ := fromFile(t, config(is, "oidc:"))
	if _, _, configured := a.Anonymous(); configured {
		t.Error("a file without an anonymous section configures it")
	}
	a, _ = fromFile(t, config(is, "oidc:")+"anonymous:\n  enabled: true\n  conditions:\n  - path: /livez\n  - path: /readyz\n")
	enabled, paths, configured := a.Anonymous()
	if !enabled || !configured || !reflect.DeepEqual(paths, []string{"/livez", "/readyz"}) {
		t.Errorf("anonymous = %v %v %v", enabled, paths, configured)
	}
}
