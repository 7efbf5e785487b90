package controllers

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The in-process controllers do what kube-controller-manager and
// kube-apiserver's own controllers do for API semantics alone: system
// namespaces, namespace termination, and each namespace's default
// ServiceAccount and kube-root-ca.crt ConfigMap.

// systemNamespaces exist on every kube-apiserver.
var systemNamespaces = []string{"default", "kube-system", "kube-public", "kube-node-lease"}

const rootCAConfigMap = "kube-root-ca.crt"

// resyncInterval bounds how long a namespace may wait for its contents
// to be re-checked when no event arrives (objects held by finalizers).
const resyncInterval = 2 * time.Second

// Run starts the controllers; they stop when ctx ends.
func (m *Manager) Run(ctx context.Context) error {
	// The caches first: admission (webhook configurations, namespaces)
	// waits for them before admitting the first write.
	m.api.RunCaches(ctx, m.runLoop)
	for _, ns := range systemNamespaces {
		obj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}
		if _, err := m.namespacesAPI().Create(ctx, "", obj, registry.WriteOptions{Manager: registry.ManagerAPIServer}); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	m.refreshFields(ctx)
	// Custom resources are served from the first request on.
	if err := m.loadCRDs(ctx); err != nil {
		m.log.Warn("custom resource definitions not loaded yet", "err", err)
	}
	go m.runLoop(ctx, "customresourcedefinitions", m.crdController)
	if m.enabled(NamespaceController) {
		go m.runLoop(ctx, "namespace controller", m.namespaceController)
	}
	if m.enabled(ServiceAccountController) || m.enabled(RootCACertificatePublisherController) {
		go m.runLoop(ctx, "namespace defaults controller", m.defaultsController)
	}
	go m.runLoop(ctx, "event expiry", m.expiryController)
	if m.enabled(GarbageCollectorController) {
		go m.runLoop(ctx, "garbage collector", m.gcController)
	}
	if m.enabled(PVCProtectionController) || m.enabled(PVProtectionController) || m.enabled(VACProtectionController) {
		go m.runLoop(ctx, "storage object in use protection", m.protectionController)
	}
	if m.enabled(ValidatingAdmissionPolicyStatusController) {
		go m.runLoop(ctx, "validating admission policy status", m.policyStatusController)
	}
	if m.enabled(ResourceQuotaController) {
		go m.runLoop(ctx, "resource quota", m.quotaController)
	}
	go m.runLoop(ctx, "apiservice availability", m.apiServiceAvailabilityController)
	go m.runLoop(ctx, "service allocation repair", m.serviceRepairController)
	m.leaving.Store(true)
	go func() {
		defer close(m.left)
		m.runLoop(ctx, "kubernetes service", m.kubernetesServiceController)
	}()
	go m.runLoop(ctx, "bootstrap policy", m.bootstrapController)
	go m.runLoop(ctx, "priority and fairness configuration", m.flowcontrolBootstrapController)
	return nil
}

// refreshFields brings the stored selectable fields of built-in kinds up
// to date before the first request: objects written by a Tabula that did
// not yet select their kind by some field would not be found by it. Only
// rows missing a field are read and rewritten, so a start after the first
// costs one keys-and-fields scan per such kind. Kinds sharing a storage
// resource (the two Event kinds) store the same fields, both groups'
// names, so either may refresh them. A failure is logged, not fatal: replicas starting together on one
// database may collide on the same rows, and one of them does the work.
func (m *Manager) refreshFields(ctx context.Context) {
	for _, t := range m.types.Types() {
		if t.Unstructured || len(t.FieldLabels) == 0 {
			continue
		}
		x, ok := m.api.Lookup(t.Group, t.Version, t.Resource)
		if !ok {
			continue
		}
		n, err := x.RefreshFields(ctx)
		if err != nil {
			m.log.Warn("stored selectable fields not refreshed", "resource", t.GroupResource().String(), "err", err)
			continue
		}
		if n > 0 {
			m.log.Info("stored selectable fields refreshed", "resource", t.GroupResource().String(), "objects", n)
		}
	}
}

