package auth

import (
	"cmp"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	jose "gopkg.in/go-jose/go-jose.v2"
	"gopkg.in/go-jose/go-jose.v2/jwt"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/util/keyutil"
)

// Service account tokens are JWTs with kube-apiserver's claims: issuer,
// subject system:serviceaccount:<namespace>:<name>, audiences, expiry, and
// the kubernetes.io claim naming the account (and a bound object). They
// are signed and their signatures checked with go-jose as kube-apiserver
// signs and checks them, with its keys: RSA (RS256) or ECDSA on P-256,
// P-384 or P-521 (ES256, ES384, ES512), the key id in the header a hash of
// the public key; the signing key one of them and any number verifying,
// as during a key rotation. Replicas that share the PKI directory share
// the key, so any of them accepts a token another issued.
//
// kube's own generator (k8s.io/kubernetes/pkg/serviceaccount) is not
// linked here: it brings kube's feature gates, which replace client-go's
// in every process that links this package, the test clients too.

// SAKeyFile is the signing key's file in the PKI directory (kubeadm's name).
const SAKeyFile = "sa.key"

// DefaultIssuer is kube-apiserver's usual --service-account-issuer; it is
// also the audience tokens get when a request names none.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// ServiceAccountTokens issues and verifies service account tokens.
type ServiceAccountTokens struct {
	signer jose.Signer
	// byKeyID are the keys tokens are verified with, by key id; keys the
	// same, the signing key's first.
	byKeyID map[string][]any
	keys    []any
	// Issuer signs new tokens; tokens of OtherIssuers are accepted too
	// (kube-apiserver's --service-account-issuer: the first issues, all
	// are accepted, so an issuer can be changed without a cut-over).
	Issuer       string
	OtherIssuers []string
	// Audiences are those this server accepts (kube-apiserver's
	// --api-audiences, default the issuer).
	Audiences []string
	// MaxExpiration caps a TokenRequest's expirationSeconds (kube's
	// --service-account-max-token-expiration; zero: no cap).
	MaxExpiration time.Duration
}

// PublicKeys are the keys tokens are verified with, as published at
// /openid/v1/jwks: the signing key's first.
func (t *ServiceAccountTokens) PublicKeys() []any { return t.keys }

// NewServiceAccountTokens signs with key (an *rsa.PrivateKey or
// *ecdsa.PrivateKey) and verifies with it and the public keys of
// verifyWith (kube-apiserver's --service-account-key-file: the keys of
// earlier signing keys, during a rotation), with the default issuer and
// audience.
func NewServiceAccountTokens(key crypto.Signer, verifyWith ...any) (*ServiceAccountTokens, error) {
	alg, err := signingAlgorithm(key.Public())
	if err != nil {
		return nil, err
	}
	kid, err := keyID(key.Public())
	if err != nil {
		return nil, err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: alg,
		Key: &jose.JSONWebKey{Algorithm: string(alg), Key: key, KeyID: kid, Use: "sig"}}, nil)
	if err != nil {
		return nil, err
	}
	t := &ServiceAccountTokens{signer: signer, byKeyID: map[string][]any{},
		Issuer: DefaultIssuer, Audiences: []string{DefaultIssuer}}
	for _, k := range append([]any{key.Public()}, verifyWith...) {
		if slices.ContainsFunc(t.keys, func(have any) bool { return publicKeysEqual(have, k) }) {
			continue
		}
		if _, err := signingAlgorithm(k); err != nil {
			return nil, err
		}
		id, err := keyID(k)
		if err != nil {
			return nil, err
		}
		t.keys = append(t.keys, k)
		t.byKeyID[id] = append(t.byKeyID[id], k)
	}
	return t, nil
}

// signingAlgorithm is the JWS algorithm kube-apiserver signs with for a
// public key of this kind.
func signingAlgorithm(pub any) (jose.SignatureAlgorithm, error) {
	switch k := pub.(type) {
	case *rsa.PublicKey:
		return jose.RS256, nil
	case *ecdsa.PublicKey:
		switch k.Curve {
		case elliptic.P256():
			return jose.ES256, nil
		case elliptic.P384():
			return jose.ES384, nil
		case elliptic.P521():
			return jose.ES512, nil
		}
	}
	return "", fmt.Errorf("a %T key: service account tokens take RSA keys and ECDSA keys on P-256, P-384 or P-521", pub)
}

// keyID is kube's key id for a public key: the unpadded base64url SHA-256
// of its PKIX encoding.
func keyID(pub any) (string, error) {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return base64.RawURLEncoding.EncodeToString(sum[:]), nil
}

