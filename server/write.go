package server

import (
	"mime"
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/warning"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/registry"
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
	var errs field.ErrorList
	if r.verb == "patch" {
		// kube-apiserver's PatchOptions rules come first.
		if !isApply(r.c.Request().Header.Get("Content-Type")) {
			if _, ok := r.c.QueryParams()["force"]; ok {
				errs = append(errs, field.Forbidden(field.NewPath("force"), "may not be specified for non-apply patch"))
			}
		} else if r.c.QueryParam("fieldManager") == "" {
			errs = append(errs, field.Required(field.NewPath("fieldManager"), "is required for apply patch"))
		}
	}
	errs = append(errs, metav1validation.ValidateFieldManager(r.c.QueryParam("fieldManager"), field.NewPath("fieldManager"))...)
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

// requireBody is the 415 for an object body in a media type not served.
func (r *request) requireBody() error {
	return r.unsupportedBody(codecs.Offer{Protobuf: true, CBOR: r.s.codec.CBOR()})
}

// unsupportedBody is the 415 for a body in none of the media types offer
// names.
func (r *request) unsupportedBody(offer codecs.Offer) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: " + offer.Available(),
	}}
}

// warn adds a Warning header in kube-apiserver's format once per text
// (updates retried after a conflict would repeat them). YAML decoding
// reports all its problems in one error; each line is its own warning.
func (r *request) warn(text string) {
	rest, ok := strings.CutPrefix(text, "yaml: unmarshal errors:\n")
	if !ok {
		rest, ok = strings.CutPrefix(text, "error converting YAML to JSON: yaml: unmarshal errors:\n")
	}
	if ok {
		for _, line := range strings.Split(rest, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				r.warn(line)
			}
		}
		return
	}
	// Through the request's recorder, which the registry's warnings and
	// kube's code also reach: one order, each text once.
	warning.AddWarning(r.ctx, "", text)
}

// warningRecorder lets k8s.io/apiserver code that warns through the
// request context (kube's warning.AddWarning: the legacy token
// authenticator, for one) add Warning headers, once per text, as
// kube-apiserver's WithWarningRecorder filter does. auditInit puts one in
// every request's context.
type warningRecorder struct {
	mu   sync.Mutex
	h    http.Header
	seen map[string]bool
	// sent are the texts in order; runes counts their runes in the
	// headers; truncating says the headers past warningRunes were cut
	// to kube's short form.
	sent       []string
	runes      int
	truncating bool
}

// As kube's recorder: the warnings of a request may hold 4096 runes in
// all; past that each is cut to 256 runes (those already sent too), and
// once the cut ones fill the 4096 the rest are dropped.
const (
	warningRunes     = 4 * 1024
	warningItemRunes = 256
)

func (w *warningRecorder) AddWarning(_, text string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if text == "" || w.seen[text] || w.truncating && w.runes >= warningRunes {
		return
	}
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[text] = true
	w.sent = append(w.sent, text)
	n := utf8.RuneCountInString(text)
	if w.truncating || w.runes+n <= warningRunes {
		w.add(text)
		return
	}
	w.truncating, w.runes = true, 0
	w.h.Del("Warning")
	for _, t := range w.sent {
		w.add(t)
	}
}

// add writes one Warning header, cut when truncating, in kube's form
// (code 299, agent "-", the text quoted as kube quotes it; a text kube
// cannot quote, holding control characters, is not sent).
func (w *warningRecorder) add(text string) {
	if r := []rune(text); w.truncating && len(r) > warningItemRunes {
		text = string(r[:warningItemRunes])
	}
	if v, err := utilnet.NewWarningHeader(299, "-", text); err == nil {
		w.runes += utf8.RuneCountInString(text)
		w.h.Add("Warning", v)
	}
}

// isApply reports a Server-Side Apply content type (YAML or CBOR).
func isApply(contentType string) bool {
	ct, _, _ := mime.ParseMediaType(contentType)
	return ct == codecs.ApplyPatch || ct == codecs.ApplyPatchCBOR
}

// manager is the field manager the request's writes record: the
// fieldManager parameter, or else what precedes the first "/" of the
// User-Agent, printable characters only, at most 128 bytes (as
// kube-apiserver derives it).
// sentOptions are the write options as the request sent them, which
// admission passes on.
func (r *request) sentOptions() registry.SentOptions {
	q := r.c.QueryParams()
	return registry.SentOptions{FieldManager: q.Get("fieldManager"), FieldValidation: q.Get("fieldValidation")}
}

func (r *request) manager() string {
	if m := r.c.QueryParam("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.c.Request().UserAgent(), "/")
	var b strings.Builder
	for _, c := range ua {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}
