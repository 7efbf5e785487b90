package apply

import (
	"encoding/json"
	"errors"
	"fmt"

	jsonpatch "github.com/evanphx/json-patch/v5"
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

// BadPatchError: the patch document itself is malformed (400).
type BadPatchError struct{ Err error }

func (e *BadPatchError) Error() string { return "error decoding patch: " + e.Err.Error() }
func (e *BadPatchError) Unwrap() error { return e.Err }

// InvalidPatchError: the patch is well-formed but cannot be applied to
// this object, such as a failing JSON Patch test (422).
type InvalidPatchError struct{ Err error }

func (e *InvalidPatchError) Error() string { return e.Err.Error() }
func (e *InvalidPatchError) Unwrap() error { return e.Err }

// maxJSONPatchOps bounds work done for one request, as kube-apiserver does.
const maxJSONPatchOps = 10000

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
		var ops []map[string]json.RawMessage
		if err := json.Unmarshal(patch, &ops); err != nil {
			return nil, &BadPatchError{Err: err}
		}
		if len(ops) > maxJSONPatchOps {
			return nil, &TooLargePatchError{Ops: len(ops)}
		}
		rewritten := false
		for i, op := range ops {
			// This library dereferences "value" for these without
			// checking; kube's (json-patch v4) adds or replaces with null.
			var name string
			_ = json.Unmarshal(op["op"], &name)
			if _, ok := op["value"]; !ok {
				switch name {
				case "add", "replace":
					op["value"], rewritten = json.RawMessage("null"), true
				case "test":
					return nil, &BadPatchError{Err: fmt.Errorf("operation %d (%s) has no value", i, name)}
				}
			}
		}
		if rewritten {
			patch, _ = json.Marshal(ops)
		}
		p, err := jsonpatch.DecodePatch(patch)
		if err != nil {
			return nil, &BadPatchError{Err: err}
		}
		out, err := p.ApplyWithOptions(original, &jsonpatch.ApplyOptions{
			SupportNegativeIndices:   true,
			AccumulatedCopySizeLimit: 0,
			EnsurePathExistsOnAdd:    false,
		})
		if err != nil {
			return nil, &InvalidPatchError{Err: err}
		}
		return out, nil
	case MergePatch:
		if !json.Valid(patch) {
			var v any
			return nil, &BadPatchError{Err: json.Unmarshal(patch, &v)}
		}
		out, err := jsonpatch.MergePatch(original, patch)
		if err != nil {
			return nil, &InvalidPatchError{Err: err}
		}
		return out, nil
	case StrategicPatch:
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return nil, &BadPatchError{Err: err}
		}
		if schema == nil {
			return nil, &InvalidPatchError{Err: errors.New("strategic merge patch is not supported for this kind")}
		}
		out, err := strategicpatch.StrategicMergePatch(original, patch, schema)
		if err != nil {
			if errors.Is(err, mergepatch.ErrBadJSONDoc) || errors.Is(err, mergepatch.ErrBadPatchFormatForPrimitiveList) ||
				errors.Is(err, mergepatch.ErrBadPatchFormatForRetainKeys) || errors.Is(err, mergepatch.ErrBadPatchFormatForSetElementOrderList) ||
				errors.Is(err, mergepatch.ErrUnsupportedStrategicMergePatchFormat) {
				return nil, &BadPatchError{Err: err}
			}
			return nil, &InvalidPatchError{Err: err}
		}
		return out, nil
	}
	return nil, fmt.Errorf("apply: unsupported patch type %q", kind)
}
