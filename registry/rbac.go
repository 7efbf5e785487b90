package registry

import (
	"context"
	"errors"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	rbacinternal "k8s.io/kubernetes/pkg/apis/rbac"
	rbacregistry "k8s.io/kubernetes/pkg/registry/rbac"
	rbacvalidation "k8s.io/kubernetes/pkg/registry/rbac/validation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
)

const rbacGroup = "rbac.authorization.k8s.io"

// RBAC is the Roles, ClusterRoles and their bindings as the watch keeps
// them on this replica: what the RBAC authorizer and the escalation check
// read.
type RBAC struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
	caches              []*Cache
}

// WaitSynced waits until every RBAC cache holds a complete view.
func (p *RBAC) WaitSynced(ctx context.Context) error {
	for _, c := range p.caches {
		if err := c.WaitSynced(ctx); err != nil {
			return err
		}
	}
	return nil
}

// resolver lists a user's rules from the caches, as kube's RBAC storage
// does for its escalation check.
func (p *RBAC) resolver() *rbacvalidation.DefaultRuleResolver {
	return rbacvalidation.NewDefaultRuleResolver(&rbac.RoleGetter{Lister: p.Roles}, &rbac.RoleBindingLister{Lister: p.RoleBindings},
		&rbac.ClusterRoleGetter{Lister: p.ClusterRoles}, &rbac.ClusterRoleBindingLister{Lister: p.ClusterRoleBindings})
}

// rbacState is the registry's RBAC caches and the authorizer that decides
// the escalate and bind verbs.
type rbacState struct {
	once   sync.Once
	rbac   *RBAC
	authMu sync.Mutex
	authz  authorizer.Authorizer
}

// RBAC returns the RBAC caches, made on first use (before RunCaches).
func (g *Registry) RBAC() *RBAC {
	g.rbac.once.Do(func() {
		c := func(resource string) *Cache { return g.Cache(rbacGroup, "v1", resource, true) }
		roles, bindings, croles, cbindings := c("roles"), c("rolebindings"), c("clusterroles"), c("clusterrolebindings")
		g.rbac.rbac = &RBAC{
			Roles:               rbaclisters.NewRoleLister(roles.Indexer()),
			RoleBindings:        rbaclisters.NewRoleBindingLister(bindings.Indexer()),
			ClusterRoles:        rbaclisters.NewClusterRoleLister(croles.Indexer()),
			ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(cbindings.Indexer()),
			caches:              []*Cache{roles, bindings, croles, cbindings},
		}
	})
	return g.rbac.rbac
}

// SetAuthorizer gives the registry the server's authorizer, which decides
// whether a user may escalate a role or bind one they do not hold.
func (g *Registry) SetAuthorizer(a authorizer.Authorizer) {
	g.rbac.authMu.Lock()
	g.rbac.authz = a
	g.rbac.authMu.Unlock()
}

func (g *Registry) authorizer() authorizer.Authorizer {
	g.rbac.authMu.Lock()
	defer g.rbac.authMu.Unlock()
	return g.rbac.authz
}

// rbacEscalation is kube's RBAC storage rule: nobody creates or changes a
// Role, ClusterRole or binding that grants more than they hold, unless
// they may escalate (roles) or bind (bindings) it, or are system:masters.
// Writes without a user (this server's own controllers) are the
// apiserver's, as kube's loopback client is system:masters.
type rbacEscalation struct {
	g        *Registry
	resource string
}

func (h rbacEscalation) beginCreate(ctx context.Context, obj runtime.Object, _ bool) (func(bool), error) {
	return noFinish, h.check(ctx, obj, nil)
}

func (h rbacEscalation) beginUpdate(ctx context.Context, obj, old runtime.Object, _ bool) (func(bool), error) {
	if rbacregistry.IsOnlyMutatingGCFields(obj, old, equality.Semantic) {
		return noFinish, nil
	}
	return noFinish, h.check(ctx, obj, old)
}

