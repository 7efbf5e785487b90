package controllers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The CRD controller does what kube-apiserver's naming, establishing and
// finalizing controllers do, and what its CRD handler does on each
// request: it accepts a CRD's names unless another CRD of the group holds
// them, serves its resource (schema.CustomResourceTypes registered in the
// server's types, so handlers, discovery and the other controllers see
// it), marks it Established, and on delete removes its objects before
// letting the CRD go. Every replica runs it and serves what it sees; the
// status writes agree, so replicas racing on them only retry.

// crdResync bounds how long a deleting CRD waits for its objects to be
// checked again when no event arrives (objects held by finalizers).
const crdResync = 2 * time.Second

func (m *Manager) crdsAPI() *registry.Resource {
	return m.api.MustLookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
}

// servedCRD is what the controller last registered for one CRD.
type servedCRD struct {
	uid        string
	generation int64
	names      apiextensionsv1.CustomResourceDefinitionNames
	storage    string // the storage resource its types are under
}

// crdState is the controller's memory: the CRDs as last seen (names are
// accepted against the whole group) and what is served for each. The
// namer keeps names and conditions current at once; building a
// CRD's types (compiling its schema and rules, which takes long for large
// CRDs) happens apart, so a new CRD's status never waits behind another's
// build (kubectl wait reads the conditions right after a create).
type crdState struct {
	mu     sync.Mutex
	served map[string]servedCRD
	crds   map[string]*apiextensionsv1.CustomResourceDefinition
	// build is signalled when some CRD's types need building, names when
	// a CRD changed and apiServices when an automanaged APIService did.
	build, names, apiServices chan struct{}
	// loadedAt is the revision the last full load read from (changes after
	// it come from the watch); the controller takes it once.
	loadedAt int64
	// apiServicesSynced names the group-versions whose APIServices the
	// last sync made (crdapiservices.go; the naming pass's alone).
	apiServicesSynced string
}

func newCRDState() *crdState {
	return &crdState{served: map[string]servedCRD{}, crds: map[string]*apiextensionsv1.CustomResourceDefinition{}, build: make(chan struct{}, 1),
		names: make(chan struct{}, 1), apiServices: make(chan struct{}, 1), apiServicesSynced: "(none yet)"}
}

// loadCRDs serves the resources of every stored CRD once, before the
// server takes requests, so custom resources answer from the first one.
func (m *Manager) loadCRDs(ctx context.Context) error {
	rev, err := m.store.CurrentRev(ctx)
	if err != nil {
		return err
	}
	crds, err := m.listCRDs(ctx)
	if err != nil {
		return err
	}
	st := m.crds
	st.mu.Lock()
	st.loadedAt = rev
	st.crds = map[string]*apiextensionsv1.CustomResourceDefinition{}
	for _, crd := range crds {
		st.crds[crd.Name] = crd
	}
	st.mu.Unlock()
	m.buildPass(ctx)
	m.namePass(ctx)
	return nil
}

// remember keeps crd unless a newer version of it is known already (a
// status write is remembered before the watch brings it back).
func (st *crdState) remember(crd *apiextensionsv1.CustomResourceDefinition) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if known, ok := st.crds[crd.Name]; ok && known.UID == crd.UID && rvOf(known) > rvOf(crd) {
		return
	}
	st.crds[crd.Name] = crd
}

// rememberWritten is remember for a status write's result: it updates a
// CRD still known and never brings back one the watch has seen deleted
// while the write was under way (its names would stay taken).
func (st *crdState) rememberWritten(crd *apiextensionsv1.CustomResourceDefinition) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if known, ok := st.crds[crd.Name]; ok && known.UID == crd.UID && rvOf(known) <= rvOf(crd) {
		st.crds[crd.Name] = crd
	}
}

func rvOf(crd *apiextensionsv1.CustomResourceDefinition) int64 {
	rv, _ := strconv.ParseInt(crd.ResourceVersion, 10, 64)
	return rv
}

