// Package authnconfig is kube-apiserver's --authentication-config for
// Tabula: an AuthenticationConfiguration file (apiserver.config.k8s.io
// v1, v1beta1 or v1alpha1) whose JWT issuers authenticate bearer tokens
// through k8s.io/apiserver's OIDC authenticator (discovery, JWKS, claim
// mappings, CEL claim and user validation), and whose anonymous section
// limits anonymous requests to some paths. The JWT part is reloaded when
// the file changes, as kube-apiserver reloads it. It sits apart from
// package auth because the OIDC authenticator brings CEL and kube's
// feature gates with it.
package authnconfig
