package server_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/auth/authz"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestServiceAccountTokenRequest: serviceaccounts/token issues a token
// the server then accepts as the account (and TokenReview confirms), with
// kube's validation; a token bound to a Pod dies with it.
func TestServiceAccountTokenRequest(t *testing.T) {
	do := tokenServer(t)
	const ns = "/api/v1/namespaces/default"
	for _, c := range []struct{ path, body string }{
		{ns + "/serviceaccounts", `{"metadata":{"name":"bot"}}`},
		{ns + "/pods", `{"metadata":{"name":"p"},"spec":{"serviceAccountName":"bot","containers":[{"name":"c","image":"busybox"}]}}`},
	} {
		if r := do("admintoken", "POST", c.path, c.body); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.path, r.Code, r.Body)
		}
	}
	issue := func(body string) (string, *httptest.ResponseRecorder) {
		r := do("admintoken", "POST", ns+"/serviceaccounts/bot/token", body)
		var tr struct {
			Status struct{ Token, ExpirationTimestamp string }
		}
		_ = json.Unmarshal(r.Body.Bytes(), &tr)
		return tr.Status.Token, r
	}
	tok, r := issue(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`)
	if r.Code != http.StatusCreated || tok == "" || !strings.Contains(r.Body.String(), `"expirationSeconds":3600`) {
		t.Fatalf("token request: %d %s", r.Code, r.Body)
	}
	who := do(tok, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if who.Code != http.StatusCreated || !strings.Contains(who.Body.String(), `"username":"system:serviceaccount:default:bot"`) {
		t.Fatalf("whoami with the token: %d %s", who.Code, who.Body)
	}
	review := do("admintoken", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":"`+tok+`"}}`)
	if !strings.Contains(review.Body.String(), `"authenticated":true`) || !strings.Contains(review.Body.String(), "system:serviceaccount:default:bot") {
		t.Fatalf("token review: %d %s", review.Code, review.Body)
	}

	if _, r := issue(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"expirationSeconds":60}}`); r.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body.String(), "may not specify a duration less than 10 minutes") {
		t.Errorf("a one-minute token: %d %s; want 422", r.Code, r.Body)
	}
	if r := do("admintoken", "POST", ns+"/serviceaccounts/nobody/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{}}`); r.Code != http.StatusNotFound {
		t.Errorf("token for a missing account: %d %s; want 404", r.Code, r.Body)
	}

	bound, r := issue(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}}}`)
	if r.Code != http.StatusCreated {
		t.Fatalf("bound token: %d %s", r.Code, r.Body)
	}
	// The answer echoes the reference as sent: kube's token storage
	// keeps the uid it read to itself.
	if !strings.Contains(r.Body.String(), `"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}`) {
		t.Errorf("bound token answer %s; want the reference as sent", r.Body)
	}
	if r := do(bound, "GET", ns+"/configmaps", ""); r.Code != http.StatusOK {
		t.Fatalf("bound token while the pod lives: %d %s", r.Code, r.Body)
	}
	if r := do("admintoken", "DELETE", ns+"/pods/p", ""); r.Code != http.StatusOK {
		t.Fatalf("delete pod: %d %s", r.Code, r.Body)
	}
	if r := do(bound, "GET", ns+"/configmaps", ""); r.Code != http.StatusUnauthorized {
		t.Errorf("bound token after its pod went: %d; want 401", r.Code)
	}
	if r := do("admintoken", "DELETE", ns+"/serviceaccounts/bot", ""); r.Code != http.StatusOK {
		t.Fatalf("delete sa: %d %s", r.Code, r.Body)
	}
	if r := do(tok, "GET", ns+"/configmaps", ""); r.Code != http.StatusUnauthorized {
		t.Errorf("token after its account went: %d; want 401", r.Code)
	}
}

