package registry

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/storage"
)

// etcdPrefixes are the key prefixes kube-apiserver keeps these resources
// under in etcd, where the prefix is not the resource's own name (kube's
// SpecialDefaultResourcePrefixes).
var etcdPrefixes = map[runtimeschema.GroupResource]string{
	{Resource: "replicationcontrollers"}:                "controllers",
	{Resource: "endpoints"}:                             "services/endpoints",
	{Resource: "nodes"}:                                 "minions",
	{Resource: "services"}:                              "services/specs",
	{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
}

// EtcdKey is the key kube-apiserver would keep the object under. Its
// storage errors name it, so clients read it in their messages.
func (x *Resource) EtcdKey(namespace, name string) string {
	gr := x.st.GroupResource()
	prefix, ok := etcdPrefixes[gr]
	switch {
	case ok:
	case x.st.Unstructured:
		prefix = gr.Group + "/" + gr.Resource
	default:
		prefix = gr.Resource
	}
	if namespace != "" {
		return "/registry/" + prefix + "/" + namespace + "/" + name
	}
	return "/registry/" + prefix + "/" + name
}

// UIDPreconditionFailed is kube's answer to an update whose body names
// another uid than the stored object's: its store takes the body's uid
// as a precondition and refuses it before anything else.
func (x *Resource) UIDPreconditionFailed(namespace, name string, want, have types.UID) error {
	return apierrors.NewConflict(x.t.GroupResource(), name, storage.NewInvalidObjError(x.EtcdKey(namespace, name),
		fmt.Sprintf("Precondition failed: UID in precondition: %v, UID in object meta: %v", want, have)))
}
