package oidctest

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	jose "gopkg.in/go-jose/go-jose.v2"
)

// Issuer is a running test issuer; Close stops it.
type Issuer struct {
	// URL is the issuer's https URL (the tokens' iss claim).
	URL string
	srv *httptest.Server
	key *rsa.PrivateKey
	kid string
}

// Start serves a new issuer on a loopback port.
func Start() (*Issuer, error) {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return nil, err
	}
	is := &Issuer{key: key, kid: "test-key-1"}
	mux := http.NewServeMux()
	mux.HandleFunc("/.well-known/openid-configuration", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"issuer":                                is.URL,
			"jwks_uri":                              is.URL + "/keys",
			"authorization_endpoint":                is.URL + "/auth",
			"response_types_supported":              []string{"id_token"},
			"subject_types_supported":               []string{"public"},
			"id_token_signing_alg_values_supported": []string{"RS256"},
		})
	})
	mux.HandleFunc("/keys", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(jose.JSONWebKeySet{Keys: []jose.JSONWebKey{{Key: &key.PublicKey, KeyID: is.kid, Algorithm: "RS256", Use: "sig"}}})
	})
	is.srv = httptest.NewTLSServer(mux)
	is.URL = is.srv.URL
	return is, nil
}

// CAPEM is the PEM certificate that verifies the issuer's serving
// certificate (an AuthenticationConfiguration's certificateAuthority).
func (is *Issuer) CAPEM() string {
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: is.srv.Certificate().Raw}))
}

// Close stops the server.
func (is *Issuer) Close() { is.srv.Close() }

// Token signs claims; iss, iat and exp (an hour) are added unless given.
func (is *Issuer) Token(claims map[string]any) (string, error) {
	c := map[string]any{"iss": is.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	payload, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.RS256, Key: is.key},
		(&jose.SignerOptions{}).WithType("JWT").WithHeader("kid", is.kid))
	if err != nil {
		return "", err
	}
	jws, err := signer.Sign(payload)
	if err != nil {
		return "", fmt.Errorf("signing: %w", err)
	}
	return jws.CompactSerialize()
}

// AuthenticationConfig is an AuthenticationConfiguration trusting the
// issuer for audience "tabula" as identity providers usually are: the
// email names the user and the groups claim gives groups (both with
// prefix), the subject is the uid, the "team" claim the extra
// example.com/team; tokens must carry hd "example.com" and may not name
// a system: user.
func (is *Issuer) AuthenticationConfig(prefix string) string {
	ca := "      " + strings.ReplaceAll(strings.TrimRight(is.CAPEM(), "\n"), "\n", "\n      ")
	return fmt.Sprintf(`apiVersion: apiserver.config.k8s.io/v1
kind: AuthenticationConfiguration
jwt:
- issuer:
    url: %s
    audiences: [tabula]
    certificateAuthority: |
%s
  claimValidationRules:
  - expression: 'claims.hd == "example.com"'
    message: the hosted domain must be example.com
  claimMappings:
    username: {claim: email, prefix: %q}
    groups: {claim: groups, prefix: %q}
    uid: {expression: 'claims.sub'}
    extra:
    - key: example.com/team
      valueExpression: 'claims.team'
  userValidationRules:
  - expression: '!user.username.startsWith(%q)'
    message: system users may not come from the issuer
`, is.URL, ca, prefix, prefix, prefix+"system:")
}