func (st *crdState) all() []*apiextensionsv1.CustomResourceDefinition {
	st.mu.Lock()
	defer st.mu.Unlock()
	out := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(st.crds))
	for _, c := range st.crds {
		out = append(out, c)
	}
	return out
}

// deleting reports whether some CRD waits for its objects to go.
func (st *crdState) deleting() bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, c := range st.crds {
		if c.DeletionTimestamp != nil {
			return true
		}
	}
	return false
}

// servedAs reports whether crd's current generation is served under names.
// wasServed: crd (this one, not an earlier CRD of its name) is served.
func (st *crdState) wasServed(crd *apiextensionsv1.CustomResourceDefinition) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.served[crd.Name]
	return ok && s.uid == string(crd.UID)
}

func (st *crdState) servedAs(crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	s, ok := st.served[crd.Name]
	return ok && s.uid == string(crd.UID) && s.generation == crd.Generation && reflect.DeepEqual(s.names, names)
}

// crdController keeps the CRDs it has seen up to date from their watch:
// on each change the namer updates names and conditions and lets the
// builder serve what changed.
func (m *Manager) crdController(ctx context.Context) error {
	// The first run goes on from the load Run did before serving; a
	// restart loads again from a watch started first.
	m.crds.mu.Lock()
	rev := m.crds.loadedAt
	m.crds.loadedAt = 0
	m.crds.mu.Unlock()
	reload := rev == 0
	if reload {
		var err error
		if rev, err = m.store.CurrentRev(ctx); err != nil {
			return err
		}
	}
	x := m.crdsAPI()
	w, err := x.Watch(ctx, kv.WatchOptions{After: rev})
	if err != nil {
		return err
	}
	defer w.Stop()
	// The CRDs' APIServices are kept as kube's autoregister controller
	// keeps them: one deleted is made again, one edited is set back, a
	// stray one is removed, whenever an automanaged APIService changes.
	apiServices, err := m.automanagedAPIServiceEvents(ctx, rev)
	if err != nil {
		return err
	}
	if reload {
		if err := m.loadCRDs(ctx); err != nil {
			return err
		}
		m.crds.mu.Lock()
		m.crds.loadedAt = 0 // the watch covers what follows
		m.crds.mu.Unlock()
	}
	// The watch is only read here: names, conditions and APIServices are
	// written by the namer and types built by the builder, each one pass
	// per signal however many events came meanwhile. A reader that waits
	// on writes falls behind a burst of large CRDs (an operator's dozen at
	// a megabyte each) and has its watch closed as a slow consumer.
	bctx, stop := context.WithCancel(ctx)
	var workers sync.WaitGroup
	defer func() {
		stop()
		workers.Wait() // a restart's load must not race a pass still running
	}()
	workers.Add(2)
	go func() { defer workers.Done(); m.crdBuilder(bctx) }()
	go func() { defer workers.Done(); m.crdNamer(bctx) }()
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-w.Events():
			if !ok {
				return w.Err()
			}
			if ev.Type == kv.Deleted {
				m.crds.mu.Lock()
				delete(m.crds.crds, ev.Name)
				m.crds.mu.Unlock()
			} else if obj, err := x.Decode(ev.Record); err == nil {
				m.crds.remember(obj.(*apiextensionsv1.CustomResourceDefinition))
			}
			signal(m.crds.names)
		case _, ok := <-apiServices:
			if !ok {
				if ctx.Err() != nil {
					return nil
				}
				return errors.New("controllers: the APIServices' watch ended")
			}
			signal(m.crds.apiServices)
		}
	}
}

// signal wakes a worker waiting on c; a signal already pending covers
// this one too.
func signal(c chan struct{}) {
	select {
	case c <- struct{}{}:
	default:
	}
}

