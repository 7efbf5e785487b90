package controllers

import "testing"

// kube-controller-manager's --controllers semantics.
func TestEnabledIn(t *testing.T) {
	for _, c := range []struct {
		list []string
		want bool
	}{
		{nil, true},
		{[]string{"*"}, true},
		{[]string{"*", "-garbage-collector-controller"}, false},
		{[]string{"-garbage-collector-controller", "*"}, false},
		{[]string{"namespace-controller"}, false},
		{[]string{"garbage-collector-controller"}, true},
		{[]string{"*", "-namespace-controller"}, true},
	} {
		if got := enabledIn(c.list, GarbageCollectorController); got != c.want {
			t.Errorf("--controllers=%v: garbage collector enabled %v; want %v", c.list, got, c.want)
		}
	}
}
