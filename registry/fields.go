package registry

import (
	"context"
	"fmt"
	"net/http"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/apply"
	"github.com/tabula-dev/tabula/schema"
)

// Field managers of the server's own writes, named as kube-apiserver's
// managedFields name them: what kube-apiserver writes itself, and what
// kube-controller-manager's controllers write (Tabula runs those in
// process).
const (
	ManagerAPIServer         = "kube-apiserver"
	ManagerControllerManager = "kube-controller-manager"
)

// fieldManager returns the field manager of writes through subresource,
// or nil for kinds without field management.
func (x *Resource) fieldManager(subresource string) (*apply.Manager, error) {
	if x.t.ManagedFields == nil {
		return nil, nil
	}
	return x.g.fieldManagerOf(x.t, subresource)
}

// fieldManagerOf is t's field manager through subresource, made once per
// kind and subresource and shared, as kube-apiserver makes one per
// storage: building kube's manager chain was about a twentieth of a
// create. A kind whose Type is replaced (a CRD's new schema) gets a new
// one in its place, so the map holds one entry per kind and subresource,
// not one per schema ever served.
func (g *Registry) fieldManagerOf(t *schema.Type, subresource string) (*apply.Manager, error) {
	key := fieldManagerKey{t.GroupVersionKind(), subresource}
	if v, ok := g.fieldManagers.Load(key); ok {
		if c := v.(cachedFieldManager); c.t == t {
			return c.m, nil
		}
	}
	m, err := apply.NewManager(t, subresource)
	if err != nil {
		return nil, err
	}
	g.fieldManagers.Store(key, cachedFieldManager{t, m})
	return m, nil
}

// WrittenFields are the managedFields kube's create handler gives obj, an
// object of kind t written through subresource and never stored (a
// TokenRequest): what manager set in it.
func (g *Registry) WrittenFields(t *schema.Type, subresource string, obj runtime.Object, manager string) ([]metav1.ManagedFieldsEntry, error) {
	m, err := g.fieldManagerOf(t, subresource)
	if err != nil {
		return nil, err
	}
	tracked := m.Update(m.Empty(), obj.DeepCopyObject(), manager)
	return mustAccessor(tracked).GetManagedFields(), nil
}

type fieldManagerKey struct {
	gvk         runtimeschema.GroupVersionKind
	subresource string
}

type cachedFieldManager struct {
	t *schema.Type
	m *apply.Manager
}

// trackFields records in obj's managedFields what the write changes from
// live (nil for a create).
func (x *Resource) trackFields(live, obj runtime.Object, opts WriteOptions, subresource string) (runtime.Object, error) {
	if opts.fieldsTracked {
		return obj, nil
	}
	fm, err := x.fieldManager(subresource)
	if err != nil || fm == nil {
		return obj, err
	}
	if live == nil {
		live = fm.Empty()
	}
	return fm.Update(live, obj, opts.Manager), nil
}

// fieldsMade says a write's managedFields are a field manager's own
// (trackFields made them, or an apply did): valid as written.
func (x *Resource) fieldsMade(opts WriteOptions) bool {
	return opts.fieldsTracked || x.t.ManagedFields != nil
}

// dropManagedFields prepares the retry of a write the store refused as
// too large: without the object's managedFields (which can be large) and
// without tracking, as kube-apiserver's create, update and non-apply
// patch handlers retry. It reports whether a retry is worth it.
func dropManagedFields(err error, obj runtime.Object, opts WriteOptions) bool {
	if opts.fieldsTracked || !apierrors.IsRequestEntityTooLargeError(err) {
		return false
	}
	acc := mustAccessor(obj)
	if len(acc.GetManagedFields()) == 0 {
		return false
	}
	acc.SetManagedFields(nil)
	return true
}

// ApplyOptions are a Server-Side Apply's options.
type ApplyOptions struct {
	WriteOptions
	// Subresource is "" or "status".
	Subresource string
	// Force takes over fields other managers own.
	Force bool
	// FieldValidation judges duplicate fields: Strict, Warn or Ignore.
	FieldValidation string
	// AuthorizeCreate, when set, is asked before the apply creates the
	// object (see UpdateOptions).
	AuthorizeCreate func(context.Context) error
}

// Apply merges an applied configuration (YAML or JSON) into the named
// object as opts.Manager, creating the object when it does not exist
// (only through the main resource). created reports a create.
func (x *Resource) Apply(ctx context.Context, namespace, name string, patch []byte, opts ApplyOptions) (res Result, created bool, err error) {
	fm, err := x.fieldManager(opts.Subresource)
	if err != nil {
		return Result{}, false, err
	}
	if fm == nil {
		return Result{}, false, unsupportedApply(x.t)
	}
	var warnings []string
	mutate := func(cur runtime.Object) (runtime.Object, error) {
		live := cur
		if live == nil {
			live = fm.Empty()
		}
		applied, err := fm.Apply(live, patch, opts.Manager, opts.Force, opts.FieldValidation)
		if err != nil {
			return nil, err
		}
		warnings = applied.Warnings
		// kube-apiserver's patch handler: a configuration naming a uid
		// creates nothing, and the result must carry the URL's name.
		if uid := mustAccessor(applied.Obj).GetUID(); cur == nil && uid != "" {
			return nil, apierrors.NewConflict(x.t.GroupResource(), name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", uid))
		}
		if err := CheckName(applied.Obj, namespace, name); err != nil {
			return nil, err
		}
		if !applied.Conditional {
			// An apply without a resourceVersion applies to whatever is
			// current: the update retries on conflict instead of failing.
			mustAccessor(applied.Obj).SetResourceVersion("")
		}
		return applied.Obj, nil
	}
	wo := opts.WriteOptions
	wo.fieldsTracked = true
	res, created, err = x.Update(ctx, namespace, name, mutate, UpdateOptions{
		WriteOptions:    wo,
		Subresource:     opts.Subresource,
		createByApply:   opts.Subresource == "",
		AuthorizeCreate: opts.AuthorizeCreate,
	})
	res.Warnings = append(warnings, res.Warnings...)
	return res, created, err
}

// unsupportedApply is the 415 for a kind without field management.
func unsupportedApply(t *schema.Type) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "apply is not supported for " + t.GroupResource().String(), Details: &metav1.StatusDetails{},
	}}
}