// crdNamer keeps names, conditions and the CRDs' APIServices current, one
// pass per signal; only while a CRD is being deleted does it look again on
// a timer (its objects' finalizers send no CRD event).
func (m *Manager) crdNamer(ctx context.Context) {
	t := time.NewTicker(crdResync)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.crds.names:
			// A change can free or take names other CRDs of the group
			// asked for, so all are looked at; unchanged ones cost a
			// comparison.
			m.namePass(ctx)
		case <-m.crds.apiServices:
			m.crds.apiServicesSynced = "(an APIService changed)"
			if err := m.syncCRDAPIServices(ctx, m.crds.all()); err != nil {
				m.log.Warn("custom resource APIServices not synced", "err", err)
			}
		case <-t.C:
			if m.crds.deleting() {
				m.namePass(ctx)
			}
		}
	}
}

// crdBuilder builds the types of CRDs that need them, one pass per signal.
func (m *Manager) crdBuilder(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-m.crds.build:
			m.buildPass(ctx)
		}
	}
}

func (m *Manager) listCRDs(ctx context.Context) ([]*apiextensionsv1.CustomResourceDefinition, error) {
	x := m.crdsAPI()
	var out []*apiextensionsv1.CustomResourceDefinition
	err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
		obj, err := x.Decode(rec)
		if err != nil {
			return err
		}
		out = append(out, obj.(*apiextensionsv1.CustomResourceDefinition))
		return nil
	})
	return out, err
}

// namePass brings every CRD's accepted names and conditions up to date,
// finishes deleting CRDs, stops serving the gone ones and signals the
// builder when some CRD's types are missing or stale.
func (m *Manager) namePass(ctx context.Context) {
	st := m.crds
	all := st.all()
	needBuild := false
	for i, crd := range all {
		if crd.DeletionTimestamp != nil {
			if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
				// Every replica stops creating its objects, as kube's
				// handler does once the condition is True.
				st.mu.Lock()
				served, ok := st.served[crd.Name]
				st.mu.Unlock()
				if ok {
					for _, t := range m.types.ByStorage(served.storage) {
						t.SetTerminating()
					}
				}
			}
			if err := m.finalizeCRD(ctx, crd); err != nil {
				m.log.Warn("custom resource definition not finalized", "crd", crd.Name, "err", err)
			}
			continue
		}
		if err := m.syncAPIApproval(ctx, crd); err != nil {
			m.log.Warn("custom resource definition's API approval condition not written", "crd", crd.Name, "err", err)
		}
		names, namesCond := acceptNames(crd, all)
		if (namesCond.Status == apiextensionsv1.ConditionTrue || st.wasServed(crd)) && !st.servedAs(crd, names) {
			needBuild = true
		}
		written, err := m.writeCRDStatus(ctx, crd, names, namesCond)
		if err != nil {
			m.log.Warn("custom resource definition status not written", "crd", crd.Name, "err", err)
		}
		if written != nil {
			// The names it holds now count for the CRDs after it in this
			// pass and the next, before the watch brings the write back
			// (kube's naming controller keeps a mutation cache).
			all[i] = written
			st.rememberWritten(written)
		}
	}
	st.mu.Lock()
	for name, s := range st.served {
		if _, ok := st.crds[name]; !ok {
			// Gone: its resource is no longer served.
			m.types.SetStorage(s.storage, nil)
			delete(st.served, name)
		}
	}
	st.mu.Unlock()
	if err := m.syncCRDAPIServices(ctx, all); err != nil {
		m.log.Warn("custom resource APIServices not synced", "err", err)
	}
	if needBuild {
		signal(st.build)
	}
}

