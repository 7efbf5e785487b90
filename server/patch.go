package server

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	cbordirect "k8s.io/apimachinery/pkg/runtime/serializer/cbor/direct"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsjson "sigs.k8s.io/json"

	"github.com/tabula-dev/tabula/apply"
	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

// patch handles PATCH of one object: the three client-side patch formats
// and Server-Side Apply.
func (r *request) patch() error {
	p, err := r.readPatch()
	var bad patchBodyError
	if errors.As(err, &bad) {
		// kube reads a patch's body only once it has the object: a
		// missing one is a 404 whatever the body.
		if _, _, gerr := r.res.Get(r.ctx, r.ri.Namespace, r.ri.Name); apierrors.IsNotFound(gerr) {
			return r.notFound(r.ri.Name)
		}
		return bad.error
	}
	if err != nil {
		return err
	}
	if p.kind == apply.ServerSideApply {
		return r.serverSideApply(p)
	}
	return r.updateObject(func(current runtime.Object) (runtime.Object, error) {
		if current == nil {
			return nil, r.notFound(r.ri.Name)
		}
		obj, err := p.apply(current, r.t)
		if err == nil {
			err = registry.CheckName(obj, r.ri.Namespace, r.ri.Name)
		}
		if err != nil {
			return nil, err
		}
		return obj, nil
	}, registry.WriteOptions{DryRun: p.dryRun})
}

// patchBodyError is a patch body that does not decode, which kube judges
// only once it has read the object.
type patchBodyError struct{ error }

// jsonPatchOp is the operation kube's patch handler checks a JSON Patch's
// fields against.
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// patchRequest is a PATCH's options and body, read once and applied to
// the current object on every attempt of the update.
type patchRequest struct {
	r      *request
	kind   apply.Kind
	body   []byte
	fv     fieldValidation
	dryRun bool
	// dups are duplicate keys in the patch document itself.
	dups []string
}

// readPatch reads a PATCH's options, content type and body.
func (r *request) readPatch() (*patchRequest, error) {
	// The content type is judged first (415), then the options (422), as
	// kube-apiserver's patch handler does.
	// As kube's handler reads it: cut at the first ';', as written (no
	// spaces trimmed, case kept).
	ct := r.c.Request().Header.Get("Content-Type")
	if i := strings.Index(ct, ";"); i > 0 {
		ct = ct[:i]
	}
	kind := apply.Kind(ct)
	applyCBOR := ct == codecs.ApplyPatchCBOR && r.s.codec.CBOR()
	if applyCBOR {
		kind = apply.ServerSideApply
	}
	switch kind {
	case apply.JSONPatch, apply.MergePatch:
	case apply.StrategicPatch:
		// It needs a Go type's patch strategies.
		if r.t.New == nil || r.t.Unstructured {
			return nil, r.unsupportedPatch()
		}
	case apply.ServerSideApply:
		// Every subresource a PATCH writes takes an apply too, as on
		// kube-apiserver (pods/ephemeralcontainers, pods/resize,
		// certificatesigningrequests/approval), each with its own
		// managedFields entries.
		_, written := r.t.SubresourceUpdates[r.ri.Subresource]
		if r.ri.Subresource != "" && r.ri.Subresource != "status" && r.ri.Subresource != "scale" && !written {
			return nil, r.unsupportedPatch()
		}
	default:
		return nil, r.unsupportedPatch()
	}
	fv, dryRun, err := r.writeOptions()
	if err != nil {
		return nil, err
	}
	if _, err := r.negotiate(false); err != nil {
		return nil, err
	}
	body, err := r.readBody()
	if err != nil {
		return nil, err
	}
	r.auditPatch(body)
	if applyCBOR {
		if body, err = cborToJSON(body); err != nil {
			// kube-apiserver's words for an applied configuration
			// that does not decode, whatever its encoding.
			return nil, apierrors.NewBadRequest("error decoding YAML: " + err.Error())
		}
	}
	p := &patchRequest{r: r, kind: kind, body: body, fv: fv, dryRun: dryRun}
	// Duplicate keys in the patch document itself count as field problems
	// too, and so do unknown or duplicate fields of a JSON Patch's
	// operations, read as kube reads them (an applied configuration is
	// YAML, checked when it is applied).
	switch {
	case kind == apply.JSONPatch && fv != fvIgnore:
		var ops []jsonPatchOp
		strictErrs, err := sigsjson.UnmarshalStrict(body, &ops)
		if err != nil {
			return nil, patchBodyError{apierrors.NewBadRequest("error decoding patch: " + err.Error())}
		}
		for _, e := range strictErrs {
			p.dups = append(p.dups, "json patch "+e.Error())
		}
	case kind != apply.JSONPatch && kind != apply.ServerSideApply:
		var doc map[string]any
		strictErrs, err := sigsjson.UnmarshalStrict(body, &doc)
		switch {
		case err != nil && kind == apply.StrategicPatch:
			// kube decodes a strategic merge patch into a map first,
			// whatever the field validation, and says why it could not.
			return nil, patchBodyError{apierrors.NewBadRequest(err.Error())}
		case err != nil && fv != fvIgnore:
			// A merge patch is decoded so only to look for field
			// problems (kube's Warn and Strict); without that, json-patch
			// judges it.
			return nil, patchBodyError{apierrors.NewBadRequest("error decoding patch: " + err.Error())}
		}
		for _, e := range strictErrs {
			p.dups = append(p.dups, e.Error())
		}
	}
	return p, nil
}

