package registry

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"k8s.io/apiserver/pkg/admission"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Storage is the event log as the registry uses it.
type Storage interface {
	Get(ctx context.Context, key kv.Key) (kv.Record, error)
	List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error)
	Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error)
	Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error)
	Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error)
	Watch(ctx context.Context, opts kv.WatchOptions) (kv.Watcher, error)
	RefreshFields(ctx context.Context, resource string, stale func(stored map[string]string) bool,
		fields func(kv.Record) (map[string]string, error)) (int, error)
}

// Observer hears of every committed change, with the Type the object is
// stored as: the garbage collector finds its work this way.
type Observer interface {
	// Written: obj was created (old is nil) or updated.
	Written(t *schema.Type, obj, old metav1.Object)
	// Deleted: obj is gone.
	Deleted(t *schema.Type, obj metav1.Object)
	// Deleting: obj began a delete that waits for the garbage collector
	// (an orphan or foreground finalizer).
	Deleting(t *schema.Type, obj metav1.Object)
}

// Config wires a Registry.
type Config struct {
	Store Storage
	Types *schema.Registry
	// EventTTL is how long objects of Expiring types live.
	EventTTL time.Duration
	// Observer may be nil.
	Observer Observer
	// Services are the pools Services allocate cluster IPs and node ports
	// from; nil leaves Services as written (no allocation).
	Services *ServiceRanges
	// Admission chooses the admission plugins.
	Admission AdmissionConfig
}

// Registry serves the objects of every registered Type.
type Registry struct {
	store    cachedStore
	types    *schema.Registry
	eventTTL time.Duration
	observer Observer
	// namespaces is the NamespaceLifecycle admission's view (nil without
	// namespaces).
	namespaces *Cache
	// hooks are the storage hooks of the kinds that have them.
	hooks map[*schema.Type]storageHooks
	// fieldManagers keeps each kind's field managers, by kind and
	// subresource (fields.go).
	fieldManagers sync.Map
	// caches are the watch-fed caches, by storage resource.
	cachesMu sync.Mutex
	caches   map[string]*Cache
	// cachesCtx and cachesRun start a cache made after RunCaches.
	cachesCtx context.Context
	cachesRun func(ctx context.Context, name string, fn func(context.Context) error)
	rbac      rbacState
	nodes     nodeGraphState
	// admission is the admission plugin chain (admission.go), from
	// admissionCfg; admissionOn names the plugins that run.
	admission    admission.Interface
	admissionCfg AdmissionConfig
	admissionOn  map[string]bool
	// quotaConfigured: the ResourceQuota plugin has a configuration
	// (admission_idle.go).
	quotaConfigured bool
	// mutators are the caches of what configures mutation beyond kube's
	// built-in plugins (mutating webhook configurations, mutating policy
	// bindings), those whose plugins run.
	mutators []*Cache
	// webhooks are kube's webhook plugins, made on first use.
	webhooks []*lazyWebhook
	// converters make custom resource converters (conversion.go).
	converters converterFactory
	// written holds this replica's last writes, where updates start.
	written written
}