// controllerPage is how many objects a controller reads at a time, so its
// memory stays bounded however many objects it walks through.
const controllerPage = 500

// eachStored calls each for every live object opts lists, reading them in
// pages of controllerPage at the latest revision (not one snapshot: a
// controller acts on current state, and may change it as it goes).
func (m *Manager) eachStored(ctx context.Context, opts kv.ListOptions, each func(kv.Record) error) error {
	opts.Limit = controllerPage
	for {
		res, err := m.store.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, rec := range res.Items {
			if err := each(rec); err != nil {
				return err
			}
		}
		if !res.More {
			return nil
		}
		last := res.Items[len(res.Items)-1]
		opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
	}
}

// runLoop restarts a controller after an error until ctx ends, so a
// database outage does not stop it for good. The wait doubles while runs
// keep failing and starts over after a run that lasted (as client-go's
// reflector resets its backoff), so a watch closed now and then does not
// leave every later restart 5 s late.
func (m *Manager) runLoop(ctx context.Context, name string, fn func(context.Context) error) {
	var backoff time.Duration
	for ctx.Err() == nil {
		started := time.Now()
		err := fn(ctx)
		backoff = nextBackoff(backoff, time.Since(started))
		if ctx.Err() != nil {
			return
		}
		m.log.Warn("controller restarting", "controller", name, "err", err, "after", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
	}
}

// nextBackoff is the wait before restarting a controller whose run lasted
// ran, prev being the wait before that run.
func nextBackoff(prev, ran time.Duration) time.Duration {
	const first, most, healthy = 100 * time.Millisecond, 5 * time.Second, time.Minute
	switch {
	case prev == 0 || ran >= healthy:
		return first
	case prev*2 > most:
		return most
	}
	return prev * 2
}

func (m *Manager) namespacesAPI() *registry.Resource { return m.api.MustLookup("", "v1", "namespaces") }

// namespaceController removes the contents of terminating namespaces and
// then the namespaces themselves.
func (m *Manager) namespaceController(ctx context.Context) error {
	rev, err := m.store.CurrentRev(ctx)
	if err != nil {
		return err
	}
	w, err := m.namespacesAPI().Watch(ctx, kv.WatchOptions{After: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	t := time.NewTicker(resyncInterval)
	defer t.Stop()
	pending, err := m.finalizeTerminating(ctx)
	if err != nil {
		return err
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
		case <-t.C:
			// The resync is for what a namespace waits on without an
			// event of its own (its objects' finalizers, their deletion):
			// with no namespace terminating, a namespace event wakes us.
			if !pending {
				continue
			}
		}
		if pending, err = m.finalizeTerminating(ctx); err != nil {
			return err
		}
	}
}

// storedNamespace is a namespace with the record it was read from.
type storedNamespace struct {
	*corev1.Namespace
	rec kv.Record
}

// namespaces reads every namespace, or those whose fields match sel.
func (m *Manager) namespaces(ctx context.Context, sel fields.Selector) ([]storedNamespace, error) {
	x := m.namespacesAPI()
	res, err := x.List(ctx, kv.ListOptions{Pred: kv.Predicate{Field: sel}})
	if err != nil {
		return nil, err
	}
	out := make([]storedNamespace, 0, len(res.Items))
	for _, rec := range res.Items {
		obj, err := x.Decode(rec)
		if err != nil {
			return nil, err
		}
		out = append(out, storedNamespace{obj.(*corev1.Namespace), rec})
	}
	return out, nil
}

// finalizeTerminating empties and removes the terminating namespaces it
// can; pending says whether any is still terminating after the pass.
func (m *Manager) finalizeTerminating(ctx context.Context) (pending bool, err error) {
	// Only terminating namespaces, through the field index: this runs on
	// every namespace event and every resync while one is pending.
	all, err := m.namespaces(ctx, fields.OneTermEqualSelector("status.phase", string(corev1.NamespaceTerminating)))
	if err != nil {
		return true, err
	}
	for _, sn := range all {
		ns := sn.Namespace
		if ns.DeletionTimestamp == nil {
			continue
		}
		pending = true
		if time.Since(ns.DeletionTimestamp.Time) < m.cfg.NamespaceDeletionGrace {
			continue // a resync comes back to it
		}
		// A namespace whose content cannot all be deleted says so in its
		// conditions and waits for the next resync, alone: as in kube's
		// controller, where each namespace is its own work item.
		left := m.deleteNamespaceContents(ctx, ns.Name)
		if m.staleAggregated != nil {
			// As kube's controller, which reads the resources to delete
			// from discovery: a group-version it cannot describe (an
			// unavailable aggregated API) may hold content in the
			// namespace, so the namespace waits for it, saying so.
			left.undiscovered = m.staleAggregated()
		}
		if !left.empty() || len(left.failures) > 0 || len(left.undiscovered) > 0 {
			if err := m.setTerminatingConditions(ctx, ns, left); err != nil {
				return true, err
			}
			continue
		}
		if !onlyKubernetesFinalizer(ns) {
			// kube's controller finishes its own part anyway: the
			// conditions say the content is gone and "kubernetes" leaves
			// spec.finalizers. The namespace stays until the other
			// finalizers' owners remove theirs (the last removal deletes it).
			if err := m.finalizeOwnPart(ctx, ns, left); err != nil {
				return true, err
			}
			continue
		}
		removed, err := m.namespacesAPI().Remove(ctx, sn.rec)
		if err != nil {
			return true, err
		}
		if removed && slices.Contains(systemNamespaces, ns.Name) {
			// kube-apiserver's system namespaces controller recreates a
			// deleted kube-node-lease (the others may not be deleted).
			fresh := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns.Name}}
			if _, err := m.namespacesAPI().Create(ctx, "", fresh, registry.WriteOptions{Manager: registry.ManagerAPIServer}); err != nil && !apierrors.IsAlreadyExists(err) {
				return true, err
			}
		}
	}
	// A namespace removed in this pass still counts: the next resync
	// finds none and stops resyncing.
	return pending, nil
}

