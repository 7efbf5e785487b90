package server

import (
	"fmt"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericrest "k8s.io/apiserver/pkg/registry/rest"
	authorizationinternal "k8s.io/kubernetes/pkg/apis/authorization"
	authorizationconv "k8s.io/kubernetes/pkg/apis/authorization/v1"
	authorizationutil "k8s.io/kubernetes/pkg/registry/authorization/util"

	"github.com/tabula-dev/tabula/server/auth"
)

// The review resources of authentication.k8s.io and authorization.k8s.io:
// a create asks a question about a user and gets the answer in status,
// as kube-apiserver's REST storage for them does. Nothing is stored.

// review answers a create of a Virtual type.
func (r *request) review(obj runtime.Object, dryRun bool) error {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return err
	}
	// As kube's create handler does: the system's own fields a client
	// sent are dropped (but on pods/binding, whose uid is the Pod's
	// precondition: kube's BindingREST preserves them on its subresource),
	// and a cluster-scoped object's namespace, before the review's
	// "metadata must be empty" check.
	if r.ri.Subresource == "" {
		genericrest.WipeObjectMetaSystemFields(acc)
	}
	if r.t.Namespaced {
		if err := r.bodyNamespace(acc); err != nil {
			return err
		}
		acc.SetNamespace(r.ri.Namespace)
	} else {
		acc.SetNamespace("")
	}
	// Bindings are admitted as the Pod's subresource, in bind.
	_, binding := obj.(*corev1.Binding)
	if !binding {
		if err := r.res.MutateCreate(r.ctx, acc.GetNamespace(), obj, dryRun); err != nil {
			return err
		}
	}
	if r.t.Validate != nil {
		if errs := r.t.Validate(obj, nil); len(errs) > 0 {
			// kube's review storages name the kind of the decoded
			// internal object, whose TypeMeta conversion left empty:
			// `.authorization.k8s.io "" is invalid`.
			return apierrors.NewInvalid(runtimeschema.GroupKind{Group: r.t.Group}, "", errs)
		}
	}
	if b, ok := obj.(*corev1.Binding); ok {
		return r.bind(b, dryRun)
	}
	requester, _ := auth.UserFrom(r.ctx)
	// Each review's storage checks what it needs, then calls validating
	// admission (kube's createValidation), then answers.
	if err := reviewPreconditions(obj, requester, r.t.Kind); err != nil {
		return err
	}
	if err := r.res.ValidateCreate(r.ctx, acc.GetNamespace(), obj, dryRun); err != nil {
		return err
	}
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview:
		// A new object, stamped now, as kube's answers.
		*o = authenticationv1.SelfSubjectReview{TypeMeta: o.TypeMeta, ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
			Status: authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(requester)}}
	case *authenticationv1.TokenReview:
		u, auds, ok, err := r.s.cfg.Authenticator.AuthenticateToken(r.ctx, o.Spec.Token, o.Spec.Audiences)
		o.Spec.Token = "" // never echoed back
		o.Status = authenticationv1.TokenReviewStatus{Authenticated: ok, Audiences: auds}
		if err != nil {
			o.Status.Error = err.Error()
		}
		if ok {
			o.Status.User = userInfo(u)
		}
	case *authorizationv1.SelfSubjectAccessReview:
		o.Status = r.decide(requester, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		o.Status = r.decide(subject(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		// Validation made spec.resourceAttributes.namespace the URL's.
		o.Status = r.decide(subject(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		// The answer is a new object holding only the status, as kube's.
		*o = authorizationv1.SelfSubjectRulesReview{TypeMeta: o.TypeMeta, Status: r.rules(requester, o.Spec.Namespace)}
	}
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	return r.writeObject(http.StatusCreated, out, obj)
}

// reviewPreconditions are the checks each review's storage makes of the
// request before it calls validating admission.
func reviewPreconditions(obj runtime.Object, requester *auth.User, kind string) error {
	switch o := obj.(type) {
	case *authenticationv1.SelfSubjectReview, *authorizationv1.SelfSubjectAccessReview:
		if requester == nil {
			return apierrors.NewBadRequest("no user present on request")
		}
	case *authenticationv1.TokenReview:
		if o.Spec.Token == "" {
			return apierrors.NewBadRequest("token is required for TokenReview in authentication")
		}
	case *authorizationv1.SelfSubjectRulesReview:
		if requester == nil {
			return apierrors.NewBadRequest("no user present on request")
		}
		if o.Spec.Namespace == "" {
			return apierrors.NewBadRequest("no namespace on request")
		}
	case *authorizationv1.SubjectAccessReview, *authorizationv1.LocalSubjectAccessReview:
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("%s is not a review this server answers", kind))
	}
	return nil
}

func userInfo(u *auth.User) authenticationv1.UserInfo {
	info := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	for k, v := range u.Extra {
		if info.Extra == nil {
			info.Extra = map[string]authenticationv1.ExtraValue{}
		}
		info.Extra[k] = v
	}
	return info
}

// subject is the user a SubjectAccessReview asks about.
func subject(spec authorizationv1.SubjectAccessReviewSpec) *auth.User {
	u := &auth.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	for k, v := range spec.Extra {
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		u.Extra[k] = v
	}
	return u
}

// decide asks the authorizer about u doing what the attributes describe,
// and answers as kube's SubjectAccessReview storage does, with its own
// helpers: an empty version is any version, the field and label
// selectors go to the authorizer (the Node authorizer lets a node list
// its own pods by spec.nodeName), and one that does not parse is said so
// in evaluationError.
func (r *request) decide(u *auth.User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := authorizer.AttributesRecord{User: u.Info()}
	if res != nil {
		var in authorizationinternal.ResourceAttributes
		if err := authorizationconv.Convert_v1_ResourceAttributes_To_authorization_ResourceAttributes(res, &in, nil); err != nil {
			return authorizationv1.SubjectAccessReviewStatus{EvaluationError: err.Error()}
		}
		a = authorizationutil.ResourceAttributesFrom(u.Info(), in)
	} else if nonRes != nil {
		a.Verb, a.Path = nonRes.Verb, nonRes.Path
	}
	decision, reason, err := r.s.authz.Authorize(r.ctx, a)
	return authorizationv1.SubjectAccessReviewStatus{Allowed: decision == authorizer.DecisionAllow, Denied: decision == authorizer.DecisionDeny, Reason: reason,
		EvaluationError: authorizationutil.BuildEvaluationError(err, a)}
}

// rules lists what u may do in namespace (SelfSubjectRulesReview).
func (r *request) rules(u *auth.User, namespace string) authorizationv1.SubjectRulesReviewStatus {
	resRules, nonResRules, incomplete, err := r.s.authz.RulesFor(r.ctx, u.Info(), namespace)
	st := authorizationv1.SubjectRulesReviewStatus{Incomplete: incomplete,
		ResourceRules: []authorizationv1.ResourceRule{}, NonResourceRules: []authorizationv1.NonResourceRule{}}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	for _, rule := range resRules {
		st.ResourceRules = append(st.ResourceRules, authorizationv1.ResourceRule{Verbs: rule.GetVerbs(),
			APIGroups: rule.GetAPIGroups(), Resources: rule.GetResources(), ResourceNames: rule.GetResourceNames()})
	}
	for _, rule := range nonResRules {
		st.NonResourceRules = append(st.NonResourceRules, authorizationv1.NonResourceRule{Verbs: rule.GetVerbs(), NonResourceURLs: rule.GetNonResourceURLs()})
	}
	return st
}
