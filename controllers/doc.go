// Package controllers holds the in-process controllers: what
// kube-controller-manager and kube-apiserver's own loops do for API
// semantics alone (system namespaces, namespace termination, default
// ServiceAccounts and root CA ConfigMaps, garbage collection, storage
// protection, Event expiry, the kubernetes Service and its endpoints,
// Service allocation repair, the bootstrap RBAC policy). They read and
// write through the registry, as any client's requests do.
//
// Their behaviour is tested through the server that runs them
// (server/gc_test.go, deletion_test.go, protection_test.go,
// kubernetes_test.go, bootstrap_test.go) and the conformance suite.
package controllers