// finalizeOwnPart writes a namespace's emptied conditions and takes the
// controller's finalizer off its spec.
func (m *Manager) finalizeOwnPart(ctx context.Context, ns *corev1.Namespace, left remaining) error {
	if err := m.setTerminatingConditions(ctx, ns, left); err != nil {
		return err
	}
	if !slices.Contains(ns.Spec.Finalizers, corev1.FinalizerKubernetes) {
		return nil
	}
	return m.mutateMeta(ctx, m.namespacesAPI(), "", ns.Name, "finalize", func(acc metav1.Object) bool {
		cur, ok := acc.(*corev1.Namespace)
		if !ok || cur.UID != ns.UID || !slices.Contains(cur.Spec.Finalizers, corev1.FinalizerKubernetes) {
			return false
		}
		cur.Spec.Finalizers = slices.DeleteFunc(slices.Clone(cur.Spec.Finalizers), func(f corev1.FinalizerName) bool { return f == corev1.FinalizerKubernetes })
		return true
	})
}

// onlyKubernetesFinalizer: nothing but the namespace controller's own
// finalizer holds the namespace (other spec or metadata finalizers must
// be removed by whoever added them first).
func onlyKubernetesFinalizer(ns *corev1.Namespace) bool {
	for _, f := range ns.Spec.Finalizers {
		if f != corev1.FinalizerKubernetes {
			return false
		}
	}
	return len(ns.Finalizers) == 0
}

