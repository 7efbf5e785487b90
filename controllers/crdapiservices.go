package controllers

import (
	"context"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Every group-version a CRD serves has an APIService, as kube-apiserver's
// crdregistration controller makes them: named <version>.<group>,
// labelled kube-aggregator.kubernetes.io/automanaged=true, with the
// priorities kube gives custom resources (group 1000, version 100), and
// removed when no CRD serves the group-version any more. A group-version
// a built-in kind serves keeps its own.

const (
	automanagedLabel = "kube-aggregator.kubernetes.io/automanaged"
)

// syncCRDAPIServices creates the APIServices of the group-versions crds
// serve and deletes the automanaged ones no CRD serves.
func (m *Manager) syncCRDAPIServices(ctx context.Context, crds []*apiextensionsv1.CustomResourceDefinition) error {
	x, ok := m.api.Lookup(apiregistrationv1.GroupName, "v1", "apiservices")
	if !ok {
		return nil
	}
	want := map[runtimeschema.GroupVersion]bool{}
	for _, crd := range crds {
		if crd.DeletionTimestamp != nil {
			continue
		}
		for _, v := range crd.Spec.Versions {
			gv := runtimeschema.GroupVersion{Group: crd.Spec.Group, Version: v.Name}
			if _, builtin := schema.PriorityOf(gv); v.Served && !builtin {
				want[gv] = true
			}
		}
	}
	// Passes run at every CRD change; the APIServices are listed only when
	// the set of group-versions CRDs serve has changed since the last
	// sync that succeeded.
	key := gvKey(want)
	if m.crds.apiServicesSynced == key {
		return nil
	}
	have := map[runtimeschema.GroupVersion]bool{}
	var stale, edited []string
	err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := x.Decode(rec)
		if err != nil {
			return err
		}
		s := obj.(*apiregistrationv1.APIService)
		gv := runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
		have[gv] = true
		switch {
		case s.Labels[automanagedLabel] != "true":
		case !want[gv]:
			stale = append(stale, s.Name)
		case !equality.Semantic.DeepEqual(s.Spec, crdAPIServiceSpec(gv)):
			edited = append(edited, s.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for gv := range want {
		if have[gv] {
			continue
		}
		s := &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group, Labels: map[string]string{automanagedLabel: "true"}},
			Spec:       crdAPIServiceSpec(gv),
		}
		if _, err := x.Create(ctx, "", s, registry.WriteOptions{Manager: registry.ManagerAPIServer}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	for _, name := range stale {
		if _, err := x.Delete(ctx, "", name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	for _, name := range edited {
		_, _, err := x.Update(ctx, "", name, func(cur runtime.Object) (runtime.Object, error) {
			s, ok := cur.(*apiregistrationv1.APIService)
			if !ok || s.Labels[automanagedLabel] != "true" {
				return nil, registry.ErrNoChange
			}
			s.Spec = crdAPIServiceSpec(runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version})
			s.ResourceVersion = ""
			return s, nil
		}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	m.crds.apiServicesSynced = key
	return nil
}

// crdAPIServiceSpec is the spec kube's crdregistration controller gives
// a CRD's group-version.
func crdAPIServiceSpec(gv runtimeschema.GroupVersion) apiregistrationv1.APIServiceSpec {
	return apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
		GroupPriorityMinimum: schema.CRDGroupPriority, VersionPriority: schema.CRDVersionPriority}
}

// automanagedAPIServiceEvents tells of the changes, after rev, that may
// take an APIService labelled automanaged=true from what the CRDs want:
// one made or removed, or its spec changed. Status writes (the
// availability controller's) are not told: they would only make the CRD
// controller look again while CRDs are being made.
func (m *Manager) automanagedAPIServiceEvents(ctx context.Context, rev int64) (<-chan struct{}, error) {
	x, ok := m.api.Lookup(apiregistrationv1.GroupName, "v1", "apiservices")
	out := make(chan struct{}, 1)
	if !ok {
		return out, nil // never tells
	}
	w, err := x.Watch(ctx, kv.WatchOptions{After: rev})
	if err != nil {
		return nil, err
	}
	go func() {
		defer w.Stop()
		defer close(out)
		for ev := range w.Events() {
			obj, err := x.Decode(ev.Record)
			s, ok := obj.(*apiregistrationv1.APIService)
			if err != nil || !ok || s.Labels[automanagedLabel] != "true" {
				continue
			}
			gv := runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
			if ev.Type == kv.Modified && equality.Semantic.DeepEqual(s.Spec, crdAPIServiceSpec(gv)) {
				continue
			}
			signal(out)
		}
	}()
	return out, nil
}

// gvKey is a set of group-versions as one comparable string.
func gvKey(set map[runtimeschema.GroupVersion]bool) string {
	keys := make([]string, 0, len(set))
	for gv := range set {
		keys = append(keys, gv.String())
	}
	slices.Sort(keys)
	return strings.Join(keys, ",")
}
