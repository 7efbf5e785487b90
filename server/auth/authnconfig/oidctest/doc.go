// Package oidctest is an OpenID Connect issuer for tests: an HTTPS server
// with the discovery document and key set k8s.io/apiserver's OIDC
// authenticator fetches, and an RSA key that signs the tokens a test asks
// for.
package oidctest