// keysFor are the keys a token with key id kid may be signed with: those
// of that id, or all when it names none, as kube picks them.
func (t *ServiceAccountTokens) keysFor(kid string) []any {
	if kid == "" {
		return t.keys
	}
	return t.byKeyID[kid]
}

// EnsureServiceAccountKey loads the signing key from dir, making one the
// first time.
func EnsureServiceAccountKey(dir string) (crypto.Signer, error) {
	path := filepath.Join(dir, SAKeyFile)
	if b, err := os.ReadFile(path); err == nil {
		return serviceAccountKey(path, b)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(path, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return nil, err
	}
	// Another replica may have written its key first: use whichever won.
	return EnsureServiceAccountKey(dir)
}

// LoadServiceAccountKey reads a signing key given by its file
// (kube-apiserver's --service-account-signing-key-file).
func LoadServiceAccountKey(path string) (crypto.Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return serviceAccountKey(path, b)
}

// serviceAccountKey is an RSA key, or an ECDSA key on a curve kube signs
// tokens with.
func serviceAccountKey(path string, pemBytes []byte) (crypto.Signer, error) {
	signer, err := parseKeyPEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("service account key %s: %w", path, err)
	}
	if _, err := signingAlgorithm(signer.Public()); err != nil {
		return nil, fmt.Errorf("service account key %s: %w", path, err)
	}
	return signer, nil
}

// LoadVerificationKeys reads kube-apiserver's --service-account-key-file:
// public keys, certificates or private keys (whose public parts are
// taken), RSA or ECDSA, as many as it holds.
func LoadVerificationKeys(path string) ([]any, error) {
	// kube-apiserver's own reading of the file.
	return keyutil.PublicKeysFromFile(path)
}

// TokenSubject is who and what a token is for.
type TokenSubject struct {
	Namespace, Name, UID string
	Audiences            []string
	Expiry               time.Duration
	// Bound is the object the token lives only as long as (optional).
	BoundKind, BoundName, BoundUID string
	// NodeName and NodeUID name the node of a Pod the token is bound to:
	// told to authorizers, not checked (kube's ServiceAccountTokenPodNodeInfo).
	NodeName, NodeUID string
	// ID, when set, is the token's jti (its credential id); a new one
	// otherwise.
	ID string
	// WarnAfter, when not 0, is the lifetime asked for, shorter than
	// Expiry: kube's extended tokens for the kubelet's projected volumes
	// carry it, so their use after it can be seen.
	WarnAfter time.Duration
}

type kubeClaims struct {
	Namespace      string          `json:"namespace"`
	ServiceAccount objRef          `json:"serviceaccount"`
	Pod            *objRef         `json:"pod,omitempty"`
	Secret         *objRef         `json:"secret,omitempty"`
	Node           *objRef         `json:"node,omitempty"`
	WarnAfter      jwt.NumericDate `json:"warnafter,omitempty"`
}

type objRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

type claims struct {
	Issuer    string          `json:"iss"`
	Subject   string          `json:"sub"`
	Audience  jwt.Audience    `json:"aud"`
	Expiry    jwt.NumericDate `json:"exp"`
	IssuedAt  jwt.NumericDate `json:"iat"`
	NotBefore jwt.NumericDate `json:"nbf"`
	ID        string          `json:"jti"`
	Kube      kubeClaims      `json:"kubernetes.io"`
	// legacy are the claims of a legacy Secret token.
	legacyClaims
}

// Issue signs a token for s, issued at now.
func (t *ServiceAccountTokens) Issue(s TokenSubject, now time.Time) (string, error) {
	exp := now.Add(s.Expiry)
	aud := s.Audiences
	if len(aud) == 0 {
		aud = t.Audiences
	}
	c := claims{
		Issuer: t.Issuer, Subject: "system:serviceaccount:" + s.Namespace + ":" + s.Name, Audience: aud,
		Expiry: jwt.NumericDate(exp.Unix()), IssuedAt: jwt.NumericDate(now.Unix()), NotBefore: jwt.NumericDate(now.Unix()), ID: cmp.Or(s.ID, uuid.NewString()),
		Kube: kubeClaims{Namespace: s.Namespace, ServiceAccount: objRef{Name: s.Name, UID: s.UID}},
	}
	if s.BoundName != "" {
		ref := &objRef{Name: s.BoundName, UID: s.BoundUID}
		switch s.BoundKind {
		case "Pod":
			c.Kube.Pod = ref
		case "Secret":
			c.Kube.Secret = ref
		case "Node":
			c.Kube.Node = ref
		}
	}
	if s.BoundKind == "Pod" && s.NodeName != "" {
		c.Kube.Node = &objRef{Name: s.NodeName, UID: s.NodeUID}
	}
	if s.WarnAfter != 0 {
		c.Kube.WarnAfter = jwt.NumericDate(now.Add(s.WarnAfter).Unix())
	}
	return jwt.Signed(t.signer).Claims(&c).CompactSerialize()
}