// New returns a Registry; its caches fill once RunCaches runs (until then
// every create reads its namespace). Its error is the admission
// configuration's.
func New(cfg Config) (*Registry, error) {
	g := &Registry{types: cfg.Types, eventTTL: cfg.EventTTL, observer: cfg.Observer, caches: map[string]*Cache{},
		admissionCfg: cfg.Admission}
	g.store = cachedStore{Storage: cfg.Store, g: g}
	if g.observer == nil {
		g.observer = nopObserver{}
	}
	if _, ok := cfg.Types.Lookup("", "v1", "namespaces"); ok {
		g.namespaces = g.Cache("", "v1", "namespaces", true)
	}
	g.hooks = map[*schema.Type]storageHooks{}
	// Services claim from pools, as kube-apiserver's Service storage does.
	if svc, ok := cfg.Types.Lookup("", "v1", "services"); ok && cfg.Services != nil {
		g.hooks[svc] = newServiceAllocator(g, *cfg.Services)
	}
	// RBAC objects grant only what their writer holds, as kube's RBAC
	// storage checks.
	if _, ok := cfg.Types.Lookup(rbacGroup, "v1", "roles"); ok {
		g.RBAC()
		for _, r := range []string{"roles", "clusterroles", "rolebindings", "clusterrolebindings"} {
			t, _ := cfg.Types.Lookup(rbacGroup, "v1", r)
			g.hooks[t] = rbacEscalation{g: g, resource: r}
		}
	}
	// Admission policies and bindings name only parameters their writer
	// may read, as kube's storage checks.
	for _, r := range []struct{ version, resource string }{
		{"v1", "validatingadmissionpolicies"}, {"v1", "validatingadmissionpolicybindings"},
		{"v1beta1", "mutatingadmissionpolicies"}, {"v1beta1", "mutatingadmissionpolicybindings"},
	} {
		if t, ok := cfg.Types.Lookup("admissionregistration.k8s.io", r.version, r.resource); ok {
			g.hooks[t] = paramAuthorization{g: g}
		}
	}
	// Claims ask for admin access to devices only in namespaces labelled
	// for it, as kube's storage checks.
	for _, r := range []string{"resourceclaims", "resourceclaimtemplates"} {
		if t, ok := cfg.Types.Lookup("resource.k8s.io", "v1", r); ok {
			g.hooks[t] = draAdminAccess{g: g}
		}
	}
	// kube's admission plugins, over the built-in kinds they read.
	if admissionReadsServed(cfg.Types) {
		a, err := newAdmission(g, cfg.Admission)
		if err != nil {
			return nil, err
		}
		// As kube's handlers wrap their admission: managedFields a
		// mutating plugin or webhook leaves invalid are put back as they
		// were, with a warning, instead of failing the write.
		g.admission = fieldsGuard{wrap: a}
	}
	return g, nil
}

type nopObserver struct{}

func (nopObserver) Written(*schema.Type, metav1.Object, metav1.Object) {}
func (nopObserver) Deleted(*schema.Type, metav1.Object)                {}
func (nopObserver) Deleting(*schema.Type, metav1.Object)               {}

// Resource is the registry for one served Type.
type Resource struct {
	g *Registry
	t *schema.Type
	// st is the Type whose Go type the stored bytes decode into.
	st *schema.Type
	// hooks may be nil.
	hooks storageHooks
}

// For returns the registry for t.
func (g *Registry) For(t *schema.Type) *Resource {
	return &Resource{g: g, t: t, st: g.storageType(t), hooks: g.hooks[t]}
}

// Lookup returns the registry for a served group/version/resource.
func (g *Registry) Lookup(group, version, resource string) (*Resource, bool) {
	t, ok := g.types.Lookup(group, version, resource)
	if !ok {
		return nil, false
	}
	return g.For(t), true
}

// MustLookup is Lookup for the built-in kinds the server's own
// controllers write; a missing one is a programming error.
func (g *Registry) MustLookup(group, version, resource string) *Resource {
	x, ok := g.Lookup(group, version, resource)
	if !ok {
		panic("registry: built-in type missing: " + group + "/" + version + "/" + resource)
	}
	return x
}

func (g *Registry) storageType(t *schema.Type) *schema.Type {
	if t.FromStorage == nil {
		return t
	}
	for _, o := range g.types.ByStorage(t.StorageResource) {
		if o.FromStorage == nil {
			return o
		}
	}
	return t
}

// Type is the served Type.
func (x *Resource) Type() *schema.Type { return x.t }

// StorageType is the Type the stored bytes decode into (for example core
// Events for events.k8s.io Events).
func (x *Resource) StorageType() *schema.Type { return x.st }

// Key names one object in the store.
func (x *Resource) Key(namespace, name string) kv.Key {
	if !x.t.Namespaced {
		namespace = ""
	}
	return kv.Key{Resource: x.t.StorageResource, Namespace: namespace, Name: name}
}

