package controllers

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/auth/rbac/reconciliation"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"

	"github.com/tabula-dev/tabula/registry"
)

// reconcileBootstrapPolicy brings kube's bootstrap RBAC policy up to date
// at every start, as kube-apiserver's rbac/bootstrap-roles post-start hook
// does, with kube's own reconciliation: a missing role or binding is
// created; an existing role gains the rules and aggregation selectors it
// lacks and a binding the subjects it lacks (nothing anyone added is
// taken away); a binding whose roleRef changed is recreated; an object
// annotated rbac.authorization.kubernetes.io/autoupdate: "false" is left
// alone. Replicas starting together on one database may race: a conflict
// re-reads and tries again, a create that loses is reconciled as an
// update.
func (m *Manager) reconcileBootstrapPolicy(ctx context.Context) error {
	var g errgroup.Group
	g.SetLimit(bootstrapWorkers)
	roles := func(resource string) *registryRBAC {
		return &registryRBAC{ctx: ctx, x: m.api.MustLookup(rbacGroup, "v1", resource)}
	}
	croles, cbindings, nsroles, nsbindings := roles("clusterroles"), roles("clusterrolebindings"), roles("roles"), roles("rolebindings")
	role := func(kind string, owner reconciliation.RuleOwner, client reconciliation.RuleOwnerModifier) {
		g.Go(func() error {
			return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
				opts := reconciliation.ReconcileRoleOptions{Role: owner.DeepCopyRuleOwner(), Client: client, Confirm: true}
				res, err := opts.Run()
				if err != nil {
					return fmt.Errorf("unable to reconcile %s %s/%s: %w", kind, owner.GetNamespace(), owner.GetName(), err)
				}
				if res.Operation == reconciliation.ReconcileUpdate && !res.Protected {
					m.log.Info("bootstrap role updated with additional permissions", "kind", kind, "namespace", owner.GetNamespace(), "name", owner.GetName(), "rules", len(res.MissingRules))
				}
				return nil
			})
		})
	}
	binding := func(kind string, b reconciliation.RoleBinding, client reconciliation.RoleBindingModifier) {
		g.Go(func() error {
			return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
				opts := reconciliation.ReconcileRoleBindingOptions{RoleBinding: b.DeepCopyRoleBinding(), Client: client, Confirm: true}
				res, err := opts.Run()
				if err != nil {
					return fmt.Errorf("unable to reconcile %s %s/%s: %w", kind, b.GetNamespace(), b.GetName(), err)
				}
				if (res.Operation == reconciliation.ReconcileUpdate || res.Operation == reconciliation.ReconcileRecreate) && !res.Protected {
					m.log.Info("bootstrap binding updated", "kind", kind, "namespace", b.GetNamespace(), "name", b.GetName(), "operation", string(res.Operation))
				}
				return nil
			})
		})
	}
	for _, r := range append(bootstrappolicy.ClusterRoles(), bootstrappolicy.ControllerRoles()...) {
		role("clusterrole", reconciliation.ClusterRoleRuleOwner{ClusterRole: r.DeepCopy()}, croles)
	}
	for _, b := range append(bootstrappolicy.ClusterRoleBindings(), bootstrappolicy.ControllerRoleBindings()...) {
		binding("clusterrolebinding", reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b.DeepCopy()}, cbindings.bindings())
	}
	for _, rs := range bootstrappolicy.NamespaceRoles() {
		for _, r := range rs {
			role("role", reconciliation.RoleRuleOwner{Role: r.DeepCopy()}, nsroles)
		}
	}
	for _, bs := range bootstrappolicy.NamespaceRoleBindings() {
		for _, b := range bs {
			binding("rolebinding", reconciliation.RoleBindingAdapter{RoleBinding: b.DeepCopy()}, nsbindings.bindings())
		}
	}
	return g.Wait()
}

const rbacGroup = "rbac.authorization.k8s.io"

// registryRBAC is the reconciliation's client for one RBAC resource: the
// registry, writing as the apiserver.
type registryRBAC struct {
	ctx context.Context
	x   *registry.Resource
}

var writeAsAPIServer = registry.WriteOptions{Manager: registry.ManagerAPIServer}

func (c *registryRBAC) get(namespace, name string) (runtime.Object, error) {
	obj, _, err := c.x.Get(c.ctx, namespace, name)
	return obj, err
}

func (c *registryRBAC) create(in runtime.Object) (runtime.Object, error) {
	acc := in.(metav1.Object)
	res, err := c.x.Create(c.ctx, acc.GetNamespace(), in, writeAsAPIServer)
	return res.Obj, err
}

// update writes in over the version it was read from (its
// resourceVersion), so a concurrent change is a conflict, retried.
func (c *registryRBAC) update(in runtime.Object) (runtime.Object, error) {
	acc := in.(metav1.Object)
	res, _, err := c.x.Update(c.ctx, acc.GetNamespace(), acc.GetName(), func(runtime.Object) (runtime.Object, error) {
		return in, nil
	}, registry.UpdateOptions{WriteOptions: writeAsAPIServer})
	return res.Obj, err
}

func (c *registryRBAC) Get(namespace, name string) (reconciliation.RuleOwner, error) {
	obj, err := c.get(namespace, name)
	if err != nil {
		return nil, err
	}
	return ruleOwner(obj), nil
}

func (c *registryRBAC) Create(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	obj, err := c.create(in.GetObject())
	if err != nil {
		return nil, err
	}
	return ruleOwner(obj), nil
}

func (c *registryRBAC) Update(in reconciliation.RuleOwner) (reconciliation.RuleOwner, error) {
	obj, err := c.update(in.GetObject())
	if err != nil {
		return nil, err
	}
	return ruleOwner(obj), nil
}

func ruleOwner(obj runtime.Object) reconciliation.RuleOwner {
	if r, ok := obj.(*rbacv1.ClusterRole); ok {
		return reconciliation.ClusterRoleRuleOwner{ClusterRole: r}
	}
	return reconciliation.RoleRuleOwner{Role: obj.(*rbacv1.Role)}
}

// registryBindings is registryRBAC as a binding client.
type registryBindings struct{ *registryRBAC }

func (c *registryRBAC) bindings() registryBindings { return registryBindings{c} }

func (c registryBindings) Get(namespace, name string) (reconciliation.RoleBinding, error) {
	obj, err := c.get(namespace, name)
	if err != nil {
		return nil, err
	}
	return roleBinding(obj), nil
}

func (c registryBindings) Create(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	obj, err := c.create(in.GetObject())
	if err != nil {
		return nil, err
	}
	return roleBinding(obj), nil
}

func (c registryBindings) Update(in reconciliation.RoleBinding) (reconciliation.RoleBinding, error) {
	obj, err := c.update(in.GetObject())
	if err != nil {
		return nil, err
	}
	return roleBinding(obj), nil
}

// Delete removes a binding being recreated (its roleRef changed), only
// the incarnation that was read.
func (c registryBindings) Delete(namespace, name string, uid types.UID) error {
	_, err := c.x.Delete(c.ctx, namespace, name, &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	return err
}

func roleBinding(obj runtime.Object) reconciliation.RoleBinding {
	if b, ok := obj.(*rbacv1.ClusterRoleBinding); ok {
		return reconciliation.ClusterRoleBindingAdapter{ClusterRoleBinding: b}
	}
	return reconciliation.RoleBindingAdapter{RoleBinding: obj.(*rbacv1.RoleBinding)}
}
