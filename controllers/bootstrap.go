package controllers

import (
	"context"
	"encoding/json"
	"slices"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	schedulingapiv1 "k8s.io/kubernetes/pkg/apis/scheduling/v1"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The objects kube-apiserver's post-start hooks create on every cluster:
// the bootstrap RBAC policy (cluster-admin, admin, edit, view, the system:
// roles and their bindings, from kube's own bootstrappolicy package,
// reconciled at every start: rbacreconcile.go), the system
// PriorityClasses, and the local APIService of every served group-version
// (as the aggregator's autoregister controller makes them). Missing
// PriorityClasses and APIServices are created; existing PriorityClasses
// are left as users changed them, and existing local APIServices are put
// back once at each start (the first pass of this controller), as the
// autoregister controller does.

// bootstrapObject is one object to create in a namespace ("" for cluster
// scope) of a resource.
type bootstrapObject struct {
	group, resource, namespace string
	obj                        runtime.Object
}

func bootstrapObjects(types *schema.Registry) []bootstrapObject {
	var out []bootstrapObject
	for _, pc := range schedulingapiv1.SystemPriorityClasses() {
		out = append(out, bootstrapObject{"scheduling.k8s.io", "priorityclasses", "", pc.DeepCopy()})
	}
	for _, gv := range types.GroupVersions() {
		p, ok := schema.PriorityOf(gv)
		if !ok || gv.Group == apiregistrationv1.GroupName {
			continue // the aggregator's own group has none
		}
		out = append(out, bootstrapObject{apiregistrationv1.GroupName, "apiservices", "", &apiregistrationv1.APIService{
			ObjectMeta: metav1.ObjectMeta{Name: gv.Version + "." + gv.Group,
				Labels: map[string]string{"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
			Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version,
				GroupPriorityMinimum: p.Group, VersionPriority: p.Version},
		}})
	}
	return out
}

// bootstrapWorkers bounds concurrent creates; they share group commits.
const bootstrapWorkers = 16

// bootstrapController creates the missing bootstrap objects, then keeps
// the aggregated ClusterRoles (admin, edit, view) equal to the union of
// the roles they aggregate, as kube-controller-manager's
// clusterrole-aggregation controller does.
func (m *Manager) bootstrapController(ctx context.Context) error {
	if err := m.reconcileBootstrapPolicy(ctx); err != nil {
		return err
	}
	// Once per start, as kube's autoregister, whatever restarts this
	// loop; a failure is logged, not the readiness's.
	if !m.onStartReconciled.Load() {
		if err := m.reconcileOnStartAPIServices(ctx); err != nil {
			m.log.Warn("local APIServices not put back at start", "err", err)
		}
		m.onStartReconciled.Store(true)
	}
	if err := m.createBootstrapObjects(ctx); err != nil {
		return err
	}
	if err := m.publishClusterInfo(ctx); err != nil {
		return err
	}
	if !m.enabled(ClusterRoleAggregationController) {
		m.bootstrapped.Store(true)
		<-ctx.Done() // kube-controller-manager aggregates
		return nil
	}
	roles := m.api.MustLookup("rbac.authorization.k8s.io", "v1", "clusterroles")
	rev, err := m.store.CurrentRev(ctx)
	if err != nil {
		return err
	}
	w, err := roles.Watch(ctx, kv.WatchOptions{After: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		// Aggregated roles aggregate aggregated roles (admin gathers
		// edit, which gathers view): pass until nothing changes.
		for pass := 0; pass < maxAggregationPasses; pass++ {
			changed, err := m.aggregateClusterRoles(ctx, roles)
			if err != nil {
				return err
			}
			if !changed {
				break
			}
		}
		// Ready once admin, edit and view hold their rules: a binding to
		// admin made right after start-up grants what it says.
		m.bootstrapped.Store(true)
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		}
		// A burst of role writes (a chart's worth) is aggregated once.
		for drained := false; !drained; {
			select {
			case _, ok := <-w.Events():
				if !ok {
					return w.Err()
				}
			default:
				drained = true
			}
		}
	}
}

func (m *Manager) createBootstrapObjects(ctx context.Context) error {
	// What exists already, per resource, so a restart costs one list each.
	have := map[string]map[string]bool{}
	objs := bootstrapObjects(m.types)
	for _, o := range objs {
		if have[o.resource] != nil {
			continue
		}
		have[o.resource] = map[string]bool{}
		res, err := m.api.MustLookup(o.group, "v1", o.resource).List(ctx, kv.ListOptions{})
		if err != nil {
			return err
		}
		for _, rec := range res.Items {
			have[o.resource][rec.Namespace+"/"+rec.Name] = true
		}
	}
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
		sem      = make(chan struct{}, bootstrapWorkers)
	)
	for _, o := range objs {
		name := o.obj.(metav1.Object).GetName()
		if have[o.resource][o.namespace+"/"+name] {
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, err := m.api.MustLookup(o.group, "v1", o.resource).Create(ctx, o.namespace, o.obj.DeepCopyObject(), registry.WriteOptions{Manager: registry.ManagerAPIServer})
			if err != nil && !apierrors.IsAlreadyExists(err) {
				mu.Lock()
				if firstErr == nil {
					firstErr = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return firstErr
}

// reconcileOnStartAPIServices does at start what kube-aggregator's
// autoregister controller does once with the APIServices labelled
// automanaged=onstart that exist then: one for a group-version this
// server serves gets the spec it wants back (an edit lasts until the next
// start), one for a group-version it no longer serves (switched off, or
// dropped by a newer version) is deleted, if it is still the object seen.
// Missing ones are created after (createBootstrapObjects).
func (m *Manager) reconcileOnStartAPIServices(ctx context.Context) error {
	x, ok := m.api.Lookup(apiregistrationv1.GroupName, "v1", "apiservices")
	if !ok {
		return nil
	}
	want := map[string]apiregistrationv1.APIServiceSpec{}
	for _, o := range bootstrapObjects(m.types) {
		if s, ok := o.obj.(*apiregistrationv1.APIService); ok {
			want[s.Name] = s.Spec
		}
	}
	stale := map[string]types.UID{}
	var edited []string
	err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := x.Decode(rec)
		if err != nil {
			return err
		}
		s := obj.(*apiregistrationv1.APIService)
		if s.Labels[automanagedLabel] != "onstart" {
			return nil
		}
		if spec, ok := want[s.Name]; !ok {
			stale[s.Name] = s.UID
		} else if !equality.Semantic.DeepEqual(s.Spec, spec) {
			edited = append(edited, s.Name)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for name, uid := range stale {
		_, err := x.Delete(ctx, "", name, &metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions(string(uid))})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	for _, name := range edited {
		_, _, err := x.Update(ctx, "", name, func(cur runtime.Object) (runtime.Object, error) {
			s, ok := cur.(*apiregistrationv1.APIService)
			if !ok || s.Labels[automanagedLabel] != "onstart" {
				return nil, registry.ErrNoChange
			}
			s.Spec = want[name]
			s.ResourceVersion = ""
			return s, nil
		}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

// aggregationManager is kube-controller-manager's aggregation controller's
// field manager.
const aggregationManager = "clusterrole-aggregation-controller"

// maxAggregationPasses bounds the passes over nested aggregated roles
// (kube's nest three deep); a cycle of aggregations cannot keep it busy.
const maxAggregationPasses = 8

// aggregateClusterRoles sets the rules of every ClusterRole with an
// aggregationRule to those of the ClusterRoles its selectors match, and
// reports whether it changed any.
func (m *Manager) aggregateClusterRoles(ctx context.Context, roles *registry.Resource) (bool, error) {
	res, err := roles.List(ctx, kv.ListOptions{})
	if err != nil {
		return false, err
	}
	changed := false
	var all []*rbacv1.ClusterRole
	for _, rec := range res.Items {
		obj, err := roles.Decode(rec)
		if err != nil {
			return false, err
		}
		all = append(all, obj.(*rbacv1.ClusterRole))
	}
	for _, agg := range all {
		if agg.AggregationRule == nil {
			continue
		}
		var rules []rbacv1.PolicyRule
		for _, sel := range agg.AggregationRule.ClusterRoleSelectors {
			selector, err := metav1.LabelSelectorAsSelector(&sel)
			if err != nil {
				continue
			}
			for _, r := range all {
				if r.Name != agg.Name && selector.Matches(labels.Set(r.Labels)) {
					rules = appendNewRules(rules, r.Rules)
				}
			}
		}
		if equalRules(agg.Rules, rules) {
			continue
		}
		// As kube-controller-manager's aggregation controller writes them:
		// an apply of the rules, forced, by its own field manager.
		cfg, err := json.Marshal(map[string]interface{}{
			"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
			"metadata": map[string]interface{}{"name": agg.Name}, "rules": rules,
		})
		if err != nil {
			return false, err
		}
		_, _, err = roles.Apply(ctx, "", agg.Name, cfg, registry.ApplyOptions{
			WriteOptions: registry.WriteOptions{Manager: aggregationManager}, Force: true,
		})
		if err != nil {
			return false, err
		}
		changed = true
	}
	return changed, nil
}

func appendNewRules(rules, more []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	for _, m := range more {
		found := false
		for _, r := range rules {
			if equalRules([]rbacv1.PolicyRule{r}, []rbacv1.PolicyRule{m}) {
				found = true
				break
			}
		}
		if !found {
			rules = append(rules, m)
		}
	}
	return rules
}

// equalRules compares rules field by field, a nil list equal to an empty
// one (as comparing their printed forms did, without printing each rule
// on every comparison: the aggregation compares every pair).
func equalRules(a, b []rbacv1.PolicyRule) bool {
	return slices.EqualFunc(a, b, func(x, y rbacv1.PolicyRule) bool {
		return slices.Equal(x.Verbs, y.Verbs) && slices.Equal(x.APIGroups, y.APIGroups) && slices.Equal(x.Resources, y.Resources) &&
			slices.Equal(x.ResourceNames, y.ResourceNames) && slices.Equal(x.NonResourceURLs, y.NonResourceURLs)
	})
}

// mutateObject changes a stored cluster-scoped object (or its
// subresource) through the registry as kube-apiserver's own writer;
// change reports whether it changed anything. The change is decided on
// the current object, so a conflict retries it.
func (m *Manager) mutateObject(ctx context.Context, x *registry.Resource, name, subresource string, change func(runtime.Object) bool) error {
	_, _, err := x.Update(ctx, "", name, func(cur runtime.Object) (runtime.Object, error) {
		if !change(cur) {
			return nil, registry.ErrNoChange
		}
		cur.(metav1.Object).SetResourceVersion("")
		return cur, nil
	}, registry.UpdateOptions{Subresource: subresource, WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
