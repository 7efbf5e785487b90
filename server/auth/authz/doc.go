// Package authz is kube-apiserver's authorizer chain for Tabula: the
// privileged system:masters group, then the --authorization-mode modes
// (kube's Node and RBAC authorizers, AlwaysAllow, AlwaysDeny). It sits
// apart from package auth, which clients and tests import for the PKI,
// because kube's authorizers bring kube's feature gates with them, and
// those replace client-go's in any process that links them.
package authz
