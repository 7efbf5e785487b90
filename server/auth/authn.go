package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/authentication/request/websocket"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Well-known identities, as kube-apiserver names them.
const (
	// GroupAuthenticated is added to every authenticated user.
	GroupAuthenticated = "system:authenticated"
	// AnonymousUser and GroupUnauthenticated are the identity of a request
	// without credentials, when anonymous requests are enabled.
	AnonymousUser        = "system:anonymous"
	GroupUnauthenticated = "system:unauthenticated"
)

// User is the identity of an authenticated request.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
	// audiences are what a token was found valid for (TokenReview).
	audiences []string
}

// Info is u as k8s.io/apiserver's authorizers and admission read it.
func (u *User) Info() user.Info {
	return &user.DefaultInfo{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra}
}

// anonymous is the user of a request without credentials.
func anonymous() *User {
	return &User{Name: AnonymousUser, Groups: []string{GroupUnauthenticated}}
}

// Options configures NewAuthenticator. Each zero field disables its method.
type Options struct {
	// ClientCA verifies client certificates (kube-apiserver's
	// --client-ca-file). Nil disables certificate authentication.
	ClientCA *x509.CertPool
	// TokenFile is a static bearer token CSV (kube-apiserver's
	// --token-auth-file). Empty disables token authentication.
	TokenFile string
	// ServiceAccountTokens verifies service account tokens; nil disables
	// them.
	ServiceAccountTokens *ServiceAccountTokens
	// RequestHeader is front-proxy authentication; nil disables it.
	RequestHeader *RequestHeader
	// JWT verifies tokens of external issuers (--authentication-config,
	// package authnconfig), after the service account tokens; nil
	// disables it.
	JWT authenticator.Token
	// BootstrapTokens accepts bootstrap tokens (kube-apiserver's
	// --enable-bootstrap-token-auth), after the service account tokens.
	// Their Secrets are read through SetBootstrapTokenSecrets.
	BootstrapTokens bool
}

// Authenticator identifies the user behind a request. It is immutable after
// construction and safe for concurrent use.
type Authenticator struct {
	clientCA *x509.CertPool
	// tokenAuth is set when a token file was configured, even an empty one;
	// without it a bearer token is ignored rather than rejected, as in
	// kube-apiserver without --token-auth-file.
	tokenAuth bool
	tokens    []tokenEntry
	// verified remembers client certificate chains already checked, so
	// each request costs a hash instead of an ECDSA verification.
	verified certCache
	// saTokens verifies service account tokens; saLookup checks that what
	// they name still exists (set once the server exists, before serving).
	saTokens *ServiceAccountTokens
	saLookup ServiceAccountLookup
	// legacy reads the Secrets of legacy tokens (nil: refused).
	legacy LegacyTokenObjects
	// requestHeader is kube's front-proxy authenticator (nil: off).
	requestHeader     authenticator.Request
	requestHeaderOpts *RequestHeader
	// requestHeaderLists are its header names (see headerLists).
	requestHeaderLists [4]headerrequest.StringSliceProvider
	// jwt is the external issuers' authenticator (nil: none).
	jwt authenticator.Token
	// bootstrapTokens: bootstrap tokens are accepted, their Secrets read
	// through bootstrapSecrets (see bootstraptoken.go).
	bootstrapTokens  bool
	bootstrapSecrets BootstrapTokenSecret
	// wsProtocol is kube's WebSocket subprotocol authenticator: a browser
	// cannot set Authorization, so it sends the token as the protocol
	// base64url.bearer.authorization.k8s.io.<token>.
	wsProtocol *websocket.ProtocolAuthenticator
}

// Errors returned by Authenticate when a request carries credentials that do
// not identify anyone. They are distinct from anonymous (ok=false, nil error)
// so callers can log them; both must be answered with 401.
var (
	ErrInvalidBearerToken = errors.New("invalid bearer token")
	ErrInvalidClientCert  = errors.New("invalid client certificate")
)

// NewAuthenticator builds an Authenticator, loading the token file if set.
func NewAuthenticator(opts Options) (*Authenticator, error) {
	a := &Authenticator{clientCA: opts.ClientCA, saTokens: opts.ServiceAccountTokens, jwt: opts.JWT, bootstrapTokens: opts.BootstrapTokens}
	a.wsProtocol = websocket.NewProtocolAuthenticator(tokenChecks{a})
	if rh := opts.RequestHeader; rh != nil && rh.ClientCA != nil {
		a.requestHeader, a.requestHeaderOpts, a.requestHeaderLists = newRequestHeader(rh), rh, headerLists(rh)
	}
	if opts.TokenFile != "" {
		tokens, err := loadTokenFile(opts.TokenFile)
		if err != nil {
			return nil, err
		}
		a.tokens, a.tokenAuth = tokens, true
	}
	return a, nil
}

