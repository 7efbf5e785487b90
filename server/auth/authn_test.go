package auth

import (
	"context"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/labstack/echo/v4"
)

func newTokenAuthenticator(t *testing.T) *Authenticator {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.csv")
	content := "s3cret,alice,uid-1,\"devs,ops\"\nplain,bob,uid-2\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	a, err := NewAuthenticator(Options{TokenFile: path})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestAuthenticateBearer(t *testing.T) {
	a := newTokenAuthenticator(t)
	tests := []struct {
		header    string
		wantUser  string
		wantGroup []string
		wantErr   bool
	}{
		{header: "", wantUser: ""},
		{header: "Basic Zm9vOmJhcg==", wantUser: ""},
		{header: "Bearer ", wantUser: ""},
		{header: "Bearer s3cret", wantUser: "alice", wantGroup: []string{"devs", "ops", "system:authenticated"}},
		{header: "bearer plain", wantUser: "bob", wantGroup: []string{"system:authenticated"}},
		{header: "Bearer wrong", wantErr: true},
		{header: "Bearer s3cre", wantErr: true},
		// As kube's bearertoken: the word after the scheme is the token,
		// and two spaces leave none.
		{header: "Bearer s3cret trailing words", wantUser: "alice", wantGroup: []string{"devs", "ops", "system:authenticated"}},
		{header: "Bearer  s3cret", wantUser: ""},
	}
	for _, tt := range tests {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		if tt.header != "" {
			r.Header.Set("Authorization", tt.header)
		}
		u, ok, err := a.Authenticate(r)
		if (err != nil) != tt.wantErr {
			t.Errorf("%q: err = %v", tt.header, err)
			continue
		}
		if tt.wantUser == "" {
			if ok || u != nil {
				t.Errorf("%q: got user %+v, want none", tt.header, u)
			}
			continue
		}
		if !ok || u.Name != tt.wantUser || !slices.Equal(u.Groups, tt.wantGroup) {
			t.Errorf("%q: got %+v ok=%v", tt.header, u, ok)
		}
	}

	// Authenticated users must not share group slices with the token table.
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer s3cret")
	u1, _, _ := a.Authenticate(r)
	u1.Groups[0] = "mutated"
	u2, _, _ := a.Authenticate(r)
	if u2.Groups[0] != "devs" {
		t.Error("Authenticate returned groups aliased to the token table")
	}
}

// TestAuthenticateWebSocketProtocol: a WebSocket upgrade may carry its
// token as the subprotocol base64url.bearer.authorization.k8s.io.<token>,
// as kube-apiserver accepts it; that protocol is then taken out of the
// request, and a bad one is refused.
func TestAuthenticateWebSocketProtocol(t *testing.T) {
	a := newTokenAuthenticator(t)
	upgrade := func(protocols string) *http.Request {
		r := httptest.NewRequest(http.MethodGet, "/api/v1/namespaces/default/pods/p/log", nil)
		r.Header.Set("Connection", "Upgrade")
		r.Header.Set("Upgrade", "websocket")
		r.Header.Set("Sec-WebSocket-Protocol", protocols)
		return r
	}
	const prefix = "base64url.bearer.authorization.k8s.io."
	r := upgrade(prefix + base64.RawURLEncoding.EncodeToString([]byte("s3cret")) + ", v4.channel.k8s.io")
	if u, ok, err := a.Authenticate(r); !ok || err != nil || u.Name != "alice" || r.Header.Get("Sec-WebSocket-Protocol") != "v4.channel.k8s.io" {
		t.Errorf("token protocol: %+v %v %v, protocols left %q", u, ok, err, r.Header.Get("Sec-WebSocket-Protocol"))
	}
	for name, protocols := range map[string]string{
		"a wrong token":     prefix + base64.RawURLEncoding.EncodeToString([]byte("wrong")) + ", v4.channel.k8s.io",
		"no other protocol": prefix + base64.RawURLEncoding.EncodeToString([]byte("s3cret")),
		"not base64url":     prefix + "%%%, v4.channel.k8s.io",
		"two tokens":        prefix + "czNjcmV0, " + prefix + "czNjcmV0, v4.channel.k8s.io",
	} {
		if u, ok, err := a.Authenticate(upgrade(protocols)); ok || err == nil {
			t.Errorf("%s: authenticated %+v (err %v); want refused", name, u, err)
		}
	}
	// Not an upgrade: the protocol header means nothing.
	r = httptest.NewRequest(http.MethodGet, "/api", nil)
	r.Header.Set("Sec-WebSocket-Protocol", prefix+"czNjcmV0, v4.channel.k8s.io")
	if u, ok, err := a.Authenticate(r); ok || err != nil {
		t.Errorf("protocol header without an upgrade: %+v %v %v; want anonymous", u, ok, err)
	}
}