// errNotOurs: the token is not a JWT this issuer signed; other methods
// may still know it.
var errNotOurs = errors.New("not a service account token of this server")

// verify checks a token's signature, issuer, audience (one of audiences)
// and lifetime.
func (t *ServiceAccountTokens) verify(token string, audiences []string) (*claims, error) {
	if !t.fromOurIssuer(token) {
		return nil, errNotOurs
	}
	tok, err := jwt.ParseSigned(token)
	if err != nil {
		return nil, errNotOurs
	}
	// The keys named by the token's key id, else all, as kube picks them;
	// the signature must verify with one of them, else kube's errors.
	kid := ""
	for _, h := range tok.Headers {
		if h.KeyID != "" {
			kid = h.KeyID
			break
		}
	}
	keys := t.keysFor(kid)
	if len(keys) == 0 {
		return nil, errors.New("invalid signature, no keys found")
	}
	var c claims
	var errs []error
	for _, k := range keys {
		c = claims{}
		if err := tok.Claims(k, &c); err != nil {
			errs = append(errs, err)
			continue
		}
		errs = nil
		break
	}
	if errs != nil {
		return nil, utilerrors.NewAggregate(errs)
	}
	// The issuer read before the signature was checked, checked again.
	if !t.knownIssuer(c.Issuer) {
		return nil, fmt.Errorf("token issuer %q is invalid", c.Issuer)
	}
	now := time.Now().Unix()
	if c.Issuer == LegacyIssuer {
		// A Secret's token names no audience: it is valid for the API
		// server's alone (kube's implicit audiences), not for one a
		// TokenReview asks about, and never expires.
		if tokenAuds := t.legacyAudiences(&c); !slices.ContainsFunc(tokenAuds, func(a string) bool { return slices.Contains(audiences, a) }) {
			return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, audiences)
		}
		return &c, nil
	}
	// A token naming no audience is for the API server's own, as kube
	// takes it. Times are checked with go-jose's leeway of a minute, as
	// kube's validator does, in its order.
	tokenAuds := []string(c.Audience)
	if len(tokenAuds) == 0 {
		tokenAuds = t.Audiences
	}
	nbf, exp, iat := int64(c.NotBefore), int64(c.Expiry), int64(c.IssuedAt)
	switch {
	case nbf != 0 && now+timeLeeway < nbf:
		return nil, errors.New("service account token is not valid yet")
	case exp != 0 && now-timeLeeway > exp:
		return nil, errors.New("service account token has expired")
	case iat != 0 && now+timeLeeway < iat:
		return nil, errors.New("service account token is issued in the future")
	case !slices.ContainsFunc(tokenAuds, func(a string) bool { return slices.Contains(audiences, a) }):
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", tokenAuds, audiences)
	}
	return &c, nil
}

// fromOurIssuer is kube's check before a token is parsed: a compact JWS
// (three parts, not the JSON form go-jose would also take) whose issuer,
// not yet verified, is one this server accepts. Other tokens are left to
// the other authenticators.
func (t *ServiceAccountTokens) fromOurIssuer(token string) bool {
	if strings.HasPrefix(strings.TrimSpace(token), "{") {
		return false
	}
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return false
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return false
	}
	var unverified struct {
		Issuer string `json:"iss"`
	}
	if json.Unmarshal(payload, &unverified) != nil {
		return false
	}
	return t.knownIssuer(unverified.Issuer)
}

// knownIssuer: tokens of iss are this server's (the legacy issuer's are
// kube-controller-manager's, signed with a key this server verifies with).
func (t *ServiceAccountTokens) knownIssuer(iss string) bool {
	return iss == t.Issuer || iss == LegacyIssuer || slices.Contains(t.OtherIssuers, iss)
}

// timeLeeway is go-jose's DefaultLeeway (seconds), which kube-apiserver
// allows for clocks on either side of a token's times and for objects
// deleted just now (DeletedLeeway).
const timeLeeway = 60