// remaining is what a terminating namespace still holds.
type remaining struct {
	resources  map[string]int // "configmaps." → count, kube's "resource.group"
	finalizers map[string]int // finalizer → objects holding it
	// failures are the deletes that failed, a kind's first each (its
	// remaining objects are not counted, as kube does not count them).
	failures []string
	// undiscovered are the group-versions discovery could not describe.
	undiscovered []string
	// podsFirst: Pods remain, so nothing else was deleted yet (kube's
	// OrderedNamespaceDeletion: a Pod's Secrets and ConfigMaps outlive
	// it), and the conditions, as kube's early return writes them, say
	// nothing of what remains.
	podsFirst bool
}

func (r remaining) empty() bool { return len(r.resources) == 0 }

// deleteWorkers is how many deletes of one namespace's contents run at
// once: concurrent deletes share the store's group commit, where one at a
// time would pay a transaction each.
const deleteWorkers = 16

// deleteNamespaceContents deletes every object in a namespace, Pods
// before everything else, and reports what is left (objects with
// finalizers stay until those are removed) and what could not be deleted.
func (m *Manager) deleteNamespaceContents(ctx context.Context, namespace string) remaining {
	left := remaining{resources: map[string]int{}, finalizers: map[string]int{}}
	var kinds []*schema.Type
	for _, t := range m.storageTypes() {
		if !t.Namespaced {
			continue
		}
		if t.Group == "" && t.Resource == "pods" {
			if m.deleteKindIn(ctx, t, namespace, &left); left.resources["pods."] > 0 {
				left.podsFirst = true
				return left
			}
			continue
		}
		kinds = append(kinds, t)
	}
	for _, t := range kinds {
		m.deleteKindIn(ctx, t, namespace, &left)
	}
	return left
}

