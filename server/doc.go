// Package server is Tabula's HTTP front: Echo routing, request parsing,
// authentication, the handlers for every verb of the generic resource path,
// discovery, /version and the health endpoints.
//
// A resource request goes: routes.go (path → requestInfo) → auth
// middleware → one handler file per verb (get.go, list.go, watch.go,
// create.go, update.go, patch.go, delete.go) → the Store interface
// (store.go), which cmd fills with sqlstore. Errors become a Kubernetes
// Status in exactly one place (status.go).
package server
