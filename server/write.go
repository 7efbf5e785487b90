package server

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// fieldValidation is the directive for unknown and duplicate fields.
type fieldValidation string

const (
	fvIgnore fieldValidation = "Ignore"
	fvWarn   fieldValidation = "Warn"
	fvStrict fieldValidation = "Strict"
)

// optionsKind names the options type a verb takes, for error messages.
func optionsKind(verb string) string {
	switch verb {
	case "create":
		return "CreateOptions"
	case "patch":
		return "PatchOptions"
	}
	return "UpdateOptions"
}

// writeOptions parses the query parameters every write shares.
func (r *request) writeOptions() (fieldValidation, bool, error) {
	var errs field.ErrorList
	fv := fieldValidation(r.c.QueryParam("fieldValidation"))
	switch fv {
	case "":
		fv = fvWarn
	case fvIgnore, fvWarn, fvStrict:
	default:
		errs = append(errs, field.NotSupported(field.NewPath("fieldValidation"), string(fv), []string{"", "Ignore", "Strict", "Warn"}))
	}
	dryRun := false
	if vs := r.c.QueryParams()["dryRun"]; len(vs) > 0 {
		for _, v := range vs {
			if v != metav1.DryRunAll {
				errs = append(errs, field.NotSupported(field.NewPath("dryRun"), vs, []string{metav1.DryRunAll}))
				break
			}
		}
		dryRun = true
	}
	if len(errs) > 0 {
		return fv, false, apierrors.NewInvalid(runtimeschema.GroupKind{Group: "meta.k8s.io", Kind: optionsKind(r.verb)}, "", errs)
	}
	return fv, dryRun, nil
}

// decodeBody decodes a create or update body and applies fieldValidation.
func (r *request) decodeBody(body []byte, mediaType string, fv fieldValidation) (runtime.Object, error) {
	obj, strict, err := r.s.codec.Decode(r.t, mediaType, body)
	if err != nil {
		return nil, err
	}
	if err := r.fieldProblems(strict, fv); err != nil {
		return nil, err
	}
	return obj, nil
}

// fieldProblems applies the fieldValidation directive to decoding problems.
func (r *request) fieldProblems(strict []string, fv fieldValidation) error {
	if len(strict) == 0 {
		return nil
	}
	switch fv {
	case fvStrict:
		return apierrors.NewBadRequest(codecs.StrictMessage(r.t, strict))
	case fvWarn:
		for _, p := range strict {
			r.warn(p)
		}
	}
	return nil
}

func requireBody(mediaType string, ok bool) error {
	if !ok {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
		}}
	}
	return nil
}