// Decode turns stored bytes into an object of the served Type.
func (x *Resource) Decode(rec kv.Record) (runtime.Object, error) {
	gvk := x.st.GroupVersionKind()
	if x.t.StoresVersion {
		// Bytes that name no version (stored before versions were kept)
		// are in the storage version, whichever version reads them.
		gvk.Version = x.t.StorageVersion
	}
	obj, err := codecs.FromStorage(x.st.New, gvk, rec.Value)
	if err != nil {
		return nil, err
	}
	if x.t.FromStorage != nil {
		if obj, err = x.t.FromStorage(obj); err != nil {
			return nil, err
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(x.t.GroupVersionKind())
	return obj, nil
}

// Encode is the stored form of an object of the served Type.
func (x *Resource) Encode(obj runtime.Object) ([]byte, error) {
	if x.t.ToStorage != nil {
		var err error
		if obj, err = x.t.ToStorage(obj); err != nil {
			return nil, err
		}
	}
	b, err := codecs.StorageBytes(obj)
	if err != nil || !x.t.StoresVersion {
		return b, err
	}
	return codecs.WithStoredVersion(b, x.t.Group+"/"+x.t.StorageVersion), nil
}

// GetRecord reads one stored object; 404 when it does not exist.
func (x *Resource) GetRecord(ctx context.Context, namespace, name string) (kv.Record, error) {
	rec, err := x.g.store.Get(ctx, x.Key(namespace, name))
	return rec, x.storeError(err, name)
}

// knownGetter is a Storage that can leave out the value of a revision its
// caller holds an encoding of (sqlstore's GetKnown).
type knownGetter interface {
	GetKnown(ctx context.Context, key kv.Key, known func(rev int64) bool) (kv.Record, bool, error)
}

// GetRecordKnown is GetRecord for a caller holding encodings of some
// revisions: known is asked with the live revision, and when it says the
// caller has what it needs, the record carries the revision alone and
// skipped is true (the store read none of the object). A store that
// cannot tell returns the whole record.
func (x *Resource) GetRecordKnown(ctx context.Context, namespace, name string, known func(rev int64) bool) (kv.Record, bool, error) {
	rec, skipped, err := x.g.store.GetKnown(ctx, x.Key(namespace, name), known)
	return rec, skipped, x.storeError(err, name)
}

// Get reads and decodes one object; 404 when it does not exist.
func (x *Resource) Get(ctx context.Context, namespace, name string) (runtime.Object, kv.Record, error) {
	rec, err := x.GetRecord(ctx, namespace, name)
	if err != nil {
		return nil, rec, err
	}
	obj, err := x.Decode(rec)
	return obj, rec, err
}

// List lists stored objects of this Type; opts.Resource is filled in.
func (x *Resource) List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error) {
	opts.Resource = x.t.StorageResource
	if !x.t.Namespaced {
		opts.Namespace = ""
	}
	return x.g.store.List(ctx, opts)
}

// Watch watches stored objects of this Type; opts.Resource is filled in.
func (x *Resource) Watch(ctx context.Context, opts kv.WatchOptions) (kv.Watcher, error) {
	opts.Resource = x.t.StorageResource
	return x.g.store.Watch(ctx, opts)
}

// NotFound is the 404 for a missing object of this Type.
func (x *Resource) NotFound(name string) error {
	return apierrors.NewNotFound(x.t.GroupResource(), name)
}

// storeError translates store errors into Status errors for one object.
func (x *Resource) storeError(err error, name string) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrNotFound):
		return x.NotFound(name)
	case errors.Is(err, kv.ErrExists):
		return apierrors.NewAlreadyExists(x.t.GroupResource(), name)
	case errors.Is(err, kv.ErrConflict):
		return conflict(x.t, name)
	case errors.Is(err, kv.ErrInvalidKey):
		// kube stores such a name; this database cannot (PostgreSQL's
		// text holds no NUL), so it is refused before anything is written.
		return apierrors.NewInvalid(x.t.GroupVersionKind().GroupKind(), name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), name, "may not contain a NUL character: this server's database cannot store one")})
	}
	return err
}

func conflict(t *schema.Type, name string) error {
	return apierrors.NewConflict(t.GroupResource(), name,
		fmt.Errorf("the object has been modified; please apply your changes to the latest version and try again"))
}

func isNotFound(err error) bool { return errors.Is(err, kv.ErrNotFound) }
func isExists(err error) bool   { return errors.Is(err, kv.ErrExists) }

func ignoreNotFound(err error) error {
	if isNotFound(err) {
		return nil
	}
	return err
}
