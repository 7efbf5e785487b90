package apply

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
)

// Kind names a patch format by its media type.
type Kind string

const (
	JSONPatch      Kind = "application/json-patch+json"
	MergePatch     Kind = "application/merge-patch+json"
	StrategicPatch Kind = "application/strategic-merge-patch+json"
)

// BadPatchError: the patch document itself is malformed (400). Bare
// errors are told as they are, the others after "error decoding patch: ",
// as kube-apiserver tells each.
type BadPatchError struct {
	Err  error
	Bare bool
}

func (e *BadPatchError) Error() string {
	if e.Bare {
		return e.Err.Error()
	}
	return "error decoding patch: " + e.Err.Error()
}
func (e *BadPatchError) Unwrap() error { return e.Err }

// InvalidPatchError: the patch is well-formed but cannot be applied to
// this object, such as a failing JSON Patch test (422). Untold errors are
// answered, as kube-apiserver answers a JSON Patch that fails, with the
// generic 422 alone (json-patch v4's texts can be garbled: "%!w(<nil>)").
type InvalidPatchError struct {
	Err    error
	Untold bool
}

func (e *InvalidPatchError) Error() string { return e.Err.Error() }
func (e *InvalidPatchError) Unwrap() error { return e.Err }

// maxJSONPatchOps bounds work done for one request, as kube-apiserver does.
const maxJSONPatchOps = 10000

func init() {
	// As kube-apiserver sets it (its JSONPatchMaxCopyBytes): a patch's
	// copies may add at most 3 MiB, so a few operations copying a value
	// into itself cannot double it until memory runs out.
	jsonpatch.AccumulatedCopySizeLimit = 3 << 20
}

// TooLargePatchError: a JSON Patch of more operations than kube-apiserver
// applies (413).
type TooLargePatchError struct{ Ops int }

func (e *TooLargePatchError) Error() string {
	return fmt.Sprintf("The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOps, e.Ops)
}

// Apply patches original (JSON) with patch in the format kind. schema is an
// empty object of the Go type, giving Strategic Merge Patch its list merge
// keys and strategies; it may be nil for the other formats.
func Apply(kind Kind, original, patch []byte, schema any) ([]byte, error) {
	switch kind {
	case JSONPatch:
		// kube-apiserver's own library (json-patch v4), so that what it
		// refuses or accepts — an add at the root, a test or copy of a
		// missing path, an operation named in another case — is so here.
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, &BadPatchError{Err: err, Bare: true}
		}
		if len(p) > maxJSONPatchOps {
			return nil, &TooLargePatchError{Ops: len(p)}
		}
		out, err := applyJSONPatch(p, original)
		if err != nil {
			return nil, &InvalidPatchError{Err: err, Untold: true}
		}
		return out, nil
	case MergePatch:
		out, err := mergePatch(original, patch)
		if errors.Is(err, jsonpatch.ErrBadJSONPatch) {
			return nil, &BadPatchError{Err: err, Bare: true}
		}
		if err != nil {
			return nil, err
		}
		return out, nil
	case StrategicPatch:
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, &BadPatchError{Err: err, Bare: true}
		}
		if schema == nil {
			return nil, &InvalidPatchError{Err: errors.New("strategic merge patch is not supported for this kind")}
		}
		out, err := strategicMergePatch(original, patch, schema)
		if err != nil {
			if errors.Is(err, mergepatch.ErrBadJSONDoc) || errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList) ||
				errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys) || errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList) ||
				errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat) {
				// kube's interpretStrategicMergePatchError: its words alone.
				return nil, &BadPatchError{Err: err, Bare: true}
			}
			return nil, &InvalidPatchError{Err: err}
		}
		return out, nil
	}
	return nil, fmt.Errorf("apply: unsupported patch type %q", kind)
}

// applyJSONPatch is p.Apply, with v4's panics on operations it did not
// expect (a test or replace of the whole document without a value, a null
// in an array it compares, a copied null added into) made a failed
// patch: kube-apiserver answers those with a 500, the client's mistake is
// a 422 here.
func applyJSONPatch(p jsonpatch.Patch, doc []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("the patch could not be applied: %v", r)
		}
	}()
	return p.Apply(doc)
}

// mergePatch is jsonpatch.MergePatch, guarded the same way.
func mergePatch(doc, patch []byte) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &BadPatchError{Err: fmt.Errorf("%v", r), Bare: true}
		}
	}()
	return jsonpatch.MergePatch(doc, patch)
}

// strategicMergePatch is strategicpatch.StrategicMergePatch, whose panics
// on directives of the wrong shape ($setElementOrder of objects among
// primitives) are a bad patch.
func strategicMergePatch(doc, patch []byte, schema any) (out []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, &BadPatchError{Err: fmt.Errorf("%v", r), Bare: true}
		}
	}()
	return strategicpatch.StrategicMergePatch(doc, patch, schema)
}