// checkNamespaceOfBody enforces that an object's namespace matches the URL
// and fills it in when empty.
func (r *request) checkNamespaceOfBody(acc metav1.Object) error {
	if !r.t.Namespaced {
		acc.SetNamespace("")
		return nil
	}
	if ns := acc.GetNamespace(); ns != "" && ns != r.ri.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	acc.SetNamespace(r.ri.Namespace)
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
func (r *request) validate(obj, old runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	var errs field.ErrorList
	nameFn := apivalidation.NameIsDNSSubdomain
	if r.t.Resource == "namespaces" && r.t.Group == "" {
		nameFn = apivalidation.NameIsDNSLabel
	}
	om := objectMetaOf(acc)
	// Kinds whose validation checks ObjectMeta itself (kube's functions,
	// with the kind's own name rule) skip the generic ObjectMeta checks.
	generic := !r.t.ValidatesMeta
	if old != nil {
		oacc, err := meta.Accessor(old)
		if err != nil {
			return err
		}
		oom := objectMetaOf(oacc)
		if generic {
			errs = append(errs, apivalidation.ValidateObjectMetaUpdate(&om, &oom, field.NewPath("metadata"))...)
		}
		errs = append(errs, noNewFinalizersWhileDeleting(&om, &oom)...)
	}
	if generic {
		errs = append(errs, apivalidation.ValidateObjectMeta(&om, r.t.Namespaced, nameFn, field.NewPath("metadata"))...)
	}
	if r.t.Validate != nil {
		errs = append(errs, r.t.Validate(obj, old)...)
	}
	if len(errs) > 0 {
		// Named after the stored kind: events.k8s.io Events are validated
		// as core Events, as kube-apiserver does.
		st := r.storageType()
		return apierrors.NewInvalid(runtimeschema.GroupKind{Group: st.Group, Kind: st.Kind}, acc.GetName(), errs)
	}
	return nil
}

// encoder returns the store encoder for obj: it stamps the revision into
// the object and extracts labels and selectable fields.
//
// The store calls encoders one after another inside its single writer, so
// the object is serialized here, on the request's goroutine, with a
// placeholder resourceVersion; the encoder only splices the revision into
// those bytes.
func (r *request) encoder(obj runtime.Object, out *runtime.Object) kv.Encoder {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return func(int64) (kv.Entry, error) { return kv.Entry{}, err }
	}
	orig := acc.GetResourceVersion()
	acc.SetResourceVersion(rvPlaceholder)
	b, err := r.storedBytes(obj)
	acc.SetResourceVersion(orig)
	if err != nil {
		return func(int64) (kv.Entry, error) { return kv.Entry{}, err }
	}
	// The placeholder is random, so it is found once, in the metadata,
	// unless a client guessed it; then the object is encoded in the writer.
	at := bytes.Index(b, rvPlaceholderJSON)
	if at < 0 || bytes.Index(b[at+1:], rvPlaceholderJSON) >= 0 {
		b = nil
	}
	entry := kv.Entry{Labels: acc.GetLabels(), Fields: r.fieldsOf(obj, acc), ExpiresAt: r.expiry(obj)}
	return func(rev int64) (kv.Entry, error) {
		rv := strconv.FormatInt(rev, 10)
		acc.SetResourceVersion(rv)
		if r.t.Group == "" && r.t.Resource == "namespaces" {
			r.s.nsCache.wrote(acc.GetName(), rev)
		}
		e := entry
		var err error
		if b != nil {
			start := at + len(rvPlaceholderJSON) - len(rvPlaceholder) - 1
			e.Value = make([]byte, 0, len(b)-len(rvPlaceholder)+len(rv))
			e.Value = append(append(append(e.Value, b[:start]...), rv...), b[start+len(rvPlaceholder):]...)
		} else if e.Value, err = r.storedBytes(obj); err != nil {
			return kv.Entry{}, err
		}
		if len(e.Value) > maxStoredBytes {
			return kv.Entry{}, apierrors.NewRequestEntityTooLargeError("limit is 1572864")
		}
		if out != nil {
			*out = obj
		}
		return e, nil
	}
}

// rvPlaceholder stands for the resourceVersion while an object is
// serialized ahead of its write; it is random so that no stored content
// contains it by accident.
var rvPlaceholder, rvPlaceholderJSON = func() (string, []byte) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	ph := "tabula-rv-" + hex.EncodeToString(b[:])
	return ph, []byte(`"resourceVersion":"` + ph + `"`)
}()

// maxStoredBytes is etcd's default request limit that kube-apiserver
// inherits for one object.
const maxStoredBytes = 1536 * 1024

func (r *request) fieldsOf(obj runtime.Object, acc metav1.Object) map[string]string {
	f := map[string]string{"metadata.name": acc.GetName(), "metadata.namespace": acc.GetNamespace()}
	// Indexed fields the garbage collector finds its work by.
	for _, ref := range acc.GetOwnerReferences() {
		f[ownerField(ref.UID)] = "1"
	}
	if len(acc.GetOwnerReferences()) > 0 {
		f[gcHasOwners] = "1"
	}
	if acc.GetDeletionTimestamp() != nil && (hasFinalizer(acc, metav1.FinalizerOrphanDependents) || hasFinalizer(acc, metav1.FinalizerDeleteDependents)) {
		f[gcWaiting] = "1"
	}
	if r.t.Fields != nil {
		for k, v := range r.t.Fields(obj) {
			f[k] = v
		}
	}
	return f
}

// expiry gives core Events their time to live.
func (r *request) expiry(obj runtime.Object) time.Time {
	if r.t.StorageResource != "events" || r.s.cfg.EventTTL <= 0 {
		return time.Time{}
	}
	return time.Now().Add(r.s.cfg.EventTTL)
}