// buildPass serves every CRD whose names are accepted and whose types are
// missing or stale, then marks it Established.
func (m *Manager) buildPass(ctx context.Context) {
	st := m.crds
	all := st.all()
	for _, crd := range all {
		if crd.DeletionTimestamp != nil {
			continue
		}
		names, namesCond := acceptNames(crd, all)
		// A CRD whose new names conflict stays served by the names it
		// holds, with its categories (always accepted) and spec brought
		// up to date, as kube's discovery and handlers read its accepted
		// names; one never served waits for names of its own.
		if namesCond.Status != apiextensionsv1.ConditionTrue && !st.wasServed(crd) || st.servedAs(crd, names) {
			continue
		}
		served := *crd // CustomResourceTypes keeps a deep copy of its own
		served.Status.AcceptedNames = names
		convert, err := m.api.CustomResourceConverter(&served)
		if err != nil {
			m.log.Warn("custom resource definition not served", "crd", crd.Name, "err", err)
			continue
		}
		types, err := schema.CustomResourceTypes(&served, convert)
		if err != nil {
			m.log.Warn("custom resource definition not served", "crd", crd.Name, "err", err)
			continue
		}
		storage := names.Plural + "." + crd.Spec.Group
		st.mu.Lock()
		if _, ok := st.crds[crd.Name]; !ok {
			st.mu.Unlock()
			continue // deleted while it was built
		}
		if prev, ok := st.served[crd.Name]; ok && prev.storage != storage {
			m.types.SetStorage(prev.storage, nil)
		}
		m.types.SetStorage(storage, types)
		st.served[crd.Name] = servedCRD{uid: string(crd.UID), generation: crd.Generation, names: names, storage: storage}
		st.mu.Unlock()
		// Objects stored before a selectable field was added lack its
		// value: each version brings the ones missing its fields up to
		// date, so its selectors find them (kube reads the fields at
		// list time).
		for _, t := range types {
			if len(t.FieldLabels) == 0 {
				continue
			}
			if _, err := m.api.For(t).RefreshFields(ctx); err != nil {
				m.log.Warn("custom resources' selectable fields not refreshed", "crd", crd.Name, "version", t.Version, "err", err)
			}
		}
		written, err := m.writeCRDStatus(ctx, crd, names, namesCond)
		if err != nil {
			m.log.Warn("custom resource definition status not written", "crd", crd.Name, "err", err)
		}
		if written != nil {
			st.rememberWritten(written)
		}
	}
}

// writeCRDStatus records names and conditions. Established is True once
// this replica serves the CRD's current generation (kube-apiserver's
// establishing controller marks it when its handler can serve); it is
// decided again on each attempt, so a write racing the builder's never
// takes an Established back.
func (m *Manager) writeCRDStatus(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition, names apiextensionsv1.CustomResourceDefinitionNames, namesCond apiextensionsv1.CustomResourceDefinitionCondition) (*apiextensionsv1.CustomResourceDefinition, error) {
	established := func(c *apiextensionsv1.CustomResourceDefinition) apiextensionsv1.CustomResourceDefinitionCondition {
		if namesCond.Status == apiextensionsv1.ConditionTrue && m.crds.servedAs(c, names) {
			return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
				Reason: "InitialNamesAccepted", Message: "the initial names have been accepted"}
		}
		if old := apihelpers.FindCRDCondition(c, apiextensionsv1.Established); old != nil && (old.Status == apiextensionsv1.ConditionTrue || namesCond.Status != apiextensionsv1.ConditionTrue) {
			return *old
		}
		if namesCond.Status == apiextensionsv1.ConditionTrue {
			return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
				Reason: "Installing", Message: "the initial names have been accepted"}
		}
		return apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
			Reason: "NotAccepted", Message: "not all names are accepted"}
	}
	if reflect.DeepEqual(crd.Status.AcceptedNames, names) && sameCondition(crd, namesCond) && sameCondition(crd, established(crd)) {
		return nil, nil
	}
	res, _, err := m.crdsAPI().Update(ctx, "", crd.Name, func(cur runtime.Object) (runtime.Object, error) {
		c, ok := cur.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || c.UID != crd.UID {
			return nil, registry.ErrNoChange
		}
		est := established(c)
		if reflect.DeepEqual(c.Status.AcceptedNames, names) && sameCondition(c, namesCond) && sameCondition(c, est) {
			return nil, registry.ErrNoChange
		}
		c.Status.AcceptedNames = names
		apihelpers.SetCRDCondition(c, namesCond)
		apihelpers.SetCRDCondition(c, est)
		c.ResourceVersion = "" // decided from cur: retried on conflict
		return c, nil
	}, registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	written, _ := res.Obj.(*apiextensionsv1.CustomResourceDefinition)
	return written, nil
}

