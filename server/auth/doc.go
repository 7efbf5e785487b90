// Package auth holds Tabula's transport security and request identity:
//
//   - EnsurePKI creates (once) and then reuses a small private PKI on disk: a
//     self-signed CA, the API server's serving certificate and an admin client
//     certificate, mirroring the layout kubeadm gives kube-apiserver.
//   - WriteKubeconfig turns that PKI into a kubeconfig so kubectl and
//     client-go can talk to the server with no further setup.
//   - Authenticator identifies the caller of a request from a verified client
//     certificate or a static bearer token file (kube-apiserver's
//     --client-ca-file and --token-auth-file), and Middleware enforces it for
//     Echo routes.
//   - Authorization is its subpackage authz: kube's authorizer chain
//     (system:masters, Node, RBAC), kept apart so that programs linking
//     this package for the PKI do not link kube's feature gates.
package auth
