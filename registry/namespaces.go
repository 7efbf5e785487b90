package registry

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/schema"
)

// admitCreate checks that a namespaced object's namespace exists and is
// not terminating, as kube-apiserver's NamespaceLifecycle admission does.
func (g *Registry) admitCreate(ctx context.Context, t *schema.Type, acc metav1.Object) error {
	if !t.Namespaced || !g.admissionEnabled("NamespaceLifecycle") {
		return nil
	}
	namespace := acc.GetNamespace()
	if g.namespaceActive(namespace) {
		return nil
	}
	ns, err := g.Namespace(ctx, namespace)
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		st := apierrors.NewForbidden(t.GroupResource(), acc.GetName(),
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", namespace))
		st.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type:    "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", namespace),
			Field:   "metadata.namespace",
		}}
		return st
	}
	return nil
}

// Namespace reads a namespace; 404 when it does not exist.
func (g *Registry) Namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	obj, _, err := g.For(g.nsType).Get(ctx, "", name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}

// namespaceActive reports whether the namespace cache knows name to be
// Active and not being deleted; false also means "not known yet": the
// caller reads it. A namespace written through this registry is in the
// cache when the write returns (cachedStore), so this server's own
// deletes are seen at once; another replica's when the watch delivers
// them, the window an informer gives kube-apiserver's NamespaceLifecycle.
func (g *Registry) namespaceActive(name string) bool {
	if g.namespaces == nil || !g.namespaces.Synced() {
		return false
	}
	obj, ok, _ := g.namespaces.Indexer().GetByKey(name)
	if !ok {
		return false
	}
	ns := obj.(*corev1.Namespace)
	return ns.Status.Phase == corev1.NamespaceActive && ns.DeletionTimestamp == nil
}
