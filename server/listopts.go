package server

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversion "k8s.io/apimachinery/pkg/apis/meta/internalversion"
	metainternalversionvalidation "k8s.io/apimachinery/pkg/apis/meta/internalversion/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// listParams are the parsed query parameters of list and watch.
type listParams struct {
	pred           kv.Predicate
	limit          int64
	continueToken  string
	cont           *continueToken
	rv             string
	rvMatch        metav1.ResourceVersionMatch
	timeoutSeconds int64
	bookmarks      bool
	sendInitial    *bool
}

// parseListParams validates list/watch parameters the way kube-apiserver
// does: 400 for what cannot be parsed, 422 for invalid combinations.
func (r *request) parseListParams() (*listParams, error) {
	q := r.c.QueryParams()
	p := &listParams{rv: q.Get("resourceVersion"), rvMatch: metav1.ResourceVersionMatch(q.Get("resourceVersionMatch"))}
	if v := q.Get("limit"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if n > 0 {
			p.limit = n
		}
	}
	if v := q.Get("timeoutSeconds"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		p.timeoutSeconds = n
	}
	p.bookmarks = queryBool(q, "allowWatchBookmarks")
	if v, ok := q["sendInitialEvents"]; ok && len(v) > 0 {
		// kube's parameter codec: "0" and "false" (any case) are false,
		// anything else true.
		b := !strings.EqualFold(v[0], "false") && v[0] != "0"
		p.sendInitial = &b
	}
	if p.rv != "" {
		if _, err := strconv.ParseUint(p.rv, 10, 64); err != nil {
			return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid resource version: resourceVersion: Invalid value: %q: %v", p.rv, err))
		}
	}
	if v := q.Get("labelSelector"); v != "" {
		sel, err := labels.Parse(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		p.pred.Label = sel
	}
	if v := q.Get("fieldSelector"); v != "" {
		sel, err := fields.ParseSelector(v)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if r.t.ConvertFieldLabel != nil {
			// kube-apiserver's list and watch handlers: each label goes
			// through the kind's conversion, which refuses unknown ones.
			if sel, err = sel.Transform(r.t.ConvertFieldLabel); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		} else if err := r.checkFieldLabels(sel); err != nil {
			return nil, err
		}
		p.pred.Field = sel
	}
	p.continueToken = q.Get("continue")
	// kube's defaulting and validation, with WatchList on (the default
	// since 1.34). Both read the watch parameter, not the path: a legacy
	// /watch/ path is validated as a list is, as on kube-apiserver.
	opts := metainternalversion.ListOptions{Watch: queryBool(q, "watch"), ResourceVersion: p.rv, ResourceVersionMatch: p.rvMatch,
		SendInitialEvents: p.sendInitial, Continue: p.continueToken}
	// A watch from "" or "0" opens with the state, then the
	// initial-events-end bookmark when bookmarks are allowed.
	metainternalversion.SetListOptionsDefaults(&opts, true)
	p.sendInitial, p.rvMatch = opts.SendInitialEvents, opts.ResourceVersionMatch
	if errs := metainternalversionvalidation.ValidateListOptions(&opts, true); len(errs) > 0 {
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{Group: "meta.k8s.io", Kind: "ListOptions"}, "", errs)
	}
	if r.verb == "watch" {
		// A watch has no use for continue, and kube's ignores it.
		p.continueToken = ""
	}
	if p.continueToken != "" {
		if p.rv != "" && p.rv != "0" {
			return nil, apierrors.NewBadRequest("specifying resource version is not allowed when using continue")
		}
		t, err := decodeContinue(p.continueToken)
		if err != nil {
			return nil, apierrors.NewBadRequest("invalid continue token: continue key is not valid: " + err.Error())
		}
		p.cont = t
	}
	return p, nil
}

func (r *request) checkFieldLabels(sel fields.Selector) error {
	allowed := map[string]bool{"metadata.name": true, "metadata.namespace": true}
	for _, l := range r.t.FieldLabels {
		allowed[l] = true
	}
	for _, req := range sel.Requirements() {
		if allowed[req.Field] {
			continue
		}
		if len(r.t.FieldLabels) == 0 {
			return apierrors.NewBadRequest(fmt.Sprintf("%q is not a known field selector: only \"metadata.name\", \"metadata.namespace\"", req.Field))
		}
		return apierrors.NewBadRequest(fmt.Sprintf("field label not supported: %s", req.Field))
	}
	return nil
}

// continueToken is the opaque list position, in kube-apiserver's format
// (base64 of {"v","rv","start"}) so tokens look the same to clients.
type continueToken struct {
	APIVersion string `json:"v"`
	RV         int64  `json:"rv"`
	Start      string `json:"start"`
}

const continueVersion = "meta.k8s.io/v1"

func encodeContinue(rv int64, namespace, name string, allNamespaces bool) string {
	start := "/" + name + "\x00"
	if allNamespaces {
		start = "/" + namespace + "/" + name + "\x00"
	}
	return (&continueToken{APIVersion: continueVersion, RV: rv, Start: start}).encode()
}

func (t *continueToken) encode() string {
	b, _ := json.Marshal(t)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContinue(s string) (*continueToken, error) {
	raw, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, err
	}
	var t continueToken
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, err
	}
	if t.APIVersion != continueVersion {
		return nil, fmt.Errorf("server does not recognize this encoded version %s", t.APIVersion)
	}
	// -1: at the latest revision, as kube's tokens given with a 410 say.
	if t.RV == 0 || t.RV < -1 || !strings.HasPrefix(t.Start, "/") {
		return nil, fmt.Errorf("continue key is not valid")
	}
	return &t, nil
}

// position splits a token's start key into namespace and name.
func (t *continueToken) position(allNamespaces bool) (namespace, name string) {
	s := strings.TrimSuffix(strings.TrimPrefix(t.Start, "/"), "\x00")
	if allNamespaces {
		namespace, name, _ = strings.Cut(s, "/")
		return namespace, name
	}
	return "", s
}

// tooLargeRV is kube-apiserver's answer when a client asks for a revision
// the store has not reached after waiting.
func tooLargeRV(requested, current int64) error {
	st := apierrors.NewTimeoutError(fmt.Sprintf("Too large resource version: %d, current: %d", requested, current), 1)
	st.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: metav1.CauseTypeResourceVersionTooLarge, Message: "Too large resource version"}}
	return st
}

// waitForRev waits a little for the store to reach rev, as kube-apiserver's
// watch cache does before answering "too large".
func (r *request) waitForRev(rev int64) (int64, error) {
	ctx := r.ctx
	deadline := time.Now().Add(3 * time.Second)
	for {
		cur, err := r.s.store.CurrentRev(ctx)
		if err != nil {
			return 0, err
		}
		if cur >= rev {
			return cur, nil
		}
		if time.Now().After(deadline) {
			return cur, tooLargeRV(rev, cur)
		}
		select {
		case <-ctx.Done():
			return cur, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
