package controllers

import (
	"context"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	var stale []string
	err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := x.Decode(rec)
		if err != nil {
			return err
		}
		s := obj.(*apiregistrationv1.APIService)
		gv := runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
		have[gv] = true
		if s.Labels[automanagedLabel] == "true" && !want[gv] {
			stale = append(stale, s.Name)
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
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
				GroupPriorityMinimum: schema.CRDGroupPriority, VersionPriority: schema.CRDVersionPriority},
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
	m.crds.apiServicesSynced = key
	return nil
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