// TestServiceAccountIssuer: the issuer's discovery documents as
// kube-apiserver serves them (to service accounts, through RBAC), tokens
// of an earlier issuer still accepted, and a requested lifetime beyond
// the maximum shortened with kube's warning.
func TestServiceAccountIssuer(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old := newSATokens(t, key)
	old.Issuer = "https://old.example.com"
	tokens := newSATokens(t, key)
	tokens.Issuer, tokens.OtherIssuers, tokens.MaxExpiration = "https://issuer.example.com", []string{old.Issuer}, 2*time.Hour
	srv, do := issuerServer(t, tokens)
	if rec := do("admintoken", "POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"bot"}}`); rec.Code != http.StatusCreated {
		t.Fatalf("create account: %d %s", rec.Code, rec.Body)
	}
	rec := do("admintoken", "POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", `{"spec":{"expirationSeconds":86400}}`)
	var tr struct {
		Spec   struct{ ExpirationSeconds int64 }
		Status struct{ Token string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil || rec.Code != http.StatusCreated || tr.Spec.ExpirationSeconds != 7200 ||
		rec.Header().Get("Warning") != `299 - "requested expiration of 86400 seconds shortened to 7200 seconds"` {
		t.Fatalf("a day's token with a 2h maximum: %d %q %s", rec.Code, rec.Header().Get("Warning"), rec.Body)
	}

	// The account reads the discovery documents; anonymous may not.
	rec = do(tr.Status.Token, "GET", "/.well-known/openid-configuration", "")
	var cfg struct {
		Issuer  string   `json:"issuer"`
		JWKSURI string   `json:"jwks_uri"`
		Algs    []string `json:"id_token_signing_alg_values_supported"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &cfg); err != nil || rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/json" ||
		cfg.Issuer != "https://issuer.example.com" || cfg.JWKSURI != "https://192.0.2.10:6443/openid/v1/jwks" || strings.Join(cfg.Algs, ",") != "ES256" ||
		!strings.HasPrefix(rec.Header().Get("Cache-Control"), "public, max-age=") {
		t.Errorf("openid-configuration: %d %v %s", rec.Code, rec.Header(), rec.Body)
	}
	rec = do(tr.Status.Token, "GET", "/openid/v1/jwks", "")
	var jwks struct {
		Keys []struct{ Kid, Alg, Kty, Crv string } `json:"keys"`
	}
	header, _ := base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[0])
	var h struct{ Kid string }
	_ = json.Unmarshal(header, &h)
	if err := json.Unmarshal(rec.Body.Bytes(), &jwks); err != nil || rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != "application/jwk-set+json" ||
		len(jwks.Keys) != 1 || jwks.Keys[0].Kid != h.Kid || jwks.Keys[0].Alg != "ES256" || jwks.Keys[0].Crv != "P-256" {
		t.Errorf("jwks: %d %v %s (token kid %q)", rec.Code, rec.Header(), rec.Body, h.Kid)
	}
	if rec := do("", "GET", "/openid/v1/jwks", ""); rec.Code != http.StatusForbidden {
		t.Errorf("anonymous jwks: %d %s", rec.Code, rec.Body)
	}
	// As on kube's router: the slash form (which kube's discovery role
	// grants) is the same document, another method is 405.
	for _, path := range []string{"/openid/v1/jwks/", "/.well-known/openid-configuration/"} {
		if rec := do(tr.Status.Token, "GET", path, ""); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"ES256"`) {
			t.Errorf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
	if rec := do("admintoken", "POST", "/openid/v1/jwks", "{}"); rec.Code != http.StatusMethodNotAllowed || !strings.Contains(rec.Body.String(), `"reason":"MethodNotAllowed"`) {
		t.Errorf("POST jwks: %d %s; want 405", rec.Code, rec.Body)
	}
	// Each document is of one media type, which an Accept must name (or
	// */*), else kube's router answers 406.
	for _, c := range []struct {
		path, accept string
		code         int
	}{
		{"/openid/v1/jwks", "application/json", http.StatusNotAcceptable},
		{"/openid/v1/jwks", "text/html, application/jwk-set+json;q=0.5", http.StatusOK},
		{"/.well-known/openid-configuration", "application/jwk-set+json", http.StatusNotAcceptable},
		{"/.well-known/openid-configuration", "text/html, */*;q=0.1", http.StatusOK},
	} {
		req := httptest.NewRequest("GET", c.path, nil)
		req.Header.Set("Authorization", "Bearer "+tr.Status.Token)
		req.Header.Set("Accept", c.accept)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != c.code {
			t.Errorf("GET %s, Accept %s: %d %s; want %d", c.path, c.accept, rec.Code, rec.Body, c.code)
		}
		if c.code == http.StatusNotAcceptable && !strings.Contains(rec.Body.String(), `"NotAcceptable"`) {
			t.Errorf("GET %s, Accept %s: %s; want kube's NotAcceptable Status", c.path, c.accept, rec.Body)
		}
	}

	// A token of the earlier issuer still authenticates.
	var bot struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(do("admintoken", "GET", "/api/v1/namespaces/default/serviceaccounts/bot", "").Body.Bytes(), &bot)
	oldToken, err := old.Issue(auth.TokenSubject{Namespace: "default", Name: "bot", UID: bot.Metadata.UID, Audiences: tokens.Audiences, Expiry: time.Hour}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rec := do(oldToken, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`); rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), "system:serviceaccount:default:bot") {
		t.Errorf("a token of the earlier issuer: %d %s", rec.Code, rec.Body)
	}
}

// TestTokenRequestChecksAsKube: a TokenRequest's body must agree with the
// account it is posted to (name, namespace, uid), a Pod it binds must run
// as that account, and is named by its kind and group; the answer names
// the account; a Pod's token names its node and, asked for the kubelet's
// 3607 s, lives a year with a warnafter; and a Pod in its grace period
// keeps its token working, as on kube-apiserver.
func TestTokenRequestChecksAsKube(t *testing.T) {
	do := tokenServer(t)
	const ns = "/api/v1/namespaces/default"
	var node struct{ Metadata struct{ UID string } }
	for _, c := range []struct{ path, body string }{
		{"/api/v1/nodes", `{"metadata":{"name":"n1"}}`},
		{ns + "/serviceaccounts", `{"metadata":{"name":"bot"}}`},
		{ns + "/serviceaccounts", `{"metadata":{"name":"other"}}`},
		{ns + "/pods", `{"metadata":{"name":"p"},"spec":{"serviceAccountName":"bot","nodeName":"n1","terminationGracePeriodSeconds":300,"containers":[{"name":"c","image":"busybox"}]}}`},
	} {
		r := do("admintoken", "POST", c.path, c.body)
		if r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.path, r.Code, r.Body)
		}
		if c.path == "/api/v1/nodes" {
			_ = json.Unmarshal(r.Body.Bytes(), &node)
		}
	}
	var sa struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(do("admintoken", "GET", ns+"/serviceaccounts/bot", "").Body.Bytes(), &sa)
	request := func(meta, spec string) *httptest.ResponseRecorder {
		return do("admintoken", "POST", ns+"/serviceaccounts/bot/token", `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","metadata":{`+meta+`},"spec":{`+spec+`}}`)
	}
	for _, c := range []struct {
		what, meta, spec string
		code             int
		text             string
	}{
		{"another name", `"name":"other"`, ``, http.StatusUnprocessableEntity, `metadata.name: Invalid value: \"other\": must match the service account name if specified`},
		{"another namespace", `"namespace":"kube-system"`, ``, http.StatusBadRequest, `the namespace of the provided object does not match the namespace sent on the request`},
		{"another uid", `"uid":"bogus"`, ``, http.StatusConflict, `the UID in the token request (bogus) does not match the UID of the service account (` + sa.Metadata.UID + `)`},
		{"its own Pod", ``, `"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}`, http.StatusCreated, ``},
		{"a Pod of another group", ``, `"boundObjectRef":{"kind":"Pod","apiVersion":"apps/v1","name":"p"}`, http.StatusBadRequest, `cannot bind token to object of type apps/v1, Kind=Pod`},
		{"a ConfigMap", ``, `"boundObjectRef":{"kind":"ConfigMap","apiVersion":"v1","name":"p"}`, http.StatusBadRequest, `cannot bind token to object of type /v1, Kind=ConfigMap`},
		{"a Secret without a name", ``, `"boundObjectRef":{"kind":"Secret","apiVersion":"v1"}`, http.StatusBadRequest, `"message":"Name parameter required."`},
		{"a Node without a name", ``, `"boundObjectRef":{"kind":"Node","apiVersion":"v1"}`, http.StatusBadRequest, `"message":"Name parameter required."`},
		{"a Pod named ..", ``, `"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":".."}`, http.StatusBadRequest, `Name parameter invalid: \"..\"`},
	} {
		r := request(c.meta, c.spec)
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s: %d %s; want %d with %q", c.what, r.Code, r.Body, c.code, c.text)
		}
	}
	if r := do("admintoken", "POST", ns+"/serviceaccounts/other/token", `{"spec":{"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}}}`); r.Code != http.StatusBadRequest ||
		!strings.Contains(r.Body.String(), `cannot bind token for serviceaccount \"other\" to pod running with different serviceaccount name.`) {
		t.Errorf("binding other's token to bot's pod: %d %s", r.Code, r.Body)
	}

	r := request(``, `"expirationSeconds":3607,"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"p"}`)
	var tr struct {
		Metadata struct{ Name, Namespace, UID string }
		Status   struct {
			Token               string
			ExpirationTimestamp time.Time
		}
	}
	if err := json.Unmarshal(r.Body.Bytes(), &tr); err != nil || r.Code != http.StatusCreated {
		t.Fatalf("kubelet's token: %d %s", r.Code, r.Body)
	}
	if tr.Metadata.Name != "bot" || tr.Metadata.Namespace != "default" || tr.Metadata.UID != sa.Metadata.UID {
		t.Errorf("answer's metadata %+v; want the account's name, namespace and uid", tr.Metadata)
	}
	if left := time.Until(tr.Status.ExpirationTimestamp); left < time.Hour || left > time.Hour+10*time.Second {
		t.Errorf("status expiration in %v; want the 3607 s asked", left)
	}
	parts := strings.Split(tr.Status.Token, ".")
	payload, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var claims struct {
		Exp, Iat int64
		Kube     struct {
			Node      struct{ Name, UID string }
			WarnAfter int64 `json:"warnafter"`
		} `json:"kubernetes.io"`
	}
	if err := json.Unmarshal(payload, &claims); err != nil {
		t.Fatal(err)
	}
	if claims.Exp-claims.Iat != 365*24*3600 || claims.Kube.WarnAfter-claims.Iat != 3607 || claims.Kube.Node.Name != "n1" || claims.Kube.Node.UID != node.Metadata.UID {
		t.Errorf("kubelet's token claims %s; want a year's exp, warnafter at 3607 s and node n1 (%s)", payload, node.Metadata.UID)
	}

	// The Pod is deleted with its grace period: its token still works.
	if r := do("admintoken", "DELETE", ns+"/pods/p", ""); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"deletionTimestamp"`) {
		t.Fatalf("graceful delete: %d %s", r.Code, r.Body)
	}
	if r := do(tr.Status.Token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`); r.Code != http.StatusCreated ||
		!strings.Contains(r.Body.String(), `"authentication.kubernetes.io/pod-name":["p"]`) || !strings.Contains(r.Body.String(), `"authentication.kubernetes.io/node-name":["n1"]`) {
		t.Errorf("token of a Pod in its grace period: %d %s; want it authenticated", r.Code, r.Body)
	}

	// A Pod on a Node that does not exist: its token names the Node
	// without a uid, and its user has no node-uid extra (kube's claims
	// and user info leave an empty uid out).
	if r := do("admintoken", "POST", ns+"/pods", `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"ghostly"},"spec":{"serviceAccountName":"bot","nodeName":"ghost","containers":[{"name":"c","image":"busybox"}]}}`); r.Code != http.StatusCreated {
		t.Fatalf("pod on a missing node: %d %s", r.Code, r.Body)
	}
	r = request(``, `"boundObjectRef":{"kind":"Pod","apiVersion":"v1","name":"ghostly"}`)
	if err := json.Unmarshal(r.Body.Bytes(), &tr); err != nil || r.Code != http.StatusCreated {
		t.Fatalf("token of a pod on a missing node: %d %s", r.Code, r.Body)
	}
	payload, _ = base64.RawURLEncoding.DecodeString(strings.Split(tr.Status.Token, ".")[1])
	if !strings.Contains(string(payload), `"node":{"name":"ghost"}`) {
		t.Errorf("claims %s; want the node named without a uid", payload)
	}
	if r := do(tr.Status.Token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`); r.Code != http.StatusCreated ||
		!strings.Contains(r.Body.String(), `"authentication.kubernetes.io/node-name":["ghost"]`) || strings.Contains(r.Body.String(), "node-uid") {
		t.Errorf("user of a pod on a missing node: %d %s; want node-name and no node-uid", r.Code, r.Body)
	}
}

// tokenServer is a server issuing and accepting service account tokens,
// with the static token admintoken for system:masters; do sends a request
// with a bearer token.
func tokenServer(t *testing.T) (do func(token, method, path, body string) *httptest.ResponseRecorder) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tokens := newSATokens(t, key)
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("admintoken,admin,1,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Options{TokenFile: file, ServiceAccountTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Authenticator: authn, ServiceAccountTokens: tokens})
	return func(token, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+token)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
}

// TestTokenRequestAdmissionSeesDefaults: validating admission of a
// TokenRequest sees it as the token storage filled it in (the account's
// name, the API audiences), as kube's token storage calls it; a policy
// on those fields holds for a request that sent none.
func TestTokenRequestAdmissionSeesDefaults(t *testing.T) {
	h := refNewHarness(t)
	const js = "application/json"
	h.mustDo("POST", "/api/v1/namespaces/default/serviceaccounts", js, `{"metadata":{"name":"bot"}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", js,
		`{"metadata":{"name":"tokens"},"spec":{"failurePolicy":"Fail","matchConstraints":{"resourceRules":[{"apiGroups":[""],
		"apiVersions":["v1"],"operations":["CREATE"],"resources":["serviceaccounts/token"]}]},
		"validations":[{"expression":"object.metadata.name == 'bot' && size(object.spec.audiences) > 0","message":"named, with audiences"},
		{"expression":"object.spec.expirationSeconds <= 3600","message":"an hour at most"}]}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", js,
		`{"metadata":{"name":"tokens"},"spec":{"policyName":"tokens","validationActions":["Deny"]}}`, http.StatusCreated)
	const token = "/api/v1/namespaces/default/serviceaccounts/bot/token"
	h.waitFor("the policy to refuse a long token", func() bool {
		return h.do("POST", token, map[string]string{"Content-Type": js}, []byte(`{"spec":{"expirationSeconds":7200}}`)).Code == http.StatusUnprocessableEntity
	})
	if r := h.do("POST", token, map[string]string{"Content-Type": js}, []byte(`{}`)); r.Code != http.StatusCreated {
		t.Errorf("a request naming nothing: %d %s; want the policy to see the defaults and pass it", r.Code, r.Body)
	}
}

// TestTokenReviewErrorsAsKube: a TokenReview of a token that no longer
// authenticates says why in kube's words (serviceaccount/claims.go): its
// bound Secret gone, its account gone or made again; a static token
// asked for another audience is an invalid bearer token, as kube's
// audience-agnostic authenticators pass it on.
func TestTokenReviewErrorsAsKube(t *testing.T) {
	do := tokenServer(t)
	const ns = "/api/v1/namespaces/default"
	for _, c := range []struct{ path, body string }{
		{ns + "/serviceaccounts", `{"metadata":{"name":"bot"}}`},
		{ns + "/secrets", `{"metadata":{"name":"s"}}`},
	} {
		if r := do("admintoken", "POST", c.path, c.body); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.path, r.Code, r.Body)
		}
	}
	token := func(spec string) string {
		t.Helper()
		r := do("admintoken", "POST", ns+"/serviceaccounts/bot/token", `{"spec":{`+spec+`}}`)
		var tr struct{ Status struct{ Token string } }
		if err := json.Unmarshal(r.Body.Bytes(), &tr); err != nil || r.Code != http.StatusCreated {
			t.Fatalf("token: %d %s", r.Code, r.Body)
		}
		return tr.Status.Token
	}
	review := func(what, tok, audiences, want string) {
		t.Helper()
		r := do("admintoken", "POST", "/apis/authentication.k8s.io/v1/tokenreviews", `{"spec":{"token":"`+tok+`"`+audiences+`}}`)
		var tr struct {
			Status struct {
				Authenticated bool
				Error         string
			}
		}
		if err := json.Unmarshal(r.Body.Bytes(), &tr); err != nil || r.Code != http.StatusCreated || tr.Status.Authenticated || tr.Status.Error != want {
			t.Errorf("%s: %d %s; want unauthenticated with %q", what, r.Code, r.Body, want)
		}
	}
	bound := token(`"boundObjectRef":{"kind":"Secret","apiVersion":"v1","name":"s"}`)
	plain := token(``)
	if r := do("admintoken", "DELETE", ns+"/secrets/s", ""); r.Code != http.StatusOK {
		t.Fatalf("delete secret: %d %s", r.Code, r.Body)
	}
	review("bound to a deleted Secret", bound, "", "service account token has been invalidated")
	var sa struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(do("admintoken", "GET", ns+"/serviceaccounts/bot", "").Body.Bytes(), &sa)
	if r := do("admintoken", "DELETE", ns+"/serviceaccounts/bot", ""); r.Code != http.StatusOK {
		t.Fatalf("delete account: %d %s", r.Code, r.Body)
	}
	review("its account deleted", plain, "", `serviceaccounts "bot" not found`)
	r := do("admintoken", "POST", ns+"/serviceaccounts", `{"metadata":{"name":"bot"}}`)
	var again struct{ Metadata struct{ UID string } }
	if err := json.Unmarshal(r.Body.Bytes(), &again); err != nil || r.Code != http.StatusCreated {
		t.Fatalf("create account again: %d %s", r.Code, r.Body)
	}
	review("its account made again", plain, "", "service account UID ("+again.Metadata.UID+") does not match claim ("+sa.Metadata.UID+")")
	review("a static token for another audience", "admintoken", `,"audiences":["vault"]`, "invalid bearer token")
}

// newSATokens signs service account tokens with key and verifies them
// with it and verifyWith.
func newSATokens(t *testing.T, key crypto.Signer, verifyWith ...any) *auth.ServiceAccountTokens {
	t.Helper()
	tokens, err := auth.NewServiceAccountTokens(key, verifyWith...)
	if err != nil {
		t.Fatal(err)
	}
	return tokens
}

// TestServiceAccountKeyRotation: keys as kube-apiserver takes them. A
// server signing with an RSA key (kubeadm's sa.key) issues RS256 tokens;
// one signing with a new ECDSA key and verifying with the old RSA key too
// (a rotation: --service-account-key-file naming both) issues ES256
// tokens, still accepts the old key's, and publishes both keys; a token
// signed by a key it does not know is refused.
func TestServiceAccountKeyRotation(t *testing.T) {
	oldKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	newKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	strangerKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	old, stranger := newSATokens(t, oldKey), newSATokens(t, strangerKey)
	tokens := newSATokens(t, newKey, &oldKey.PublicKey)
	_, do := issuerServer(t, tokens)
	header := func(token string) (h struct{ Alg, Kid string }) {
		b, _ := base64.RawURLEncoding.DecodeString(strings.Split(token, ".")[0])
		_ = json.Unmarshal(b, &h)
		return h
	}
	rec := do("admintoken", "POST", "/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"bot"}}`)
	var bot struct{ Metadata struct{ UID string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &bot); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("create account: %d %s", rec.Code, rec.Body)
	}
	subject := auth.TokenSubject{Namespace: "default", Name: "bot", UID: bot.Metadata.UID, Expiry: time.Hour}
	oldToken, err := old.Issue(subject, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if h := header(oldToken); h.Alg != "RS256" || h.Kid == "" {
		t.Errorf("the RSA key's token header %+v; want RS256 with a key id", h)
	}
	whoami := func(token string) *httptest.ResponseRecorder {
		return do(token, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", `{}`)
	}
	if rec := whoami(oldToken); rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), "system:serviceaccount:default:bot") {
		t.Errorf("the old key's token: %d %s; want it still accepted", rec.Code, rec.Body)
	}

	rec = do("admintoken", "POST", "/api/v1/namespaces/default/serviceaccounts/bot/token", `{}`)
	var tr struct{ Status struct{ Token string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &tr); err != nil || rec.Code != http.StatusCreated {
		t.Fatalf("TokenRequest: %d %s", rec.Code, rec.Body)
	}
	newHeader := header(tr.Status.Token)
	if newHeader.Alg != "ES256" || newHeader.Kid == "" || newHeader.Kid == header(oldToken).Kid {
		t.Errorf("a new token's header %+v; want ES256 with the new key's id", newHeader)
	}
	if rec := whoami(tr.Status.Token); rec.Code != http.StatusCreated {
		t.Errorf("a new token: %d %s", rec.Code, rec.Body)
	}

	rec = do(tr.Status.Token, "GET", "/openid/v1/jwks", "")
	var jwks struct {
		Keys []struct{ Kid, Alg, Kty string } `json:"keys"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &jwks); err != nil || rec.Code != http.StatusOK {
		t.Fatalf("jwks: %d %s", rec.Code, rec.Body)
	}
	var published []string
	for _, k := range jwks.Keys {
		published = append(published, k.Kty+" "+k.Alg+" "+k.Kid)
	}
	slices.Sort(published)
	want := []string{"EC ES256 " + newHeader.Kid, "RSA RS256 " + header(oldToken).Kid}
	if !slices.Equal(published, want) {
		t.Errorf("jwks keys %q; want %q", published, want)
	}

	strangerToken, err := stranger.Issue(subject, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if rec := whoami(strangerToken); rec.Code != http.StatusUnauthorized {
		t.Errorf("a token of an unknown key: %d %s; want 401", rec.Code, rec.Body)
	}
}

// issuerServer serves with tokens, RBAC, anonymous requests, the static
// token admintoken for system:masters and an advertised address (which
// the issuer's key set URL is built from); do sends a request with a
// bearer token, or none.
func issuerServer(t *testing.T, tokens *auth.ServiceAccountTokens) (*server.Server, func(token, method, path, body string) *httptest.ResponseRecorder) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(file, []byte("admintoken,admin,1,system:masters\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authn, err := auth.NewAuthenticator(auth.Options{TokenFile: file, ServiceAccountTokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Authenticator: authn, ServiceAccountTokens: tokens,
		AuthorizationModes: authz.DefaultModes, AnonymousAuth: true, Advertise: netip.MustParseAddrPort("192.0.2.10:6443")})
	return srv, func(token, method, path, body string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		return rec
	}
}