// deleteKindIn deletes a namespace's objects of one kind, adding what
// stays, or the first failure, to left.
func (m *Manager) deleteKindIn(ctx context.Context, t *schema.Type, namespace string, left *remaining) {
	var mu sync.Mutex
	count := 0
	finalizers := map[string]int{}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(deleteWorkers)
	background := metav1.DeletePropagationBackground
	// kube's namespace controller deletes a kind's collection where the
	// kind has one, so admission sees a deletecollection's item.
	del := m.api.For(t).Delete
	if slices.Contains(t.Verbs, "deletecollection") {
		del = m.api.For(t).DeleteFromCollection
	}
	err := m.eachStored(gctx, kv.ListOptions{Resource: t.StorageResource, Namespace: namespace}, func(item kv.Record) error {
		g.Go(func() error {
			// In the background, as kube's namespace controller deletes:
			// nothing is orphaned, whatever the kind's default.
			res, err := del(gctx, namespace, item.Name, &metav1.DeleteOptions{PropagationPolicy: &background})
			if apierrors.IsNotFound(err) || (err == nil && res.Gone) {
				return nil
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			count++
			if acc, err := meta.Accessor(res.Obj); err == nil {
				for _, f := range acc.GetFinalizers() {
					finalizers[f]++
				}
			}
			return nil
		})
		return nil
	})
	if werr := g.Wait(); werr != nil {
		err = werr // the delete's own error, not the listing's cancelled context
	}
	if err != nil {
		left.failures = append(left.failures, err.Error())
		return
	}
	if count > 0 {
		left.resources[t.Resource+"."+t.Group] += count
	}
	for f, n := range finalizers {
		left.finalizers[f] += n
	}
}

// setTerminatingConditions reports deletion progress in the namespace's
// status, with kube-controller-manager's condition types and wording: all
// five, each either its problem or its all-clear, a condition's
// transition time moving only when its status does.
func (m *Manager) setTerminatingConditions(ctx context.Context, ns *corev1.Namespace, left remaining) error {
	describe := func(m map[string]int, join string) string {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		parts := make([]string, 0, len(keys))
		for _, k := range keys {
			parts = append(parts, fmt.Sprintf("%s %s %d resource instances", k, join, m[k]))
		}
		return strings.Join(parts, ", ")
	}
	want := []corev1.NamespaceCondition{
		{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered", Message: "All resources successfully discovered"},
		{Type: corev1.NamespaceDeletionGVParsingFailure, Status: corev1.ConditionFalse, Reason: "ParsedGroupVersions", Message: "All legacy kube types successfully parsed"},
		{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted", Message: "All content successfully deleted, may be waiting on finalization"},
		{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionFalse, Reason: "ContentRemoved", Message: "All content successfully removed"},
		{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionFalse, Reason: "ContentHasNoFinalizers", Message: "All content-preserving finalizers finished"},
	}
	if len(left.undiscovered) > 0 {
		// client-go's ErrGroupDiscoveryFailed for aggregated discovery's
		// Stale versions, in kube's condition.
		failing := make([]string, 0, len(left.undiscovered))
		for _, gv := range left.undiscovered {
			failing = append(failing, gv+": stale GroupVersion discovery: "+gv)
		}
		slices.Sort(failing)
		want[0] = corev1.NamespaceCondition{Type: corev1.NamespaceDeletionDiscoveryFailure, Status: corev1.ConditionTrue, Reason: "DiscoveryFailed",
			Message: fmt.Sprintf("Discovery failed for some groups, %d failing: unable to retrieve the complete list of server APIs: %s", len(failing), strings.Join(failing, ", "))}
	}
	if len(left.failures) > 0 {
		msgs := slices.Sorted(slices.Values(left.failures))
		want[2] = corev1.NamespaceCondition{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionTrue, Reason: "ContentDeletionFailed",
			Message: fmt.Sprintf("Failed to delete all resource types, %d remaining: %s", len(msgs), strings.Join(msgs, ", "))}
	}
	// kube's early return while Pods remain reports none of what is left.
	if len(left.resources) > 0 && !left.podsFirst {
		want[3] = corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue,
			Reason: "SomeResourcesRemain", Message: "Some resources are remaining: " + describe(left.resources, "has")}
	}
	if len(left.finalizers) > 0 && !left.podsFirst {
		want[4] = corev1.NamespaceCondition{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue,
			Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: " + describe(left.finalizers, "in")}
	}
	// merged is conds with want applied as kube's updateConditions
	// applies it; changed says whether anything moved.
	merge := func(conds []corev1.NamespaceCondition) (merged []corev1.NamespaceCondition, changed bool) {
		merged = slices.Clone(conds)
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		for _, w := range want {
			i := slices.IndexFunc(merged, func(c corev1.NamespaceCondition) bool { return c.Type == w.Type })
			switch {
			case i < 0:
				w.LastTransitionTime = now
				merged, changed = append(merged, w), true
			case merged[i].Status != w.Status || merged[i].Reason != w.Reason || merged[i].Message != w.Message:
				if merged[i].Status != w.Status {
					merged[i].LastTransitionTime = now
				}
				merged[i].Status, merged[i].Reason, merged[i].Message = w.Status, w.Reason, w.Message
				changed = true
			}
		}
		return merged, changed
	}
	if _, changed := merge(ns.Status.Conditions); !changed {
		return nil
	}
	return m.mutateMeta(ctx, m.namespacesAPI(), "", ns.Name, "status", func(acc metav1.Object) bool {
		cur, ok := acc.(*corev1.Namespace)
		if !ok || cur.UID != ns.UID {
			return false
		}
		merged, changed := merge(cur.Status.Conditions)
		cur.Status.Conditions = merged
		return changed
	})
}

// defaultsController keeps the default ServiceAccount and the
// kube-root-ca.crt ConfigMap in every active namespace.
func (m *Manager) defaultsController(ctx context.Context) error {
	rev, err := m.store.CurrentRev(ctx)
	if err != nil {
		return err
	}
	var watches []kv.Watcher
	for _, res := range []string{"namespaces", "configmaps", "serviceaccounts"} {
		w, err := m.store.Watch(ctx, kv.WatchOptions{Resource: res, After: rev})
		if err != nil {
			return err
		}
		defer w.Stop()
		watches = append(watches, w)
	}
	// Namespaces whose defaults a policy refused (a quota full, a
	// webhook) are tried again later, backing off, as kube's controllers
	// requeue them.
	retries := newDefaultsRetries()
	defer retries.timer.Stop()
	if err := m.ensureDefaults(ctx, retries); err != nil {
		return err
	}
	// Each event concerns one namespace: only that one is looked at, so a
	// burst of namespaces costs one check each, not a pass over all.
	for {
		var ns string
		select {
		case <-ctx.Done():
			return nil
		case <-retries.timer.C:
			for _, name := range retries.due() {
				if err := m.ensureNamespaceDefaultsNamed(ctx, name, retries); err != nil {
					return err
				}
			}
			retries.arm()
			continue
		case ev, ok := <-watches[0].Events():
			if !ok {
				return watches[0].Err()
			}
			ns = ev.Name
		case ev, ok := <-watches[1].Events():
			if !ok {
				return watches[1].Err()
			}
			if ev.Type != kv.Deleted || ev.Name != rootCAConfigMap {
				continue
			}
			ns = ev.Namespace
		case ev, ok := <-watches[2].Events():
			if !ok {
				return watches[2].Err()
			}
			if ev.Type != kv.Deleted || ev.Name != "default" {
				continue
			}
			ns = ev.Namespace
		}
		if err := m.ensureNamespaceDefaultsNamed(ctx, ns, retries); err != nil {
			return err
		}
	}
}

// ensureNamespaceDefaultsNamed reads namespace ns and puts its defaults.
func (m *Manager) ensureNamespaceDefaultsNamed(ctx context.Context, ns string, retries *defaultsRetries) error {
	rec, err := m.namespacesAPI().GetRecord(ctx, "", ns)
	if apierrors.IsNotFound(err) {
		return retries.after(ns, nil) // deleted meanwhile
	}
	if err != nil {
		return err
	}
	obj, err := m.namespacesAPI().Decode(rec)
	if err != nil {
		return err
	}
	return retries.after(ns, m.ensureNamespaceDefaults(ctx, obj.(*corev1.Namespace)))
}

// ensureDefaults puts the defaults in every active namespace.
func (m *Manager) ensureDefaults(ctx context.Context, retries *defaultsRetries) error {
	all, err := m.namespaces(ctx, nil)
	if err != nil {
		return err
	}
	for _, sn := range all {
		if err := retries.after(sn.Name, m.ensureNamespaceDefaults(ctx, sn.Namespace)); err != nil {
			return err
		}
	}
	return nil
}

// defaultsRetries are the namespaces whose defaults were refused, each
// with when to try again; the wait doubles from a second to five minutes.
type defaultsRetries struct {
	timer *time.Timer
	at    map[string]time.Time
	wait  map[string]time.Duration
}

func newDefaultsRetries() *defaultsRetries {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &defaultsRetries{timer: t, at: map[string]time.Time{}, wait: map[string]time.Duration{}}
}

// after takes the outcome of ns's defaults: a refusal is tried again
// later and is not the controller's error; success forgets ns.
func (r *defaultsRetries) after(ns string, err error) error {
	if !apierrors.IsForbidden(err) {
		delete(r.at, ns)
		delete(r.wait, ns)
		return err
	}
	w := min(max(2*r.wait[ns], time.Second), 5*time.Minute)
	r.wait[ns], r.at[ns] = w, time.Now().Add(w)
	r.arm()
	return nil
}

// due takes the namespaces whose time has come.
func (r *defaultsRetries) due() []string {
	var out []string
	now := time.Now()
	for ns, at := range r.at {
		if !at.After(now) {
			out = append(out, ns)
			delete(r.at, ns)
		}
	}
	return out
}

// arm sets the timer for the earliest retry.
func (r *defaultsRetries) arm() {
	r.timer.Stop()
	var first time.Time
	for _, at := range r.at {
		if first.IsZero() || at.Before(first) {
			first = at
		}
	}
	if !first.IsZero() {
		r.timer.Reset(time.Until(first))
	}
}

// ensureNamespaceDefaults puts the default ServiceAccount and the root CA
// ConfigMap in ns, unless it is terminating. Each is tried whatever
// became of the other (they are two controllers in kube); a refusal
// (Forbidden) is returned once both were tried.
func (m *Manager) ensureNamespaceDefaults(ctx context.Context, ns *corev1.Namespace) error {
	if ns.DeletionTimestamp != nil {
		return nil
	}
	var refused error
	outcome := func(err error) error {
		switch {
		case err == nil || ignorable(err):
			return nil
		case apierrors.IsForbidden(err):
			refused = err
			return nil
		}
		return err
	}
	sas := m.api.MustLookup("", "v1", "serviceaccounts")
	if _, err := sas.GetRecord(ctx, ns.Name, "default"); m.enabled(ServiceAccountController) && apierrors.IsNotFound(err) {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if _, err := sas.Create(ctx, ns.Name, sa, registry.WriteOptions{Manager: registry.ManagerControllerManager}); outcome(err) != nil {
			return err
		}
	}
	cms := m.api.MustLookup("", "v1", "configmaps")
	if _, err := cms.GetRecord(ctx, ns.Name, rootCAConfigMap); m.enabled(RootCACertificatePublisherController) && apierrors.IsNotFound(err) {
		cm := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: rootCAConfigMap, Annotations: map[string]string{
				"kubernetes.io/description": "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.",
			}},
			Data: map[string]string{"ca.crt": string(m.cfg.CABundle)},
		}
		if _, err := cms.Create(ctx, ns.Name, cm, registry.WriteOptions{Manager: registry.ManagerControllerManager}); outcome(err) != nil {
			return err
		}
	}
	return refused
}

// ignorable: a concurrent writer (another replica) won, or the namespace
// went meanwhile. (A refusal, Forbidden, is tried again: see
// defaultsRetries; one for a namespace now terminating ends there.)
func ignorable(err error) bool {
	return apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err)
}

