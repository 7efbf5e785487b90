package registry

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// draAdminAccess is kube's storage rule for ResourceClaims and their
// templates (pkg/registry/resource/utils.go AuthorizedForAdmin): a request
// for admin access to devices is only allowed in a namespace labelled
// resource.kubernetes.io/admin-access=true, read as it is now.
type draAdminAccess struct{ g *Registry }

// draAdminNamespaceLabel is the label kube's rule reads.
const draAdminNamespaceLabel = "resource.kubernetes.io/admin-access"

func (draAdminAccess) beginCreate(context.Context, runtime.Object, bool) (func(bool), error) {
	return noFinish, nil
}

func (draAdminAccess) beginUpdate(context.Context, runtime.Object, runtime.Object, bool) (func(bool), error) {
	return noFinish, nil
}

func (draAdminAccess) afterDelete(context.Context, runtime.Object) {}

func (h draAdminAccess) authorizeReferences(ctx context.Context, obj, _ runtime.Object) *field.Error {
	var spec *resourcev1.ResourceClaimSpec
	var namespace string
	switch o := obj.(type) {
	case *resourcev1.ResourceClaim:
		spec, namespace = &o.Spec, o.Namespace
	case *resourcev1.ResourceClaimTemplate:
		spec, namespace = &o.Spec.Spec, o.Namespace
	default:
		return nil
	}
	var path *field.Path
	for i, r := range spec.Devices.Requests {
		if r.Exactly != nil && r.Exactly.AdminAccess != nil && *r.Exactly.AdminAccess {
			path = field.NewPath("spec", "devices", "requests").Index(i).Child("adminAccess")
			break
		}
	}
	if path == nil {
		return nil
	}
	nsObj, _, err := h.g.MustLookup("", "v1", "namespaces").Get(ctx, "", namespace)
	if err != nil {
		return field.InternalError(path, fmt.Errorf("could not retrieve namespace to verify admin access: %w", err))
	}
	if ns, _ := nsObj.(*corev1.Namespace); ns == nil || ns.Labels[draAdminNamespaceLabel] != "true" {
		return field.Forbidden(path, fmt.Sprintf("admin access to devices requires the `%s: true` label on the containing namespace", draAdminNamespaceLabel))
	}
	return nil
}
