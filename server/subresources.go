package server

// subresourceHandlers serve the subresources whose kind is not the
// object's own, as kube-apiserver's storage map does: by subresource for
// every kind that has it ("scale"), by core resource/subresource for the
// kubelet- and scheduler-facing ones. The others (status, finalize) are
// the object itself and go through the verb handlers.
var subresourceHandlers = map[string]func(*request) error{
	"scale":                 (*request).scale,
	"pods/log":              (*request).podLog,
	"pods/exec":             (*request).podExec,
	"pods/attach":           (*request).podAttach,
	"pods/portforward":      (*request).podPortForward,
	"pods/proxy":            (*request).podProxy,
	"pods/binding":          (*request).podBinding,
	"pods/eviction":         (*request).podEviction,
	"services/proxy":        (*request).serviceProxy,
	"serviceaccounts/token": (*request).serviceAccountToken,
	"nodes/proxy":           (*request).nodeProxy,
}