// apply patches current, an object of Type t, and decodes the result.
func (p *patchRequest) apply(current runtime.Object, t *schema.Type) (runtime.Object, error) {
	orig, err := json.Marshal(current)
	if err != nil {
		return nil, err
	}
	var schemaObj any
	if t.New != nil {
		schemaObj = t.New()
	}
	patched, err := apply.Apply(p.kind, orig, p.body, schemaObj)
	if err != nil {
		return nil, patchError(err)
	}
	obj, strict, err := p.r.s.codec.Decode(t, codecs.JSON, patched)
	if err != nil && p.kind == apply.StrategicPatch {
		// kube turns a strategic merge's result into the kind by its Go
		// type: a kind or apiVersion the patch changed is not read.
		if fixed, ok := withTypeMeta(patched, t); ok {
			if o, st, derr := p.r.s.codec.Decode(t, codecs.JSON, fixed); derr == nil {
				obj, strict, err = o, st, nil
			}
		}
	}
	if err != nil {
		// kube's patch handler: a patched object that does not decode is
		// an invalid patch, quoting what was patched and the decoder.
		var de *codecs.DecodeError
		if !errors.As(err, &de) {
			return nil, err
		}
		why := de.Message
		if de.Cause != "" {
			why = de.Cause
		}
		if p.kind == apply.StrategicPatch && schemaObj != nil {
			// kube turns a strategic merge's result into the Go type
			// with the unstructured converter, whose words it quotes.
			var m map[string]any
			if utiljson.Unmarshal(patched, &m) == nil {
				if cerr := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(m, t.New(), false); cerr != nil {
					why = cerr.Error()
				}
			}
		}
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), p.quoted(orig, patched, schemaObj), why)})
	}
	strict = append(append([]string(nil), p.dups...), strict...)
	if p.fv == fvStrict && len(strict) > 0 {
		// kube-apiserver rejects a strict patch as an invalid patch,
		// quoting the patched object.
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{}, "", field.ErrorList{
			field.Invalid(field.NewPath("patch"), p.quoted(orig, patched, schemaObj), "strict decoding error: "+strings.Join(strict, ", ")),
		})
	}
	if err := p.r.fieldProblems(strict, p.fv); err != nil {
		return nil, err
	}
	// The patched object carries the current resourceVersion unless the
	// patch took it out or changed it (by any operation: a copy or move
	// into it too).
	if err := p.r.needResourceVersion(obj); err != nil {
		return nil, err
	}
	acc, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	if cur, err := meta.Accessor(current); err == nil {
		if rv := acc.GetResourceVersion(); rv == "" || rv == cur.GetResourceVersion() {
			// As kube's store: an update whose object names the current
			// resourceVersion applies to whatever is current, the patch
			// applied again after a race (it then names a stale one, a
			// 409, if the patch itself set it); one naming another is
			// refused.
			acc.SetResourceVersion("")
		}
	}
	return obj, nil
}

