package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestBootstrapPolicy: a ready server has kube's bootstrap ClusterRoles,
// bindings and system PriorityClasses; admin, edit and view carry the
// rules of the roles they aggregate, a new aggregated role's included.
func TestBootstrapPolicy(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	for _, path := range []string{
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/cluster-admin",
		"/apis/rbac.authorization.k8s.io/v1/clusterroles/system:controller:namespace-controller",
		"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/cluster-admin",
		"/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles/system::leader-locking-kube-scheduler",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical",
		"/apis/scheduling.k8s.io/v1/priorityclasses/system-cluster-critical",
	} {
		if r := h.do("GET", path, nil, nil); r.Code != http.StatusOK {
			t.Errorf("GET %s: %d", path, r.Code)
		}
	}
	viewRules := func() string {
		var cr struct{ Rules []any }
		r := h.do("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view", nil, nil)
		if err := json.Unmarshal(r.Body.Bytes(), &cr); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(cr.Rules)
		return string(b)
	}
	h.eventually("view aggregates system:aggregate-to-view", func() bool { return strings.Contains(viewRules(), `"configmaps"`) })

	body := `{"metadata":{"name":"widgets-view","labels":{"rbac.authorization.k8s.io/aggregate-to-view":"true"}},
		"rules":[{"apiGroups":["example.com"],"resources":["widgets"],"verbs":["get","list","watch"]}]}`
	if r := h.do("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
		t.Fatalf("create aggregated role: %d %s", r.Code, r.Body)
	}
	h.eventually("view aggregates the new role", func() bool { return strings.Contains(viewRules(), `"widgets"`) })
}
