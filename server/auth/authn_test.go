package auth

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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
	u := &User{Name: "x"}
	if got, ok := UserFrom(WithUser(context.Background(), u)); !ok || got != u {
		t.Error("WithUser/UserFrom round trip failed")
	}
}

func TestMiddleware(t *testing.T) {
	a := newTokenAuthenticator(t)
	e := echo.New()
	skip := func(path string) bool {
		switch path {
		case "/healthz", "/livez", "/readyz", "/version":
			return true
		}
		return strings.HasPrefix(path, "/healthz/")
	}
	// The lead's error handler writes the Status; here UnauthorizedStatus
	// stands in for it.
	e.Use(Middleware(a, UnauthorizedStatus, skip))
	handler := func(c echo.Context) error {
		if u, ok := UserFrom(c.Request().Context()); ok {
			return c.String(http.StatusOK, "user="+u.Name)
		}
		return c.String(http.StatusOK, "anonymous")
	}
	e.GET("/api/v1/pods", handler)
	e.GET("/healthz", handler)

	do := func(path, authz string) *httptest.ResponseRecorder {
		r := httptest.NewRequest(http.MethodGet, path, nil)
		if authz != "" {
			r.Header.Set("Authorization", authz)
		}
		w := httptest.NewRecorder()
		e.ServeHTTP(w, r)
		return w
	}

	w := do("/api/v1/pods", "")
	if w.Code != http.StatusUnauthorized {
		t.Fatalf("anonymous: status %d", w.Code)
	}
	if got := strings.TrimSpace(w.Body.String()); got != unauthorizedBody {
		t.Errorf("anonymous body = %s", got)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("content type = %q", ct)
	}

	if w := do("/api/v1/pods", "Bearer s3cret"); w.Code != http.StatusOK || w.Body.String() != "user=alice" {
		t.Errorf("token: %d %s", w.Code, w.Body)
	}
	if w := do("/api/v1/pods", "Bearer nope"); w.Code != http.StatusUnauthorized {
		t.Errorf("bad token: %d", w.Code)
	}
	if w := do("/healthz", ""); w.Code != http.StatusOK || w.Body.String() != "anonymous" {
		t.Errorf("healthz anonymous: %d %s", w.Code, w.Body)
	}
	if w := do("/healthz", "Bearer plain"); w.Code != http.StatusOK || w.Body.String() != "user=bob" {
		t.Errorf("healthz with token: %d %s", w.Code, w.Body)
	}
	// Bad credentials are refused even where anonymous access is allowed.
	if w := do("/healthz", "Bearer nope"); w.Code != http.StatusUnauthorized {
		t.Errorf("healthz bad token: %d", w.Code)
	}

	// A nil unauthorized handler falls back to the Status body; nil skip
	// protects everything.
	e2 := echo.New()
	e2.Use(Middleware(a, nil, nil))
	e2.GET("/healthz", handler)
	w = httptest.NewRecorder()
	e2.ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != http.StatusUnauthorized || strings.TrimSpace(w.Body.String()) != unauthorizedBody {
		t.Errorf("default unauthorized: %d %s", w.Code, w.Body)
	}
}

func TestAlwaysAllow(t *testing.T) {
	var az Authorizer = AlwaysAllow{}
	ok, _, err := az.Authorize(context.Background(), Attributes{User: &User{Name: "x"}, Verb: "delete", Resource: "pods", ResourceRequest: true})
	if !ok || err != nil {
		t.Fatalf("AlwaysAllow denied: %v %v", ok, err)
	}
}
