package registry

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/api/validation/path"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/warning"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// WriteOptions are what every write takes besides the object.
type WriteOptions struct {
	// DryRun runs every step but the store write.
	DryRun bool
	// Manager names who writes, for managedFields: a request's
	// fieldManager or User-Agent product (possibly empty, as on
	// kube-apiserver), or ManagerAPIServer / ManagerControllerManager for
	// the server's own writes.
	Manager string
	// Sent are the request's own options as admission passes them on to
	// plugins and webhooks (zero for the server's own writes).
	Sent SentOptions
	// PreconditionUID, on an update, is the uid a PUT's body names: the
	// stored object must have it, as kube's store takes it for a
	// precondition and checks it before anything else.
	PreconditionUID types.UID
	// fieldsTracked: the write's managedFields are already done (an
	// apply computes them while it merges).
	fieldsTracked bool
}

// SentOptions are options as a client sent them: kube's handlers give
// admission the decoded request options, so a webhook sees no
// fieldManager where the client sent none (Manager may come from the
// User-Agent) and sees the fieldValidation asked.
type SentOptions struct {
	FieldManager, FieldValidation string
}

// Result is an object as a write left it: Rec is the stored record (zero
// for a dry run) and Obj the object, its resourceVersion set.
type Result struct {
	Rec kv.Record
	Obj runtime.Object
	// Warnings are what the Type's strategy says about the accepted write.
	Warnings []string
	// unchanged: nothing was written (the object was as asked).
	unchanged bool
	// Removed: the update took the last finalizer off an object being
	// deleted, which removed it. Rec is the deletion, holding the object
	// as it was last stored (what watchers see, as in kube); Obj is the
	// object as the writer made it, which kube answers the writer with.
	Removed bool
}

// Create stores a new object in namespace (ignored for cluster-scoped
// Types): server-owned metadata is filled, the Type's strategy runs, the
// object is validated and the namespace must admit it.
func (x *Resource) Create(ctx context.Context, namespace string, obj runtime.Object, opts WriteOptions) (res Result, err error) {
	// managedFields record what the writer sent, before admission and
	// the kind's storage (allocated addresses, priorities) add theirs.
	if obj, err = x.trackFields(nil, obj, opts, ""); err != nil {
		return Result{}, err
	}
	if err := x.checkNamespace(mustAccessor(obj), namespace); err != nil {
		return Result{}, err
	}
	// The kind's storage hooks (a Service's addresses, RBAC's escalation
	// check) run where kube-apiserver's storage runs them: on what
	// mutating admission left.
	finish := noFinish
	// err is the named result: the claims stay only if the write did.
	defer func() { finish(err == nil && !opts.DryRun) }()
	if err := x.admit(ctx, admissionWrite{op: admission.Create, obj: obj, namespace: mustAccessor(obj).GetNamespace(),
		name: mustAccessor(obj).GetName(), dryRun: opts.DryRun, sent: opts.Sent, fieldsValid: x.fieldsMade(opts)}); err != nil {
		return Result{}, err
	}
	DedupOwnerReferences(ctx, obj, true)
	if x.hooks != nil {
		f, err := x.hooks.beginCreate(ctx, obj, opts.DryRun)
		if err != nil {
			return Result{}, err
		}
		finish = f
	}
	acc, err := x.prepareCreate(namespace, obj)
	if err != nil {
		return Result{}, err
	}
	if who, ok := RequesterFrom(ctx); ok && x.t.Requested != nil {
		x.t.Requested(obj, who)
	}
	if acc.GetName() == "" {
		return Result{}, apierrors.NewInvalid(runtimeschema.GroupKind{Group: x.t.Group, Kind: x.t.Kind}, "",
			field.ErrorList{field.Required(field.NewPath("metadata", "name"), "name or generateName is required")})
	}
	if err := x.validate(obj, nil, ""); err != nil {
		return Result{}, err
	}
	if err := x.authorizeReferences(ctx, obj, nil, ""); err != nil {
		return Result{}, err
	}
	warnings := x.warnings(obj, nil)
	warnNow(ctx, warnings)
	if err := x.admitValidate(ctx, admissionWrite{op: admission.Create, obj: obj, namespace: acc.GetNamespace(),
		name: acc.GetName(), dryRun: opts.DryRun, sent: opts.Sent}); err != nil {
		return Result{}, err
	}
	if opts.DryRun {
		// The store would refuse a name that is taken; so does a dry run.
		if _, err := x.GetRecord(ctx, acc.GetNamespace(), acc.GetName()); err == nil {
			return Result{}, x.alreadyExists(ctx, acc.GetNamespace(), acc.GetName())
		} else if !apierrors.IsNotFound(err) {
			return Result{}, err
		}
		return x.asStored(Result{Obj: obj, Warnings: warnings})
	}
	key := x.Key(acc.GetNamespace(), acc.GetName())
	rec, err := x.g.store.Create(ctx, key, x.encoder(obj))
	if dropManagedFields(err, obj, opts) {
		rec, err = x.g.store.Create(ctx, key, x.encoder(obj))
	}
	if errors.Is(err, kv.ErrExists) {
		return Result{}, x.alreadyExists(ctx, acc.GetNamespace(), acc.GetName())
	}
	if err != nil {
		return Result{}, x.storeError(err, acc.GetName())
	}
	x.g.written.put(x.t, rec, obj)
	x.g.observer.Written(x.st, acc, nil)
	return x.asStored(Result{Rec: rec, Obj: obj, Warnings: warnings})
}