// prepareCreate fills the server-owned metadata of a new object.
func (r *request) prepareCreate(obj runtime.Object) (metav1.Object, error) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if err := r.checkNamespaceOfBody(acc); err != nil {
		return nil, err
	}
	if acc.GetName() == "" && acc.GetGenerateName() != "" {
		acc.SetName(generateName(acc.GetGenerateName()))
	}
	acc.SetUID(types.UID(uuid.NewString()))
	acc.SetCreationTimestamp(metav1.NewTime(time.Now().Truncate(time.Second)))
	acc.SetResourceVersion("")
	acc.SetDeletionTimestamp(nil)
	acc.SetDeletionGracePeriodSeconds(nil)
	acc.SetSelfLink("")
	acc.SetManagedFields(nil)
	if r.t.PrepareForCreate != nil {
		r.t.PrepareForCreate(obj)
	}
	return acc, nil
}

// prepareUpdate carries server-owned metadata from old into obj.
func (r *request) prepareUpdate(obj, old runtime.Object) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	oacc, err := meta.Accessor(old)
	if err != nil {
		return err
	}
	if acc.GetUID() == "" {
		acc.SetUID(oacc.GetUID())
	}
	acc.SetCreationTimestamp(oacc.GetCreationTimestamp())
	acc.SetDeletionTimestamp(oacc.GetDeletionTimestamp())
	acc.SetDeletionGracePeriodSeconds(oacc.GetDeletionGracePeriodSeconds())
	acc.SetGeneration(oacc.GetGeneration())
	acc.SetSelfLink("")
	// managedFields are not tracked yet: keep the stored ones rather than
	// trusting (possibly malformed) client-sent entries.
	acc.SetManagedFields(oacc.GetManagedFields())
	// Subresource writes were already narrowed by applySubresource; the
	// type's hook guards the main resource.
	if r.t.PrepareForUpdate != nil && r.ri.Subresource == "" {
		r.t.PrepareForUpdate(obj, old)
	}
	return nil
}

// namespaceAllowsCreate checks that a namespaced object's namespace exists
// and is not terminating, as kube-apiserver's NamespaceLifecycle does.
func (r *request) namespaceAllowsCreate(name string) error {
	if !r.t.Namespaced {
		return nil
	}
	if r.s.nsCache.isActive(r.ri.Namespace) {
		return nil
	}
	ns, err := r.s.getNamespace(r.ctx, r.ri.Namespace)
	if err != nil {
		return err
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		st := apierrors.NewForbidden(r.t.GroupResource(), name,
			fmt.Errorf("unable to create new content in namespace %s because it is being terminated", r.ri.Namespace))
		st.ErrStatus.Details.Causes = []metav1.StatusCause{{
			Type:    "NamespaceTerminating",
			Message: fmt.Sprintf("namespace %s is being terminated", r.ri.Namespace),
			Field:   "metadata.namespace",
		}}
		return st
	}
	return nil
}

// noNewFinalizersWhileDeleting refuses finalizers added to an object that
// is being deleted, as kube-apiserver does.
func noNewFinalizersWhileDeleting(obj, old *metav1.ObjectMeta) field.ErrorList {
	if old.DeletionTimestamp == nil {
		return nil
	}
	had := map[string]bool{}
	for _, f := range old.Finalizers {
		had[f] = true
	}
	var added []string
	for _, f := range obj.Finalizers {
		if !had[f] {
			added = append(added, f)
		}
	}
	if len(added) == 0 {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("metadata", "finalizers"),
		fmt.Sprintf("no new finalizers can be added if the object is being deleted, found new finalizers %#v", added))}
}

// warn adds a Warning header in kube-apiserver's format once per text
// (updates retried after a conflict would repeat them). YAML decoding
// reports all its problems in one error; each line is its own warning.
func (r *request) warn(text string) {
	if rest, ok := strings.CutPrefix(text, "yaml: unmarshal errors:\n"); ok {
		for _, line := range strings.Split(rest, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				r.warn(line)
			}
		}
		return
	}
	if r.warned == nil {
		r.warned = map[string]bool{}
	}
	if r.warned[text] {
		return
	}
	r.warned[text] = true
	addWarning(r.c.Response().Header(), text)
}

// addWarning adds a Warning header the way kube-apiserver writes them:
// code 299, agent "-", the text quoted.
func addWarning(h http.Header, text string) {
	h.Add("Warning", "299 - "+strconv.Quote(text))
}
