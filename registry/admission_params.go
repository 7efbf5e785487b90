package registry

import (
	"context"
	"errors"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"
)

// paramAuthorization is kube's storage rule for admission policies and
// their bindings (pkg/registry/admissionregistration/*/authz.go): whoever
// names a policy's paramKind must be able to get every object of that
// kind, and whoever binds it to parameters must be able to get (or, by
// selector, list) them, unless they may escalate. Otherwise a policy
// author could have objects they cannot read — Secrets — decide
// admission. Writes without a user (this server's own) pass, as kube's
// loopback client does.
type paramAuthorization struct{ g *Registry }

func (paramAuthorization) beginCreate(context.Context, runtime.Object, bool) (func(bool), error) {
	return noFinish, nil
}

func (paramAuthorization) beginUpdate(context.Context, runtime.Object, runtime.Object, bool) (func(bool), error) {
	return noFinish, nil
}

func (paramAuthorization) afterDelete(context.Context, runtime.Object) {}

// referenceAuthorizer is a storage hook that also checks, once an object
// is valid, that its writer may use what it refers to; the answer is one
// more validation cause.
type referenceAuthorizer interface {
	authorizeReferences(ctx context.Context, obj, old runtime.Object) *field.Error
}

// authorizeReferences runs the kind's referenceAuthorizer on a valid
// write of the object itself (not a subresource's).
func (x *Resource) authorizeReferences(ctx context.Context, obj, old runtime.Object, subresource string) error {
	ra, ok := x.hooks.(referenceAuthorizer)
	if !ok || subresource != "" {
		return nil
	}
	if ferr := ra.authorizeReferences(ctx, obj, old); ferr != nil {
		return apierrors.NewInvalid(runtimeschema.GroupKind{Group: x.t.Group, Kind: x.t.Kind}, mustAccessor(obj).GetName(), field.ErrorList{ferr})
	}
	return nil
}

func (h paramAuthorization) authorizeReferences(ctx context.Context, obj, old runtime.Object) *field.Error {
	switch o := obj.(type) {
	case *admissionregistrationv1.ValidatingAdmissionPolicy:
		if o.Spec.ParamKind == nil {
			return nil
		}
		if p, ok := old.(*admissionregistrationv1.ValidatingAdmissionPolicy); ok && p.Spec.ParamKind != nil && *p.Spec.ParamKind == *o.Spec.ParamKind {
			return nil
		}
		return h.paramKind(ctx, o.Spec.ParamKind.APIVersion, o.Spec.ParamKind.Kind)
	case *admissionregistrationv1beta1.MutatingAdmissionPolicy:
		if o.Spec.ParamKind == nil {
			return nil
		}
		if p, ok := old.(*admissionregistrationv1beta1.MutatingAdmissionPolicy); ok && p.Spec.ParamKind != nil && *p.Spec.ParamKind == *o.Spec.ParamKind {
			return nil
		}
		return h.paramKind(ctx, o.Spec.ParamKind.APIVersion, o.Spec.ParamKind.Kind)
	case *admissionregistrationv1.ValidatingAdmissionPolicyBinding:
		// kube compares the old and new paramRef as structs of pointers,
		// which never match: every write of a binding with parameters is
		// checked.
		if ref := o.Spec.ParamRef; ref != nil {
			return h.paramRef(ctx, "v1", "validatingadmissionpolicies", o.Spec.PolicyName, ref.Name, ref.Namespace)
		}
	case *admissionregistrationv1beta1.MutatingAdmissionPolicyBinding:
		if ref := o.Spec.ParamRef; ref != nil {
			return h.paramRef(ctx, "v1beta1", "mutatingadmissionpolicies", o.Spec.PolicyName, ref.Name, ref.Namespace)
		}
	}
	return nil
}

// writer is the user a check is made for, or false when it need not be.
func (h paramAuthorization) writer(ctx context.Context) (user.Info, authorizer.Authorizer, bool) {
	u, ok := genericapirequest.UserFrom(ctx)
	a := h.g.authorizer()
	if !ok || a == nil || rbacregistry.EscalationAllowed(ctx) {
		return nil, nil, false
	}
	return u, a, true
}