// asStored is a write's answer as it was stored, for Types whose stored
// form can lose what was written (schema.Type.LossyStorage):
// kube-apiserver's store answers a write, a dry run's too, with the object
// it decodes from the bytes it stored.
// A stored write is decoded from its record; a dry run's object is
// encoded as it would be stored first. An update that removed its object
// answers with what the writer sent, as kube's does.
func (x *Resource) asStored(res Result) (Result, error) {
	if !x.t.LossyStorage || res.Obj == nil || res.Removed {
		return res, nil
	}
	rec := res.Rec
	if rec.Rev == 0 {
		b, err := x.Encode(res.Obj)
		if err != nil {
			return Result{}, err
		}
		rec = kv.Record{Value: b}
	}
	obj, err := x.Decode(rec)
	if err != nil {
		return Result{}, err
	}
	res.Obj = obj
	return res, nil
}

// warnings asks the Type's strategy about an accepted write.
func (x *Resource) warnings(obj, old runtime.Object) []string {
	if x.t.Warnings == nil {
		return nil
	}
	return x.t.Warnings(obj, old)
}

// warnNow gives the kind's warnings to the request's warning recorder as
// kube's BeforeCreate and BeforeUpdate give them: after the kind's
// validation, before validating admission (whose warnings follow, and
// whose refusal keeps them). They stay in the Result for callers without
// a recorder; the recorder sends each text once.
func warnNow(ctx context.Context, warnings []string) {
	for _, w := range warnings {
		warning.AddWarning(ctx, "", w)
	}
}

// mustAccessor is meta.Accessor for objects known to have metadata.
func mustAccessor(obj runtime.Object) metav1.Object {
	acc, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return acc
}

// prepareCreate fills the server-owned metadata of a new object.
func (x *Resource) prepareCreate(namespace string, obj runtime.Object) (metav1.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := x.checkNamespace(acc, namespace); err != nil {
		return nil, err
	}
	if acc.GetName() == "" && acc.GetGenerateName() != "" {
		if x.t.GenerateNameAsIs {
			acc.SetName(acc.GetGenerateName())
		} else {
			acc.SetName(generateName(acc.GetGenerateName()))
		}
	}
	acc.SetUID(types.UID(uuid.NewString()))
	acc.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	acc.SetSelfLink("")
	if x.t.PrepareForCreate != nil {
		x.t.PrepareForCreate(obj)
	}
	return acc, nil
}

// checkNamespace enforces that an object's namespace matches the one it
// is written to, and fills it in when empty.
func (x *Resource) checkNamespace(acc metav1.Object, namespace string) error {
	if !x.t.Namespaced {
		acc.SetNamespace("")
		return nil
	}
	if ns := acc.GetNamespace(); ns != "" && ns != namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	acc.SetNamespace(namespace)
	return nil
}