func (rbacEscalation) afterDelete(context.Context, runtime.Object) {}

// fullAuthority is what setting an aggregationRule requires: it can
// gather anything.
var fullAuthority = []rbacv1.PolicyRule{
	{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
	{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
}

func (h rbacEscalation) check(ctx context.Context, obj, old runtime.Object) error {
	if _, ok := genericapirequest.UserFrom(ctx); !ok || rbacregistry.EscalationAllowed(ctx) {
		return nil
	}
	a := h.g.authorizer()
	resolver := h.g.RBAC().resolver()
	gr := rbacinternal.Resource(h.resource)
	switch o := obj.(type) {
	case *rbacv1.Role:
		ctx = genericapirequest.WithNamespace(ctx, o.Namespace)
		if rbacregistry.RoleEscalationAuthorized(ctx, a) {
			return nil
		}
		if err := rbacvalidation.ConfirmNoEscalation(ctx, resolver, o.Rules); err != nil {
			return apierrors.NewForbidden(gr, o.Name, err)
		}
	case *rbacv1.ClusterRole:
		if rbacregistry.RoleEscalationAuthorized(ctx, a) {
			return nil
		}
		if err := rbacvalidation.ConfirmNoEscalation(ctx, resolver, o.Rules); err != nil {
			return apierrors.NewForbidden(gr, o.Name, err)
		}
		oldRole, _ := old.(*rbacv1.ClusterRole)
		if aggregates(o) || (oldRole != nil && aggregates(oldRole)) {
			if err := rbacvalidation.ConfirmNoEscalation(ctx, resolver, fullAuthority); err != nil {
				return apierrors.NewForbidden(gr, o.Name, errors.New("must have cluster-admin privileges to use the aggregationRule"))
			}
		}
	case *rbacv1.RoleBinding:
		ctx = genericapirequest.WithNamespace(ctx, o.Namespace)
		return h.checkBinding(ctx, a, resolver, o.Name, o.Namespace, o.RoleRef)
	case *rbacv1.ClusterRoleBinding:
		return h.checkBinding(ctx, a, resolver, o.Name, "", o.RoleRef)
	}
	return nil
}

// checkBinding allows a binding its creator may bind, or whose role's
// rules the creator holds in the binding's namespace.
func (h rbacEscalation) checkBinding(ctx context.Context, a authorizer.Authorizer, resolver *rbacvalidation.DefaultRuleResolver, name, namespace string, ref rbacv1.RoleRef) error {
	internal := rbacinternal.RoleRef{APIGroup: ref.APIGroup, Kind: ref.Kind, Name: ref.Name}
	if rbacregistry.BindingAuthorized(ctx, internal, namespace, a) {
		return nil
	}
	if ref.Kind == "Role" && namespace == "" {
		// A cluster binding's Role: kube's check reads it through the
		// Role storage, which needs a namespace (validation, which would
		// refuse the kind, comes after).
		return apierrors.NewBadRequest("Namespace parameter required.")
	}
	rules, err := resolver.GetRoleReferenceRules(ctx, ref, namespace)
	if apierrors.IsNotFound(err) {
		// The caches' listers name the resource in the singular; kube's
		// check reads the role through its storage, which names it
		// "roles" or "clusterroles".
		resource := "roles"
		if ref.Kind == "ClusterRole" {
			resource = "clusterroles"
		}
		return apierrors.NewNotFound(rbacv1.Resource(resource), ref.Name)
	}
	if err != nil {
		return err
	}
	if err := rbacvalidation.ConfirmNoEscalation(ctx, resolver, rules); err != nil {
		return apierrors.NewForbidden(rbacinternal.Resource(h.resource), name, err)
	}
	return nil
}

func aggregates(r *rbacv1.ClusterRole) bool {
	return r.AggregationRule != nil && len(r.AggregationRule.ClusterRoleSelectors) > 0
}