// apiApproval is kube's KubernetesAPIApprovalPolicyConformant condition
// for a CRD of the community's protected groups (*.k8s.io,
// *.kubernetes.io), read from its api-approved.kubernetes.io annotation;
// nil for other groups.
func apiApproval(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinitionCondition {
	if !apihelpers.IsProtectedCommunityGroup(crd.Spec.Group) {
		return nil
	}
	c := &apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.KubernetesAPIApprovalPolicyConformant, Status: apiextensionsv1.ConditionFalse}
	var state apihelpers.APIApprovalState
	state, c.Message = apihelpers.GetAPIApprovalState(crd.Annotations)
	switch state {
	case apihelpers.APIApprovalInvalid:
		c.Reason = "InvalidAnnotation"
	case apihelpers.APIApprovalMissing:
		c.Reason = "MissingAnnotation"
	case apihelpers.APIApproved:
		c.Status, c.Reason = apiextensionsv1.ConditionTrue, "ApprovedAnnotation"
	case apihelpers.APIApprovalBypassed:
		c.Reason = "UnapprovedAnnotation"
	default:
		c.Status, c.Reason = apiextensionsv1.ConditionUnknown, "UnknownAnnotation"
	}
	return c
}

// syncAPIApproval keeps the API approval condition as kube's apiapproval
// controller does: on annotation changes too, which move no generation.
func (m *Manager) syncAPIApproval(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	want := apiApproval(crd)
	have := apihelpers.FindCRDCondition(crd, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
	if want == nil && have == nil || want != nil && sameCondition(crd, *want) {
		return nil
	}
	return m.mutateObject(ctx, m.crdsAPI(), crd.Name, "status", func(cur runtime.Object) bool {
		c, ok := cur.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || c.UID != crd.UID {
			return false
		}
		if want := apiApproval(c); want != nil {
			apihelpers.SetCRDCondition(c, *want)
		} else {
			apihelpers.RemoveCRDCondition(c, apiextensionsv1.KubernetesAPIApprovalPolicyConformant)
		}
		return true
	})
}

func sameCondition(crd *apiextensionsv1.CustomResourceDefinition, want apiextensionsv1.CustomResourceDefinitionCondition) bool {
	c := apihelpers.FindCRDCondition(crd, want.Type)
	return c != nil && c.Status == want.Status && c.Reason == want.Reason && c.Message == want.Message
}

// acceptNames decides which of crd's requested names it may have: those
// it holds already, and those no CRD of its group has accepted.
func acceptNames(crd *apiextensionsv1.CustomResourceDefinition, all []*apiextensionsv1.CustomResourceDefinition) (apiextensionsv1.CustomResourceDefinitionNames, apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := sets.New[string](), sets.New[string]()
	// Every CRD of the group counts, this one too, as in kube's naming
	// controller: a new short name may not be one of its own other names.
	for _, o := range all {
		if o.Spec.Group != crd.Spec.Group {
			continue
		}
		n := o.Status.AcceptedNames
		resources.Insert(n.Plural, n.Singular)
		resources.Insert(n.ShortNames...)
		kinds.Insert(n.Kind, n.ListKind)
	}
	want, have := crd.Spec.Names, crd.Status.AcceptedNames
	names := have
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue,
		Reason: "NoConflicts", Message: "no conflicts found"}
	// A name is free when the CRD holds it already or no other CRD of
	// the group does; kube-apiserver checks in this order and reports the
	// last conflict.
	free := func(name, held string, used sets.Set[string]) bool { return name == held || !used.Has(name) }
	accept := func(into *string, name, held string, used sets.Set[string], reason string) {
		if free(name, held, used) {
			*into = name
			return
		}
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, fmt.Sprintf("%q is already in use", name)
	}
	accept(&names.Plural, want.Plural, have.Plural, resources, "PluralConflict")
	accept(&names.Singular, want.Singular, have.Singular, resources, "SingularConflict")
	var taken []string
	for _, s := range want.ShortNames {
		if !free(s, "", resources) && !sets.New(have.ShortNames...).Has(s) {
			taken = append(taken, fmt.Sprintf("%q is already in use", s))
		}
	}
	if len(taken) == 0 {
		names.ShortNames = want.ShortNames
	} else {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, "ShortNamesConflict", strings.Join(taken, ", ")
		if len(taken) > 1 {
			cond.Message = "[" + cond.Message + "]"
		}
	}
	accept(&names.Kind, want.Kind, have.Kind, kinds, "KindConflict")
	accept(&names.ListKind, want.ListKind, have.ListKind, kinds, "ListKindConflict")
	names.Categories = want.Categories
	return names, cond
}

