package server

import (
	"fmt"
	corev1 "k8s.io/api/core/v1"
	"net/http"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"

	"github.com/tabula-dev/tabula/server/auth"
)

// The review resources of authentication.k8s.io and authorization.k8s.io:
// a create asks a question about a user and gets the answer in status,
// as kube-apiserver's REST storage for them does. Nothing is stored.

// review answers a create of a Virtual type.
func (r *request) review(obj runtime.Object, dryRun bool) error {
	if r.t.Namespaced {
		acc, err := meta.Accessor(obj)
		if err != nil {
			return err
		}
		if err := r.bodyNamespace(acc); err != nil {
			return err
		}
		acc.SetNamespace(r.ri.Namespace)
	}
	if r.t.Validate != nil {
		if errs := r.t.Validate(obj, nil); len(errs) > 0 {
			return apierrors.NewInvalid(runtimeschema.GroupKind{Group: r.t.Group, Kind: r.t.Kind}, "", errs)
		}
	}
	requester, _ := auth.UserFrom(r.ctx)
	switch o := obj.(type) {
	case *corev1.Binding:
		return r.bind(o, dryRun)
	case *authenticationv1.SelfSubjectReview:
		if requester == nil {
			return apierrors.NewBadRequest("no user present on request")
		}
		o.Status.UserInfo = userInfo(requester)
	case *authenticationv1.TokenReview:
		if o.Spec.Token == "" {
			return apierrors.NewBadRequest("token is required for TokenReview in authentication")
		}
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
		if requester == nil {
			return apierrors.NewBadRequest("no user present on request")
		}
		o.Status = r.decide(requester, o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SubjectAccessReview:
		o.Status = r.decide(subject(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.LocalSubjectAccessReview:
		// Validation made spec.resourceAttributes.namespace the URL's.
		o.Status = r.decide(subject(o.Spec), o.Spec.ResourceAttributes, o.Spec.NonResourceAttributes)
	case *authorizationv1.SelfSubjectRulesReview:
		if requester == nil {
			return apierrors.NewBadRequest("no user present on request")
		}
		if o.Spec.Namespace == "" {
			return apierrors.NewBadRequest("no namespace on request")
		}
		o.Status = r.rules(requester, o.Spec.Namespace)
	default:
		return apierrors.NewBadRequest(fmt.Sprintf("%s is not a review this server answers", r.t.Kind))
	}
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	return r.writeObject(http.StatusCreated, out, obj)
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
// and answers as kube's SubjectAccessReview storage does.
func (r *request) decide(u *auth.User, res *authorizationv1.ResourceAttributes, nonRes *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	a := authorizer.AttributesRecord{User: u.Info()}
	if res != nil {
		a.ResourceRequest = true
		a.Verb, a.Namespace, a.APIGroup, a.APIVersion = res.Verb, res.Namespace, res.Group, res.Version
		a.Resource, a.Subresource, a.Name = res.Resource, res.Subresource, res.Name
	} else if nonRes != nil {
		a.Verb, a.Path = nonRes.Verb, nonRes.Path
	}
	decision, reason, err := r.s.authz.Authorize(r.ctx, a)
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: decision == authorizer.DecisionAllow, Denied: decision == authorizer.DecisionDeny, Reason: reason}
	if err != nil {
		st.EvaluationError = err.Error()
	}
	return st
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