func TestBearerIgnoredWithoutTokenFile(t *testing.T) {
	a, err := NewAuthenticator(Options{})
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.Header.Set("Authorization", "Bearer whatever")
	if u, ok, err := a.Authenticate(r); ok || u != nil || err != nil {
		t.Fatalf("got %+v %v %v, want anonymous", u, ok, err)
	}
}

func TestUserContext(t *testing.T) {
	if _, ok := UserFrom(context.Background()); ok {
		t.Error("empty context has a user")
	}
	u := &User{Name: "x", UID: "1", Groups: []string{"g"}, Extra: map[string][]string{"k": {"v"}}}
	if got, ok := UserFrom(WithUser(context.Background(), u)); !ok || !reflect.DeepEqual(got, u) {
		t.Errorf("WithUser/UserFrom round trip: %+v", got)
	}
}

func TestMiddleware(t *testing.T) {
	a := newTokenAuthenticator(t)
	handler := func(c echo.Context) error {
		if u, ok := UserFrom(c.Request().Context()); ok {
			return c.String(http.StatusOK, "user="+u.Name+" groups="+strings.Join(u.Groups, ","))
		}
		return c.String(http.StatusOK, "nobody")
	}
	server := func(anonymous func(string) bool, unauthorized func(echo.Context) error) *echo.Echo {
		e := echo.New()
		e.Use(Middleware(a, unauthorized, anonymous))
		e.GET("/api/v1/pods", handler)
		e.GET("/healthz", handler)
		return e
	}
	do := func(e *echo.Echo, path, authz string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		return w
	}

	// Without anonymous requests, no credentials is a 401 everywhere.
	closed := server(nil, UnauthorizedStatus)
	for _, p := range []string{"/api/v1/pods", "/healthz"} {
		w := do(closed, p, "")
		if w.Code != http.StatusUnauthorized || strings.TrimSpace(w.Body.String()) != unauthorizedBody {
			t.Errorf("%s without credentials: %d %s", p, w.Code, w.Body)
		}
		if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
			t.Errorf("content type = %q", ct)
		}
	}
	if w := do(closed, "/api/v1/pods", "Bearer s3cret"); w.Code != http.StatusOK || !strings.HasPrefix(w.Body.String(), "user=alice ") || !strings.HasSuffix(w.Body.String(), ",system:authenticated") {
		t.Errorf("token: %d %s", w.Code, w.Body)
	}
	if w := do(closed, "/api/v1/pods", "Bearer nope"); w.Code != http.StatusUnauthorized {
		t.Errorf("bad token: %d", w.Code)
	}

	// With them, no credentials is system:anonymous (the authorizer
	// decides); bad credentials are still refused.
	open := server(func(string) bool { return true }, nil)
	if w := do(open, "/api/v1/pods", ""); w.Code != http.StatusOK || w.Body.String() != "user=system:anonymous groups=system:unauthenticated" {
		t.Errorf("anonymous: %d %s", w.Code, w.Body)
	}
	if w := do(open, "/healthz", "Bearer plain"); w.Code != http.StatusOK || !strings.HasPrefix(w.Body.String(), "user=bob ") {
		t.Errorf("healthz with token: %d %s", w.Code, w.Body)
	}
	if w := do(open, "/healthz", "Bearer nope"); w.Code != http.StatusUnauthorized || strings.TrimSpace(w.Body.String()) != unauthorizedBody {
		t.Errorf("healthz bad token: %d %s", w.Code, w.Body)
	}
	// Two spaces before the token: anonymous, with kube's warning.
	if w := do(open, "/api/v1/pods", "Bearer  s3cret"); w.Body.String() != "user=system:anonymous groups=system:unauthenticated" ||
		w.Header().Get("Warning") != `299 - "the provided Authorization header contains extra space before the bearer token, and is ignored"` {
		t.Errorf("space before the token: %d %s %q", w.Code, w.Body, w.Header().Get("Warning"))
	}

	// Limited to some paths (an AuthenticationConfiguration's anonymous
	// conditions), anonymous elsewhere is a 401.
	some := server(func(p string) bool { return p == "/healthz" }, nil)
	if w := do(some, "/healthz", ""); w.Code != http.StatusOK || !strings.HasPrefix(w.Body.String(), "user=system:anonymous ") {
		t.Errorf("anonymous /healthz: %d %s", w.Code, w.Body)
	}
	if w := do(some, "/api/v1/pods", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("anonymous /api/v1/pods outside the conditions: %d %s", w.Code, w.Body)
	}
}