// resolve is the resource a paramKind names, kube's "*" for what cannot
// be parsed or resolved.
func (h paramAuthorization) resolve(apiVersion, kind string) (group, version, resource string, parseErr, resolveErr error) {
	gv, err := runtimeschema.ParseGroupVersion(apiVersion)
	if err != nil {
		return "*", "*", "*", err, nil
	}
	m, err := h.g.RESTMapper().RESTMapping(gv.WithKind(kind).GroupKind(), gv.Version)
	if err != nil {
		return gv.Group, gv.Version, "*", nil, err
	}
	return gv.Group, gv.Version, m.Resource.Resource, nil, nil
}

func (h paramAuthorization) paramKind(ctx context.Context, apiVersion, kind string) *field.Error {
	u, a, check := h.writer(ctx)
	if !check {
		return nil
	}
	group, version, resource, _, _ := h.resolve(apiVersion, kind)
	d, _, err := a.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: "get", ResourceRequest: true, Name: "*", Namespace: "*",
		APIGroup: group, APIVersion: version, Resource: resource})
	if err == nil && d != authorizer.DecisionAllow {
		err = fmt.Errorf(`user %v must have "get" permission on all objects of the referenced paramKind (kind=%s, apiVersion=%s)`, u, kind, apiVersion)
	}
	if err != nil {
		return field.Forbidden(field.NewPath("spec", "paramKind"), err.Error())
	}
	return nil
}

// paramRef checks a binding's parameters against its policy's paramKind
// (read now; any resource when the policy or its kind is not found).
// A MutatingAdmissionPolicyBinding keeps kube 1.35's messages, whose
// verb and user are the other way round in one.
func (h paramAuthorization) paramRef(ctx context.Context, policyVersion, policies, policyName, name, namespace string) *field.Error {
	mutating := policies == "mutatingadmissionpolicies"
	u, a, check := h.writer(ctx)
	if !check {
		return nil
	}
	group, version, resource := "*", "*", "*"
	var policyErr, parseErr, resolveErr error
	var paramKind any
	if x, ok := h.g.Lookup("admissionregistration.k8s.io", policyVersion, policies); !ok {
		policyErr = errors.New("policies not served")
	} else if obj, _, err := x.Get(ctx, "", policyName); err != nil {
		policyErr = err
	} else {
		var apiVersion, kind string
		switch p := obj.(type) {
		case *admissionregistrationv1.ValidatingAdmissionPolicy:
			if p.Spec.ParamKind != nil {
				paramKind, apiVersion, kind = p.Spec.ParamKind, p.Spec.ParamKind.APIVersion, p.Spec.ParamKind.Kind
			}
		case *admissionregistrationv1beta1.MutatingAdmissionPolicy:
			if p.Spec.ParamKind != nil {
				paramKind, apiVersion, kind = p.Spec.ParamKind, p.Spec.ParamKind.APIVersion, p.Spec.ParamKind.Kind
			}
		}
		if paramKind != nil {
			group, version, resource, parseErr, resolveErr = h.resolve(apiVersion, kind)
		}
	}
	verb := "get"
	if name == "" {
		verb = "list"
	}
	d, _, err := a.Authorize(ctx, authorizer.AttributesRecord{User: u, Verb: verb, ResourceRequest: true, Name: name, Namespace: namespace,
		APIGroup: group, APIVersion: version, Resource: resource})
	switch {
	case err != nil && mutating:
	case err != nil:
		err = fmt.Errorf("failed to authorize request: %w", err)
	case d == authorizer.DecisionAllow:
		return nil
	case policyErr != nil:
		err = fmt.Errorf(`unable to get policy %s to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, policyName, u, verb)
	case parseErr != nil:
		err = fmt.Errorf(`unable to parse paramKind %v to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, paramKind, u, verb)
	case resolveErr != nil:
		err = fmt.Errorf(`unable to resolve paramKind %v to determine minimum required permissions and user %v does not have "%v" permission for all groups, versions and resources`, paramKind, u, verb)
	case mutating:
		err = fmt.Errorf(`user %v does not have "%v" permission on the object referenced by paramRef`, verb, u)
	default:
		err = fmt.Errorf(`user %v does not have "%v" permission on the object referenced by paramRef`, u, verb)
	}
	return field.Forbidden(field.NewPath("spec", "paramRef"), err.Error())
}
