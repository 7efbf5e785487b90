package controllers

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestEqualRules: rules compare field by field, a nil list equal to an
// empty one, order within a list significant, as their printed forms
// compared; appendNewRules adds only the rules not already there.
func TestEqualRules(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	for _, c := range []struct {
		name string
		a, b []rbacv1.PolicyRule
		want bool
	}{
		{"same", []rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{get}, true},
		{"nil and empty lists", []rbacv1.PolicyRule{{Verbs: []string{"get"}}}, []rbacv1.PolicyRule{{Verbs: []string{"get"}, ResourceNames: []string{}}}, true},
		{"no rules and nil", nil, []rbacv1.PolicyRule{}, true},
		{"another verb", []rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}, false},
		{"verbs in another order", []rbacv1.PolicyRule{{Verbs: []string{"get", "list"}}}, []rbacv1.PolicyRule{{Verbs: []string{"list", "get"}}}, false},
		{"a resource name", []rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}, ResourceNames: []string{"p"}}}, false},
		{"a URL", []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/a"}}}, []rbacv1.PolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/b"}}}, false},
		{"more rules", []rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{get, get}, false},
	} {
		if got := equalRules(c.a, c.b); got != c.want {
			t.Errorf("%s: equalRules = %v; want %v", c.name, got, c.want)
		}
	}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	got := appendNewRules([]rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{get, list, list})
	if !equalRules(got, []rbacv1.PolicyRule{get, list}) {
		t.Errorf("appendNewRules: %v", got)
	}
}