// generateName appends kube's five random characters to a prefix.
func generateName(prefix string) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	const maxPrefix = 63 - 5
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	b := make([]byte, 5)
	_, _ = rand.Read(b)
	for i := range b {
		b[i] = alphabet[int(b[i])%len(alphabet)]
	}
	return prefix + string(b)
}

// validate runs ObjectMeta and type validation; 422 on failure.
func (x *Resource) validate(obj, old runtime.Object, subresource string) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	var errs field.ErrorList
	nameFn := apivalidation.NameIsDNSSubdomain
	if x.t.NameIsDNSLabel {
		nameFn = apivalidation.NameIsDNSLabel
	}
	om := codecs.ObjectMetaOf(acc)
	// Kinds whose validation checks ObjectMeta itself (kube's functions,
	// with the kind's own name rule) get the generic ObjectMeta checks on
	// create only once their own passed, as kube's BeforeCreate runs them
	// (a budget's validation checks its spec alone), so a cause is not
	// given twice. Every update gets them, as kube's validateCommonFields gives
	// them: some kinds' validations (budgets', priority and fairness
	// objects', most status validations) look at their own fields alone,
	// and an update must not change what it may not (one setting
	// deletionTimestamp would delete the object).
	// An update's causes come as kube's validateCommonFields gives them:
	// the metadata, then what the update may not change of it (which
	// refuses finalizers added while deleting), then the kind's own.
	generic, update := !x.t.ValidatesMeta, old != nil
	switch {
	case generic:
		errs = append(errs, apivalidation.ValidateObjectMeta(&om, x.t.Namespaced, nameFn, field.NewPath("metadata"))...)
	case update:
		// The name was judged by the kind's rule when it was made; kube's
		// common check takes any path segment.
		errs = append(errs, apivalidation.ValidateObjectMeta(&om, x.t.Namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))...)
	}
	if update {
		oacc, err := meta.Accessor(old)
		if err != nil {
			return err
		}
		oom := codecs.ObjectMetaOf(oacc)
		errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&om, &oom, field.NewPath("metadata"))...)
	}
	switch {
	case subresource == "status" && x.t.ValidateStatus != nil:
		errs = append(errs, x.t.ValidateStatus(obj, old)...)
	case x.t.Validate != nil:
		errs = append(errs, x.t.Validate(obj, old)...)
	}
	if !generic && !update && len(errs) == 0 {
		errs = apivalidation.ValidateObjectMeta(&om, x.t.Namespaced, path.ValidatePathSegmentName, field.NewPath("metadata"))
	}
	if len(errs) > 0 {
		// Named after the stored kind: events.k8s.io Events are validated
		// as core Events, as kube-apiserver does.
		return apierrors.NewInvalid(runtimeschema.GroupKind{Group: x.st.Group, Kind: x.st.Kind}, acc.GetName(), errs)
	}
	return nil
}

type requesterKey struct{}

// WithRequester returns ctx carrying the user a request is made by, for
// kinds that record it.
func WithRequester(ctx context.Context, who schema.Requester) context.Context {
	return context.WithValue(ctx, requesterKey{}, who)
}

// RequesterFrom returns the user WithRequester stored.
func RequesterFrom(ctx context.Context) (schema.Requester, bool) {
	who, ok := ctx.Value(requesterKey{}).(schema.Requester)
	return who, ok
}

// alreadyExists is the 409 for a name that is taken; kube's store says so
// when the object there is on its way out (registry/store.go Create), as
// it is right after a namespace was deleted and before it is gone.
func (x *Resource) alreadyExists(ctx context.Context, namespace, name string) error {
	err := apierrors.NewAlreadyExists(x.t.GroupResource(), name)
	// The stored metadata is enough: no decode, no conversion.
	if rec, gerr := x.GetRecord(ctx, namespace, name); gerr == nil {
		var m struct {
			Metadata struct {
				DeletionTimestamp *string `json:"deletionTimestamp"`
			} `json:"metadata"`
		}
		if json.Unmarshal(rec.Value, &m) == nil && m.Metadata.DeletionTimestamp != nil {
			err.ErrStatus.Message = "object is being deleted: " + err.ErrStatus.Message
		}
	}
	return err
}
