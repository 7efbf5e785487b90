package authz

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/node"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

func TestCheckModes(t *testing.T) {
	for _, tc := range []struct {
		modes []string
		err   string
	}{
		{[]string{"Node", "RBAC"}, ""},
		{[]string{"AlwaysAllow"}, ""},
		{nil, "at least one authorization-mode must be passed"},
		{[]string{"RBAC", "ABAC"}, `authorization-mode "ABAC" is not a valid mode`},
		{[]string{"RBAC", "RBAC"}, `authorization-mode "RBAC" has mode specified more than once`},
	} {
		err := CheckModes(tc.modes)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("CheckModes(%v) = %v; want %q", tc.modes, err, tc.err)
		}
	}
}

// TestAuthorizerChain: system:masters is allowed before any mode; RBAC
// allows what a binding grants; a later mode decides what an earlier one
// has no opinion on; rules are listed from the modes that can list them.
func TestAuthorizerChain(t *testing.T) {
	index := func(objs ...any) cache.Indexer {
		i := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
		for _, o := range objs {
			if err := i.Add(o); err != nil {
				t.Fatal(err)
			}
		}
		return i
	}
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "reader"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "alice-reads"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "alice"}}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "reader"}}
	policy := Policy{RBAC: RBACListers{
		Roles: rbaclisters.NewRoleLister(index(role)), RoleBindings: rbaclisters.NewRoleBindingLister(index(binding)),
		ClusterRoles: rbaclisters.NewClusterRoleLister(index()), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(index()),
	}, NodeGraph: node.NewGraph()}
	ctx := context.Background()
	alice := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	admin := &user.DefaultInfo{Name: "root", Groups: []string{user.SystemPrivilegedGroup}}
	pods := func(u user.Info, verb, ns string) authorizer.Attributes {
		return authorizer.AttributesRecord{User: u, Verb: verb, Namespace: ns, APIVersion: "v1", Resource: "pods", ResourceRequest: true}
	}

	for _, tc := range []struct {
		modes []string
		attrs authorizer.Attributes
		want  authorizer.Decision
	}{
		{[]string{"Node", "RBAC"}, pods(alice, "list", "team"), authorizer.DecisionAllow},
		{[]string{"Node", "RBAC"}, pods(alice, "delete", "team"), authorizer.DecisionNoOpinion},
		{[]string{"Node", "RBAC"}, pods(alice, "list", "other"), authorizer.DecisionNoOpinion},
		{[]string{"Node", "RBAC"}, pods(admin, "delete", "other"), authorizer.DecisionAllow},
		// kube's AlwaysDeny has no opinion (with a reason): nothing allows.
		{[]string{"RBAC", "AlwaysDeny"}, pods(alice, "list", "team"), authorizer.DecisionAllow},
		{[]string{"RBAC", "AlwaysDeny"}, pods(alice, "delete", "team"), authorizer.DecisionNoOpinion},
		{[]string{"AlwaysDeny"}, pods(admin, "delete", "team"), authorizer.DecisionAllow},
		{[]string{"AlwaysAllow"}, pods(alice, "delete", "other"), authorizer.DecisionAllow},
	} {
		a, err := NewAuthorizer(tc.modes, policy)
		if err != nil {
			t.Fatal(err)
		}
		if got, _, _ := a.Authorize(ctx, tc.attrs); got != tc.want {
			t.Errorf("%v: %s %s in %q = %v; want %v", tc.modes, tc.attrs.GetUser().GetName(), tc.attrs.GetVerb(), tc.attrs.GetNamespace(), got, tc.want)
		}
	}

	a, err := NewAuthorizer([]string{"Node", "RBAC"}, policy)
	if err != nil {
		t.Fatal(err)
	}
	res, _, incomplete, err := a.RulesFor(ctx, alice, "team")
	if err != nil || incomplete || len(res) != 1 || strings.Join(res[0].GetVerbs(), ",") != "get,list" {
		t.Errorf("alice's rules in team: %+v incomplete=%v err=%v", res, incomplete, err)
	}
	if _, err := NewAuthorizer([]string{"RBAC"}, Policy{}); err == nil {
		t.Error("RBAC without listers was accepted")
	}
}

// BenchmarkAuthorize: one decision of the chain over kube's bootstrap
// policy (about 70 ClusterRoleBindings), for the admin (system:masters),
// a user bound to cluster-admin by a ClusterRoleBinding, and a user bound
// to a Role in the request's namespace (every ClusterRoleBinding visited
// first).
func BenchmarkAuthorize(b *testing.B) {
	index := func() cache.Indexer {
		return cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	}
	roles, bindings, croles, cbindings := index(), index(), index(), index()
	for _, r := range bootstrappolicy.ClusterRoles() {
		_ = croles.Add(r.DeepCopy())
	}
	for _, rb := range bootstrappolicy.ClusterRoleBindings() {
		_ = cbindings.Add(rb.DeepCopy())
	}
	_ = cbindings.Add(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "bench-admin"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "bench"}}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "cluster-admin"}})
	_ = roles.Add(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm"},
		Rules: []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}}})
	_ = bindings.Add(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "cm"},
		Subjects: []rbacv1.Subject{{Kind: "User", Name: "dev"}}, RoleRef: rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "cm"}})
	a, err := NewAuthorizer(DefaultModes, Policy{NodeGraph: node.NewGraph(), RBAC: RBACListers{
		Roles: rbaclisters.NewRoleLister(roles), RoleBindings: rbaclisters.NewRoleBindingLister(bindings),
		ClusterRoles: rbaclisters.NewClusterRoleLister(croles), ClusterRoleBindings: rbaclisters.NewClusterRoleBindingLister(cbindings)}})
	if err != nil {
		b.Fatal(err)
	}
	for _, u := range []*user.DefaultInfo{
		{Name: "admin", Groups: []string{user.SystemPrivilegedGroup, user.AllAuthenticated}},
		{Name: "bench", Groups: []string{user.AllAuthenticated}},
		{Name: "dev", Groups: []string{user.AllAuthenticated}},
	} {
		b.Run(u.Name, func(b *testing.B) {
			attrs := authorizer.AttributesRecord{User: u, Verb: "get", Namespace: "team", APIVersion: "v1", Resource: "configmaps", Name: "c", ResourceRequest: true}
			b.ReportAllocs()
			for range b.N {
				if d, _, _ := a.Authorize(context.Background(), attrs); d != authorizer.DecisionAllow {
					b.Fatalf("%s: %v", u.Name, d)
				}
			}
		})
	}
}