// Authenticate returns the user of r. Methods are tried in kube-apiserver's
// order: a front proxy's request headers, a client certificate verified
// against the client CA, then an "Authorization: Bearer" token. A request
// with none is anonymous (ok=false, err=nil); one whose credentials all
// fail returns an error.
func (a *Authenticator) Authenticate(r *http.Request) (*User, bool, error) {
	// Like kube-apiserver's union authenticator, a failing method does not
	// stop the next one: the first success wins, otherwise the errors are
	// reported together.
	var errs []error
	for _, method := range []func(*http.Request) (*User, bool, error){a.authenticateRequestHeader, a.authenticateCert, a.authenticateToken, a.authenticateWebSocketProtocol} {
		u, ok, err := method(r)
		if ok {
			return withAuthenticated(u), true, nil
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return nil, false, errors.Join(errs...)
}

func (a *Authenticator) authenticateCert(r *http.Request) (*User, bool, error) {
	// The TLS stack only requests a client certificate (RequestClientCert);
	// it is verified here, as kube-apiserver does, so that a certificate
	// from another CA, expired or without client-auth usage gets a 401
	// Status instead of a failed handshake.
	if a.clientCA == nil || r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	key := chainKey(r.TLS.PeerCertificates)
	now := time.Now()
	if u, ok := a.verified.get(key, now); ok {
		return u, true, nil
	}
	intermediates := x509.NewCertPool()
	for i, c := range r.TLS.PeerCertificates {
		if i > 0 {
			intermediates.AddCert(c)
		}
	}
	chains, err := leaf.Verify(x509.VerifyOptions{
		Roots:         a.clientCA,
		Intermediates: intermediates,
		CurrentTime:   now,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return nil, false, errors.Join(ErrInvalidClientCert, err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, errors.Join(ErrInvalidClientCert, errors.New("empty common name"))
	}
	u := &User{
		Name:   leaf.Subject.CommonName,
		Groups: slices.Clone(leaf.Subject.Organization),
	}
	a.verified.put(key, u, chainExpiry(chains))
	return u, true, nil
}

func (a *Authenticator) authenticateToken(r *http.Request) (*User, bool, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	return a.token(r.Context(), token)
}

// authenticateWebSocketProtocol reads a token sent as a WebSocket
// subprotocol, after the Authorization header, as kube-apiserver does; on
// success the token's protocol is taken out of the request.
func (a *Authenticator) authenticateWebSocketProtocol(r *http.Request) (*User, bool, error) {
	resp, ok, err := a.wsProtocol.AuthenticateRequest(r)
	if !ok {
		return nil, false, err
	}
	return userOf(resp.User), true, nil
}

// tokenChecks is the bearer token checks as kube's authenticator.Token.
type tokenChecks struct{ a *Authenticator }

func (t tokenChecks) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	u, ok, err := t.a.token(ctx, token)
	if !ok {
		return nil, false, err
	}
	return &authenticator.Response{User: u.Info()}, true, nil
}

// token checks a bearer token in kube-apiserver's order: the static
// tokens, service account tokens, bootstrap tokens, then the external
// issuers' JWTs.
// Without any method a token is ignored (anonymous).
func (a *Authenticator) token(ctx context.Context, token string) (*User, bool, error) {
	if a.tokenAuth {
		if u, found := lookupToken(a.tokens, token); found {
			u.Groups = slices.Clone(u.Groups) // callers must not alias the table
			return &u, true, nil
		}
	}
	u, ok, err := a.authenticateServiceAccount(ctx, token)
	if ok {
		return u, true, nil
	}
	// As kube's token union, a failing method does not stop the next.
	errs := []error{err}
	if a.bootstrapTokens && a.bootstrapSecrets != nil {
		u, ok, err := a.bootstrapToken(ctx, token)
		if ok {
			return u, true, nil
		}
		errs = append(errs, err)
	}
	if a.jwt != nil {
		resp, ok, err := a.jwt.AuthenticateToken(ctx, token)
		if ok {
			info := resp.User
			return &User{Name: info.GetName(), UID: info.GetUID(), Groups: slices.Clone(info.GetGroups()), Extra: info.GetExtra()}, true, nil
		}
		errs = append(errs, err)
	}
	if err := errors.Join(errs...); err != nil {
		return nil, false, err
	}
	if a.tokenAuth || a.saTokens != nil || a.jwt != nil || a.bootstrapTokens {
		return nil, false, ErrInvalidBearerToken
	}
	return nil, false, nil
}

// AuthenticateToken checks a bearer token as a TokenReview does: for the
// audiences asked (none: the API server's), returning those the token is
// valid for. Tokens that name no audience (the static ones) are valid
// for the API server's audiences only, as kube's audience-agnostic
// authenticators are.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string, audiences []string) (*User, []string, bool, error) {
	if a == nil || token == "" {
		return nil, nil, false, nil
	}
	if len(audiences) > 0 {
		ctx = authenticator.WithAudiences(ctx, audiences)
	}
	u, ok, err := a.token(ctx, token)
	if !ok {
		return nil, nil, false, err
	}
	auds := u.audiences
	if auds == nil { // not audience-aware
		api := a.apiAudiences()
		if len(audiences) == 0 {
			auds = api
		} else if auds = intersect(audiences, api); len(auds) == 0 {
			// kube's audience-agnostic wrapper passes such a token on,
			// and no method takes it.
			return nil, nil, false, ErrInvalidBearerToken
		}
	}
	return withAuthenticated(u), auds, true, nil
}

// apiAudiences are the audiences the API server accepts.
func (a *Authenticator) apiAudiences() []string {
	if a.saTokens != nil {
		return a.saTokens.Audiences
	}
	return nil
}

// SetServiceAccountLookup tells the authenticator how to check that a
// token's service account still exists; call it before serving.
func (a *Authenticator) SetServiceAccountLookup(f ServiceAccountLookup) {
	if a != nil {
		a.saLookup = f
	}
}

// bearerToken extracts the token from "Authorization: Bearer <token>" as
// kube's bearertoken authenticator reads it: the scheme in any case, the
// token the word after it (what follows another space is ignored, and
// two spaces mean no token). Other schemes count as no token.
func bearerToken(r *http.Request) (string, bool) {
	token, _ := splitBearer(r.Header.Get("Authorization"))
	return token, token != ""
}

// splitBearer reads an Authorization header as kube's SplitN(h, " ", 3)
// does, without allocating: the token, and whether an empty one was
// followed by more (two spaces after the scheme).
func splitBearer(h string) (token string, spaceBefore bool) {
	scheme, rest, found := strings.Cut(strings.TrimSpace(h), " ")
	if !found || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token, _, more := strings.Cut(rest, " ")
	return token, token == "" && more
}

// spaceBeforeToken: "Bearer  <token>", which kube reads as no token,
// with a warning.
func spaceBeforeToken(r *http.Request) bool {
	_, space := splitBearer(r.Header.Get("Authorization"))
	return space
}

// withAuthenticated adds system:authenticated, as kube-apiserver does for
// every authenticated user, so RBAC bindings to that group apply.
func withAuthenticated(u *User) *User {
	if u != nil && !slices.Contains(u.Groups, GroupAuthenticated) {
		u.Groups = append(u.Groups, GroupAuthenticated)
	}
	return u
}

// WithUser returns ctx carrying u where k8s.io/apiserver's packages look
// for the user (genericapirequest.UserFrom): its authorizers, its
// impersonation filter and RBAC's escalation check read it there.
func WithUser(ctx context.Context, u *User) context.Context {
	if u == nil {
		return ctx
	}
	return genericapirequest.WithUser(ctx, u.Info())
}

// UserFrom returns the request's user (after impersonation, the
// impersonated one).
func UserFrom(ctx context.Context) (*User, bool) {
	info, ok := genericapirequest.UserFrom(ctx)
	if !ok || info == nil {
		return nil, false
	}
	return userOf(info), true
}

func userOf(info user.Info) *User {
	return &User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
}

// Middleware authenticates every request, storing the user in the request
// context (see UserFrom). A request without credentials is system:anonymous
// when anonymousAuth says so for its path (nil: never; authorization then
// decides what it may reach: kube's default policy opens the health and
// version endpoints to it), and a 401 otherwise; unauthorized writes the
// 401 (nil: UnauthorizedStatus). Credentials that fail are refused either
// way, as kube-apiserver refuses an invalid token rather than falling
// back to anonymous.
func Middleware(a *Authenticator, unauthorized func(c echo.Context) error, anonymousAuth func(path string) bool) echo.MiddlewareFunc {
	if unauthorized == nil {
		unauthorized = UnauthorizedStatus
	}
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			r := c.Request()
			if spaceBeforeToken(r) {
				c.Response().Header().Add("Warning", `299 - "the provided Authorization header contains extra space before the bearer token, and is ignored"`)
			}
			start := time.Now()
			u, ok, err := a.Authenticate(r)
			// For the audit event's latency annotations (kept only when
			// the request carries latency trackers).
			genericapirequest.TrackAuthenticationLatency(r.Context(), time.Since(start))
			switch {
			case ok:
				// As kube's WithAuthentication: the credentials stay here,
				// so nothing relayed onwards (kubelets, aggregated API
				// servers) sees a user's token.
				r.Header.Del("Authorization")
				c.SetRequest(r.WithContext(WithUser(r.Context(), u)))
				return next(c)
			case err == nil && anonymousAuth != nil && anonymousAuth(r.URL.Path):
				c.SetRequest(r.WithContext(WithUser(r.Context(), anonymous())))
				return next(c)
			default:
				if err != nil {
					c.Logger().Debugf("authentication failed for %s %s: %v", r.Method, r.URL.Path, err)
				}
				return unauthorized(c)
			}
		}
	}
}

// unauthorizedBody is the Status kube-apiserver returns for 401.
const unauthorizedBody = `{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"Unauthorized","reason":"Unauthorized","code":401}`

// UnauthorizedStatus writes kube-apiserver's 401 Status body. It is the
// default for Middleware when no handler is given.
func UnauthorizedStatus(c echo.Context) error {
	return c.Blob(http.StatusUnauthorized, echo.MIMEApplicationJSON, []byte(unauthorizedBody+"\n"))
}
