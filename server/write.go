package server

import (
	"net/http"
	"strconv"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
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
	// kube-apiserver's option validation: fieldManager first (at most 128
	// printable characters; it names a managedFields entry).
	errs := metav1validation.ValidateFieldManager(r.c.QueryParam("fieldManager"), field.NewPath("fieldManager"))
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
func (r *request) decodeBody(t *schema.Type, body []byte, mediaType string, fv fieldValidation) (runtime.Object, error) {
	obj, strict, err := r.s.codec.Decode(t, mediaType, body)
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
