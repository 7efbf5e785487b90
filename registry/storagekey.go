package registry

import (
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
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

// PreconditionFailed is kube's store refusing a write whose precondition
// (field "UID" or "ResourceVersion") the stored object fails: an update
// whose body names another uid, a binding's preconditions. It checks
// them before anything else.
func (x *Resource) PreconditionFailed(namespace, name, field string, want, have any) error {
	return apierrors.NewConflict(x.t.GroupResource(), name, storage.NewInvalidObjError(x.EtcdKey(namespace, name),
		fmt.Sprintf("Precondition failed: %s in precondition: %v, %s in object meta: %v", field, want, field, have)))
}
