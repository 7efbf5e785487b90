package auth

import (
	"cmp"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/client-go/util/keyutil"
)

// Service account tokens are JWTs signed with an ECDSA P-256 key (ES256),
// with kube-apiserver's claims: issuer, subject
// system:serviceaccount:<namespace>:<name>, audiences, expiry, and the
// kubernetes.io claim naming the account (and a bound object). Replicas
// that share the PKI directory share the key, so any of them accepts a
// token another issued.

// SAKeyFile is the signing key's file in the PKI directory (kubeadm's name).
const SAKeyFile = "sa.key"

// DefaultIssuer is kube-apiserver's usual --service-account-issuer; it is
// also the audience tokens get when a request names none.
const DefaultIssuer = "https://kubernetes.default.svc.cluster.local"

// ServiceAccountTokens issues and verifies service account tokens.
type ServiceAccountTokens struct {
	key   *ecdsa.PrivateKey
	keyID string
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

// PublicKey is the key tokens are verified with, as published at
// /openid/v1/jwks.
func (t *ServiceAccountTokens) PublicKey() *ecdsa.PublicKey { return &t.key.PublicKey }

// NewServiceAccountTokens uses key, with the default issuer and audience.
func NewServiceAccountTokens(key *ecdsa.PrivateKey) *ServiceAccountTokens {
	der, _ := x509.MarshalPKIXPublicKey(&key.PublicKey)
	sum := sha256.Sum256(der)
	return &ServiceAccountTokens{key: key, keyID: base64.RawURLEncoding.EncodeToString(sum[:]),
		Issuer: DefaultIssuer, Audiences: []string{DefaultIssuer}}
}

// EnsureServiceAccountKey loads the signing key from dir, making one the
// first time.
func EnsureServiceAccountKey(dir string) (*ecdsa.PrivateKey, error) {
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
func LoadServiceAccountKey(path string) (*ecdsa.PrivateKey, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return serviceAccountKey(path, b)
}

func serviceAccountKey(path string, pemBytes []byte) (*ecdsa.PrivateKey, error) {
	signer, err := parseKeyPEM(pemBytes)
	if err != nil {
		return nil, fmt.Errorf("service account key %s: %w", path, err)
	}
	key, ok := signer.(*ecdsa.PrivateKey)
	if !ok || key.Curve != elliptic.P256() {
		return nil, fmt.Errorf("service account key %s: want an ECDSA P-256 key (tokens are signed with ES256)", path)
	}
	return key, nil
}

// CheckVerificationKeys reads kube-apiserver's --service-account-key-file:
// the keys tokens are verified with. Tabula verifies with its signing key
// alone, so the file may hold only that key (public, in a certificate, or
// private), as the files tools such as controller-runtime's envtest write.
func CheckVerificationKeys(path string, signing *ecdsa.PrivateKey) error {
	// kube-apiserver's own reading of the file.
	keys, err := keyutil.PublicKeysFromFile(path)
	if err != nil {
		return err
	}
	for _, k := range keys {
		if !publicKeysEqual(k, &signing.PublicKey) {
			return fmt.Errorf("%s: holds a key other than the service account signing key; Tabula verifies tokens with the signing key alone", path)
		}
	}
	return nil
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
	Namespace      string  `json:"namespace"`
	ServiceAccount objRef  `json:"serviceaccount"`
	Pod            *objRef `json:"pod,omitempty"`
	Secret         *objRef `json:"secret,omitempty"`
	Node           *objRef `json:"node,omitempty"`
	WarnAfter      int64   `json:"warnafter,omitempty"`
}

type objRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

type claims struct {
	Issuer    string     `json:"iss"`
	Subject   string     `json:"sub"`
	Audience  []string   `json:"aud"`
	Expiry    int64      `json:"exp"`
	IssuedAt  int64      `json:"iat"`
	NotBefore int64      `json:"nbf"`
	ID        string     `json:"jti"`
	Kube      kubeClaims `json:"kubernetes.io"`
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
		Expiry: exp.Unix(), IssuedAt: now.Unix(), NotBefore: now.Unix(), ID: cmp.Or(s.ID, uuid.NewString()),
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
		c.Kube.WarnAfter = now.Add(s.WarnAfter).Unix()
	}
	header, _ := json.Marshal(map[string]string{"alg": "ES256", "kid": t.keyID})
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signingInput := b64(header) + "." + b64(payload)
	digest := sha256.Sum256([]byte(signingInput))
	r, sv, err := ecdsa.Sign(rand.Reader, t.key, digest[:])
	if err != nil {
		return "", err
	}
	sig := make([]byte, 64)
	r.FillBytes(sig[:32])
	sv.FillBytes(sig[32:])
	return signingInput + "." + b64(sig), nil
}

func b64(b []byte) string { return base64.RawURLEncoding.EncodeToString(b) }

// errNotOurs: the token is not a JWT this issuer signed; other methods
// may still know it.
var errNotOurs = errors.New("not a service account token of this server")

// verify checks a token's signature, issuer, audience (one of audiences)
// and lifetime.
func (t *ServiceAccountTokens) verify(token string, audiences []string) (*claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return nil, errNotOurs
	}
	var header struct{ Alg, Kid string }
	hb, err := base64.RawURLEncoding.DecodeString(parts[0])
	if err != nil || json.Unmarshal(hb, &header) != nil || header.Alg != "ES256" {
		return nil, errNotOurs
	}
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || len(sig) != 64 {
		return nil, errNotOurs
	}
	digest := sha256.Sum256([]byte(parts[0] + "." + parts[1]))
	r, s := new(big.Int).SetBytes(sig[:32]), new(big.Int).SetBytes(sig[32:])
	if !ecdsa.Verify(&t.key.PublicKey, digest[:], r, s) {
		return nil, errNotOurs
	}
	pb, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return nil, ErrInvalidBearerToken
	}
	var c claims
	if err := json.Unmarshal(pb, &c); err != nil {
		return nil, ErrInvalidBearerToken
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
	// Times are checked with go-jose's leeway of a minute, as kube's
	// validator does, in its order.
	switch {
	case c.Issuer != t.Issuer && !slices.Contains(t.OtherIssuers, c.Issuer):
		return nil, errNotOurs
	case c.NotBefore != 0 && now+timeLeeway < c.NotBefore:
		return nil, errors.New("service account token is not valid yet")
	case c.Expiry != 0 && now-timeLeeway > c.Expiry:
		return nil, errors.New("service account token has expired")
	case c.IssuedAt != 0 && now+timeLeeway < c.IssuedAt:
		return nil, errors.New("service account token is issued in the future")
	case !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(audiences, a) }):
		return nil, fmt.Errorf("token audiences %q is invalid for the target audiences %q", c.Audience, audiences)
	}
	return &c, nil
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
	if w := c.Kube.WarnAfter; w != 0 {
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
