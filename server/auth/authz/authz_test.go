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