// DeletedLeeway: an object whose deletion began less than this ago still
// holds up the tokens bound to it, as on kube-apiserver: a Pod in its
// grace period keeps its API access until it ends.
const DeletedLeeway = timeLeeway * time.Second

// ServiceAccountLookup answers whether the objects a token names still
// exist with the same uid: kind is ServiceAccount, Pod, Secret or Node.
type ServiceAccountLookup func(ctx context.Context, kind, namespace, name string) (uid string, found bool, err error)

// authenticateServiceAccount checks a JWT bearer token and that the
// account (and the object it is bound to) still exist.
func (a *Authenticator) authenticateServiceAccount(ctx context.Context, token string) (*User, bool, error) {
	if a.saTokens == nil || a.saLookup == nil {
		return nil, false, nil
	}
	// The audiences wanted: a TokenReview's, else the API server's.
	want, ok := authenticator.AudiencesFrom(ctx)
	if !ok || len(want) == 0 {
		want = a.saTokens.Audiences
	}
	c, err := a.saTokens.verify(token, want)
	if errors.Is(err, errNotOurs) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if c.Issuer == LegacyIssuer {
		return a.authenticateLegacyToken(ctx, token, c, want)
	}
	ns, sa := c.Kube.Namespace, c.Kube.ServiceAccount
	check := func(kind, namespace string, ref *objRef) error {
		if ref == nil {
			return nil
		}
		uid, found, err := a.saLookup(ctx, kind, namespace, ref.Name)
		if err != nil {
			return err
		}
		// kube's claim validation's words (serviceaccount/claims.go).
		lower := strings.ToLower(kind)
		switch {
		case !found && kind == "ServiceAccount":
			return apierrors.NewNotFound(corev1.Resource("serviceaccounts"), ref.Name)
		case !found:
			return errors.New("service account token has been invalidated")
		case uid != ref.UID && kind == "ServiceAccount":
			return fmt.Errorf("service account UID (%s) does not match claim (%s)", uid, ref.UID)
		case uid != ref.UID:
			return fmt.Errorf("%s UID (%s) does not match service account %s ref claim (%s)", lower, uid, lower, ref.UID)
		}
		return nil
	}
	for _, ref := range []struct {
		kind, ns string
		ref      *objRef
	}{{"ServiceAccount", ns, &sa}, {"Pod", ns, c.Kube.Pod}, {"Secret", ns, c.Kube.Secret}, {"Node", "", boundNode(c.Kube)}} {
		if err := check(ref.kind, ref.ns, ref.ref); err != nil {
			return nil, false, err
		}
	}
	// A kubelet's extended token used past the lifetime it asked for
	// (kube's stale-token annotation, which tells what to rotate).
	if w := int64(c.Kube.WarnAfter); w != 0 {
		if now := time.Now().Unix(); now > w {
			audit.AddAuditAnnotation(ctx, "authentication.k8s.io/stale-token",
				fmt.Sprintf("subject: %s, seconds after warning threshold: %d", c.Subject, now-w))
		}
	}
	// What kube-apiserver tells authorizers and audit about the token.
	extra := map[string][]string{}
	if c.ID != "" {
		extra["authentication.kubernetes.io/credential-id"] = []string{"JTI=" + c.ID}
	}
	if p := c.Kube.Pod; p != nil {
		extra["authentication.kubernetes.io/pod-name"], extra["authentication.kubernetes.io/pod-uid"] = []string{p.Name}, []string{p.UID}
	}
	if n := c.Kube.Node; n != nil && n.Name != "" {
		// A Node that did not exist when the token was made has no uid.
		extra["authentication.kubernetes.io/node-name"] = []string{n.Name}
		if n.UID != "" {
			extra["authentication.kubernetes.io/node-uid"] = []string{n.UID}
		}
	}
	u := &User{Name: "system:serviceaccount:" + ns + ":" + sa.Name, UID: sa.UID,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + ns}, Extra: extra,
		audiences: intersect(c.Audience, want)}
	return u, true, nil
}

// boundNode is the Node a token is bound to: a Pod's token names its
// Pod's node only to tell of it, and is not bound to it.
func boundNode(k kubeClaims) *objRef {
	if k.Pod != nil {
		return nil
	}
	return k.Node
}

// intersect is what of a lies in b, in a's order.
func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}

// legacyAudiences are a Secret's token's audiences: those it names, or
// the API server's when it names none.
func (t *ServiceAccountTokens) legacyAudiences(c *claims) []string {
	if len(c.Audience) > 0 {
		return c.Audience
	}
	return t.Audiences
}
