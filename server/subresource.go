package server

import (
	"k8s.io/apimachinery/pkg/runtime"
)

// subresourceFields says which top-level part of an object a subresource
// writes; everything else is kept from the stored object.
var subresourceFields = map[string][]string{
	"status":   {"status"},
	"finalize": {"spec"},
}

// applySubresource builds the object a subresource write stores: the old
// object with only the subresource's fields taken from obj. For the main
// resource of a type with a status subresource, status is kept from old.
func (r *request) applySubresource(obj, old runtime.Object) (runtime.Object, error) {
	if old == nil {
		return obj, nil
	}
	from, keep := obj, old
	fields := subresourceFields[r.ri.Subresource]
	if r.ri.Subresource == "" {
		if !hasSubresource(r.t.Subresources, "status") {
			return obj, nil
		}
		// Main resource: everything from obj except status.
		from, keep, fields = old, obj, []string{"status"}
	}
	src, err := runtime.DefaultUnstructuredConverter.ToUnstructured(from)
	if err != nil {
		return nil, err
	}
	dst, err := runtime.DefaultUnstructuredConverter.ToUnstructured(keep)
	if err != nil {
		return nil, err
	}
	for _, f := range fields {
		if v, ok := src[f]; ok {
			dst[f] = v
		} else {
			delete(dst, f)
		}
	}
	if r.ri.Subresource != "" {
		// Subresource writes may still move metadata.resourceVersion.
		if m, ok := src["metadata"].(map[string]interface{}); ok {
			if md, ok := dst["metadata"].(map[string]interface{}); ok {
				md["resourceVersion"] = m["resourceVersion"]
			}
		}
	}
	out := r.t.New()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(dst, out); err != nil {
		return nil, err
	}
	out.GetObjectKind().SetGroupVersionKind(r.t.GroupVersionKind())
	return out, nil
}