// withTypeMeta is doc with t's apiVersion and kind.
func withTypeMeta(doc []byte, t *schema.Type) ([]byte, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(doc, &m) != nil || m == nil {
		return nil, false
	}
	m["apiVersion"], _ = json.Marshal(t.APIVersion())
	m["kind"], _ = json.Marshal(t.Kind)
	out, err := json.Marshal(m)
	return out, err == nil
}

// quoted is what kube's refusal of a patch quotes: the patched object's
// JSON, or for a strategic merge patch the patch as its Go map prints.
func (p *patchRequest) quoted(orig, patched []byte, schemaObj any) string {
	if p.kind != apply.StrategicPatch {
		return string(patched)
	}
	// Decoded as kube's handler decodes it (whole numbers as int64, so
	// they print as written), and as its merge left it: the merge takes
	// its directives out of the patch's map as it applies them.
	var m map[string]any
	_ = utiljson.Unmarshal(p.body, &m)
	if schemaObj != nil {
		var om map[string]any
		if utiljson.Unmarshal(orig, &om) == nil {
			func() {
				defer func() { _ = recover() }() // the merge's own panics are answered elsewhere
				_, _ = strategicpatch.StrategicMergeMapPatch(om, m, schemaObj)
			}()
		}
	}
	return fmt.Sprintf("%+v", m)
}

// cborToJSON turns a CBOR applied configuration into the JSON the
// apply path reads, decoding it as kube-apiserver does (kube's CBOR
// rules: duplicate keys, depth and length limits refused).
func cborToJSON(body []byte) ([]byte, error) {
	var doc map[string]any
	if err := cbordirect.Unmarshal(body, &doc); err != nil {
		return nil, err
	}
	return json.Marshal(doc)
}

// unsupportedPatch is the 415 for a patch type the resource does not
// take: go-restful's words for a built-in kind, the custom resource
// handler's (naming what it takes) for a custom resource.
func (r *request) unsupportedPatch() error {
	if r.t.Unstructured {
		accepted := []string{string(apply.JSONPatch), string(apply.MergePatch), codecs.ApplyPatch}
		if r.s.codec.CBOR() {
			accepted = append(accepted, codecs.ApplyPatchCBOR)
		}
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
			Message: "the body of the request was in an unknown format - accepted media types include: " + strings.Join(accepted, ", "),
		}}
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "415: Unsupported Media Type", Details: &metav1.StatusDetails{},
	}}
}

func patchError(err error) error {
	var bad *apply.BadPatchError
	if errors.As(err, &bad) {
		return apierrors.NewBadRequest(bad.Error())
	}
	var large *apply.TooLargePatchError
	if errors.As(err, &large) {
		return apierrors.NewRequestEntityTooLargeError(large.Error())
	}
	var inv *apply.InvalidPatchError
	if errors.As(err, &inv) && inv.Untold {
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", runtimeschema.GroupResource{}, "", inv.Error(), 0, false)
	}
	if errors.As(err, &inv) {
		return &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusUnprocessableEntity, Reason: metav1.StatusReasonInvalid,
			Message: inv.Error(), Details: &metav1.StatusDetails{},
		}}
	}
	return err
}

// serverSideApply merges an applied configuration into the object as the
// request's field manager, creating the object when it does not exist.
func (r *request) serverSideApply(p *patchRequest) error {
	res, created, err := r.res.Apply(r.ctx, r.ri.Namespace, r.ri.Name, p.body, p.applyOptions())
	if err != nil {
		return err
	}
	return r.writeUpdated(res, created)
}

// applyOptions are the registry's options for this apply.
func (p *patchRequest) applyOptions() registry.ApplyOptions {
	return registry.ApplyOptions{
		WriteOptions:    registry.WriteOptions{DryRun: p.dryRun, Manager: p.r.manager(), Sent: p.r.sentOptions()},
		Subresource:     p.r.ri.Subresource,
		Force:           queryBool(p.r.c.QueryParams(), "force"),
		FieldValidation: string(p.fv),
		AuthorizeCreate: p.r.authorizeCreate,
	}
}