// expiryInterval is how often expired Events are looked for.
const expiryInterval = 30 * time.Second

// expiryController deletes core Events whose TTL has passed, as etcd
// leases do for kube-apiserver. The store finds them by an indexed query.
func (m *Manager) expiryController(ctx context.Context) error {
	t := time.NewTicker(expiryInterval)
	defer t.Stop()
	for {
		if err := m.expireOnce(ctx, time.Now()); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (m *Manager) expireOnce(ctx context.Context, now time.Time) error {
	for _, t := range m.storageTypes() {
		if t.Expiring {
			if err := m.expire(ctx, m.api.For(t), now); err != nil {
				return err
			}
		}
	}
	return nil
}

func (m *Manager) expire(ctx context.Context, x *registry.Resource, now time.Time) error {
	for {
		recs, err := m.store.Expired(ctx, x.Type().StorageResource, now, 500)
		if err != nil {
			return err
		}
		for _, rec := range recs {
			if _, err := x.Remove(ctx, rec); err != nil {
				return err
			}
		}
		if len(recs) < 500 {
			return nil
		}
	}
}

// serviceRepairInterval is how often leaked or missing cluster IP and node
// port claims are repaired (kube-apiserver: every 3 minutes).
const serviceRepairInterval = time.Minute

// serviceRepairController repairs the Service allocations; a claim must
// be one interval old before it counts as leaked.
func (m *Manager) serviceRepairController(ctx context.Context) error {
	t := time.NewTicker(serviceRepairInterval)
	defer t.Stop()
	for {
		if err := m.api.RepairServiceAllocations(ctx, serviceRepairInterval); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
