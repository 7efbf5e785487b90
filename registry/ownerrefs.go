package registry

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/endpoints/handlers"
	"k8s.io/apiserver/pkg/warning"
)

// DedupOwnerReferences drops owner references equal to an earlier one
// and warns of their uids, as kube-apiserver's handlers do: a create's or
// update's body before admission (the server's handlers call it), and
// every write's object again after mutating admission (afterAdmission,
// the registry's), which is the only time for a patch.
func DedupOwnerReferences(ctx context.Context, obj runtime.Object, afterAdmission bool) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	refs := acc.GetOwnerReferences()
	if len(refs) < 2 {
		return
	}
	var kept []metav1.OwnerReference
	var dups []string
	for _, ref := range refs {
		// Only a uid seen before can be a duplicate; then the whole
		// reference must be equal to a kept one.
		seen := false
		for _, k := range kept {
			if k.UID == ref.UID && equality.Semantic.DeepEqual(k, ref) {
				seen = true
				break
			}
		}
		if seen {
			dups = append(dups, string(ref.UID))
			continue
		}
		kept = append(kept, ref)
	}
	if len(dups) == 0 {
		return
	}
	format := handlers.DuplicateOwnerReferencesWarningFormat
	if afterAdmission {
		format = handlers.DuplicateOwnerReferencesAfterMutatingAdmissionWarningFormat
	}
	warning.AddWarning(ctx, "", fmt.Sprintf(format, strings.Join(dups, ", ")))
	acc.SetOwnerReferences(kept)
}