// deleteCustomResources deletes a CRD's objects and says how many are
// left (held by finalizers of their own).
func (m *Manager) deleteCustomResources(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) (int, error) {
	names := crd.Status.AcceptedNames
	if names.Plural == "" {
		return 0, nil
	}
	var x *registry.Resource
	for _, v := range crd.Spec.Versions {
		if r, ok := m.api.Lookup(crd.Spec.Group, v.Name, names.Plural); ok {
			x = r
			break
		}
	}
	if x == nil {
		return 0, nil
	}
	seen := 0
	err := m.eachStored(ctx, kv.ListOptions{Resource: x.Type().StorageResource}, func(rec kv.Record) error {
		seen++
		if _, err := x.Delete(ctx, rec.Namespace, rec.Name, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if err != nil || seen == 0 {
		return 0, err
	}
	// Check again: finalizers may still hold some.
	res, err := x.List(ctx, kv.ListOptions{Limit: 1})
	if err != nil {
		return 0, err
	}
	return len(res.Items), nil
}

// finalizeCRD removes a deleted CRD's objects, then its cleanup
// finalizer; objects still held by finalizers of their own keep it (and
// the resource served, so their controllers can let them go).
func (m *Manager) finalizeCRD(ctx context.Context, crd *apiextensionsv1.CustomResourceDefinition) error {
	if !apihelpers.CRDHasFinalizer(crd, apiextensionsv1.CustomResourceCleanupFinalizer) {
		return nil
	}
	// The Terminating condition follows kube-apiserver's finalizing
	// controller: in progress while objects go, then completed (or never
	// established) just before the finalizer is removed.
	terminating := func(status apiextensionsv1.ConditionStatus, reason, message string) error {
		want := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.Terminating, Status: status, Reason: reason, Message: message}
		if sameCondition(crd, want) {
			return nil
		}
		return m.mutateObject(ctx, m.crdsAPI(), crd.Name, "status", func(cur runtime.Object) bool {
			c, ok := cur.(*apiextensionsv1.CustomResourceDefinition)
			if !ok || c.UID != crd.UID {
				return false
			}
			apihelpers.SetCRDCondition(c, want)
			return true
		})
	}
	if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
		if err := terminating(apiextensionsv1.ConditionFalse, "NeverEstablished", "resource was never established"); err != nil {
			return err
		}
	} else {
		if err := terminating(apiextensionsv1.ConditionTrue, "InstanceDeletionInProgress", "CustomResource deletion is in progress"); err != nil {
			return err
		}
		remaining, err := m.deleteCustomResources(ctx, crd)
		if err != nil || remaining > 0 {
			return err // finalizers of their own hold some: look again later
		}
		if err := terminating(apiextensionsv1.ConditionFalse, "InstanceDeletionCompleted", "removed all instances"); err != nil {
			return err
		}
	}
	return m.mutateObject(ctx, m.crdsAPI(), crd.Name, "", func(cur runtime.Object) bool {
		c, ok := cur.(*apiextensionsv1.CustomResourceDefinition)
		if !ok || c.UID != crd.UID {
			return false
		}
		apihelpers.CRDRemoveFinalizer(c, apiextensionsv1.CustomResourceCleanupFinalizer)
		return true
	})
}
