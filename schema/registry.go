package schema

import (
	"slices"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/discovery"
)

// Registry holds every served Type. It is safe for concurrent use; custom
// resources will add and remove entries while the server runs.
type Registry struct {
	// Scheme knows the Go types of the built-in kinds; codecs use it for
	// Protobuf and strict JSON/YAML decoding.
	Scheme *runtime.Scheme

	mu    sync.RWMutex
	types []*Type
	byGVR map[schema.GroupVersionResource]*Type
	// onChange hear of Types added or removed while the server runs.
	onChange []func()
}

// OnChange calls fn after every later change of the served Types.
func (r *Registry) OnChange(fn func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.onChange = append(r.onChange, fn)
}

// NewRegistry returns an empty registry using scheme for built-in kinds.
func NewRegistry(scheme *runtime.Scheme) *Registry {
	return &Registry{Scheme: scheme, byGVR: map[schema.GroupVersionResource]*Type{}}
}

// Add registers t. A later Add of the same group-version-resource replaces it.
func (r *Registry) Add(t *Type) {
	r.mu.Lock()
	defer r.mu.Unlock()
	gvr := t.GroupVersion().WithResource(t.Resource)
	if old, ok := r.byGVR[gvr]; ok {
		for i, o := range r.types {
			if o == old {
				r.types[i] = t
			}
		}
	} else {
		r.types = append(r.types, t)
	}
	r.byGVR[gvr] = t
}

// SetStorage makes types the only Types stored under storageResource:
// Types of it that are not among them stop being served (a custom
// resource's versions as its CRD changes; none once it is deleted).
func (r *Registry) SetStorage(storageResource string, types []*Type) {
	r.mu.Lock()
	listeners := r.onChange
	defer func() {
		for _, fn := range listeners {
			fn()
		}
	}()
	defer r.mu.Unlock()
	kept := r.types[:0:0]
	for _, t := range r.types {
		if t.StorageResource != storageResource {
			kept = append(kept, t)
			continue
		}
		delete(r.byGVR, t.GroupVersion().WithResource(t.Resource))
		if t.retired != nil && !slices.Contains(types, t) {
			close(t.retired)
		}
	}
	r.types = kept
	for _, t := range types {
		gvr := t.GroupVersion().WithResource(t.Resource)
		if _, taken := r.byGVR[gvr]; taken {
			// A built-in or another CRD serves these names; it keeps them.
			continue
		}
		r.types = append(r.types, t)
		r.byGVR[gvr] = t
	}
}

// Lookup finds the Type serving group/version/resource.
func (r *Registry) Lookup(group, version, resource string) (*Type, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	t, ok := r.byGVR[schema.GroupVersionResource{Group: group, Version: version, Resource: resource}]
	return t, ok
}

// Types returns every registered Type in registration order.
func (r *Registry) Types() []*Type {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]*Type(nil), r.types...)
}

// GroupVersions returns the served group-versions in kube-apiserver's
// discovery order: the legacy core group first, then the named groups by
// priority (ties by name), each group's versions preferred one first.
//
// A group-version without a kube-apiserver entry is a custom resource's,
// which kube's crdregistration controller gives GroupPriorityMinimum 1000
// and VersionPriority 100; equal version priorities, as all of a CRD
// group's are, fall back to kube's version order (v1 > v1beta2 > v1beta1 >
// v1alpha1), as kube's aggregator and apiextensions' discovery controller
// do. Registration order, which follows CRD spec order and start-up
// timing, must not decide the preferred version.
func (r *Registry) GroupVersions() []schema.GroupVersion {
	seen := map[schema.GroupVersion]bool{}
	var out []schema.GroupVersion
	// A group sorts by the highest priority among its versions, as in
	// kube's aggregated discovery, so its versions stay together.
	groupPriority := map[string]int32{}
	for _, t := range r.Types() {
		gv := t.GroupVersion()
		if seen[gv] {
			continue
		}
		seen[gv] = true
		out = append(out, gv)
		if p := priorityOrCRD(gv); p.Group > groupPriority[gv.Group] {
			groupPriority[gv.Group] = p.Group
		}
	}
	sort.Slice(out, func(i, j int) bool {
		a, b := out[i], out[j]
		if (a.Group == "") != (b.Group == "") {
			return a.Group == ""
		}
		if a.Group != b.Group {
			if pa, pb := groupPriority[a.Group], groupPriority[b.Group]; pa != pb {
				return pa > pb
			}
			return a.Group < b.Group
		}
		if pa, pb := priorityOrCRD(a).Version, priorityOrCRD(b).Version; pa != pb {
			return pa > pb
		}
		return version.CompareKubeAwareVersionStrings(a.Version, b.Version) > 0
	})
	return out
}

// crdPriority is what kube's crdregistration controller gives every
// custom resource group-version's APIService.
var crdPriority = Priority{Group: 1000, Version: 100}

func priorityOrCRD(gv schema.GroupVersion) Priority {
	if p, ok := PriorityOf(gv); ok {
		return p
	}
	return crdPriority
}

// TypesIn returns the Types of one group-version in registration order.
func (r *Registry) TypesIn(gv schema.GroupVersion) []*Type {
	var out []*Type
	for _, t := range r.Types() {
		if t.GroupVersion() == gv {
			out = append(out, t)
		}
	}
	return out
}

// StorageVersionHash is legacy discovery's opaque name for the group,
// version and kind t's objects are stored as, by kube-apiserver's own
// function.
// Resources without storage of their own have none.
func (r *Registry) StorageVersionHash(t *Type) string {
	if t.Virtual || t.StorageUnserved || !slices.Contains(t.Verbs, "get") {
		return ""
	}
	group, version, kind := t.Group, t.Version, t.Kind
	switch {
	case t.StorageVersion != "":
		version = t.StorageVersion
	case t.FromStorage != nil:
		for _, o := range r.ByStorage(t.StorageResource) {
			if o.FromStorage == nil {
				group, version, kind = o.Group, o.Version, o.Kind
				break
			}
		}
	}
	return discovery.StorageVersionHash(group, version, kind)
}

// ByStorage returns the Types stored under one storage resource.
func (r *Registry) ByStorage(storageResource string) []*Type {
	var out []*Type
	for _, t := range r.Types() {
		if t.StorageResource == storageResource {
			out = append(out, t)
		}
	}
	return out
}
