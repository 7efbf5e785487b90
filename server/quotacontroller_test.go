package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestQuotaControllerAsKube: usage is recounted when an update changes it
// (a Service's type), as kube's update filter says; kinds kube does not
// count (events, cluster-scoped ones) stay out of status.used; and a
// namespace default a full quota refused is made once there is room.
func TestQuotaControllerAsKube(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"q1"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("namespace: %d %s", r.Code, r.Body)
	}
	const ns = "/api/v1/namespaces/q1"
	h.eventually("root CA published", func() bool { return h.do("GET", ns+"/configmaps/kube-root-ca.crt", nil, nil).Code == http.StatusOK })
	if r := h.do("POST", ns+"/resourcequotas", ct, []byte(`{"metadata":{"name":"q"},"spec":{"hard":{"configmaps":"1",
	  "services.loadbalancers":"2","count/events":"1","count/namespaces":"5"}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("quota: %d %s", r.Code, r.Body)
	}
	used := func() map[string]string {
		var q struct {
			Status struct{ Used map[string]string }
		}
		_ = json.Unmarshal(h.do("GET", ns+"/resourcequotas/q", nil, nil).Body.Bytes(), &q)
		return q.Status.Used
	}
	h.eventually("quota counted", func() bool { return used()["configmaps"] == "1" })
	for _, k := range []string{"count/events", "count/namespaces"} {
		if v, ok := used()[k]; ok {
			t.Errorf("status.used[%s] = %q; kube counts no such resource", k, v)
		}
	}

	if r := h.do("POST", ns+"/services", ct, []byte(`{"metadata":{"name":"lb"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("service: %d %s", r.Code, r.Body)
	}
	h.eventually("load balancer counted", func() bool { return used()["services.loadbalancers"] == "1" })
	if r := h.do("PATCH", ns+"/services/lb", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"spec":{"type":"ClusterIP"}}`)); r.Code != http.StatusOK {
		t.Fatalf("service to ClusterIP: %d %s", r.Code, r.Body)
	}
	h.eventually("load balancer given back", func() bool { return used()["services.loadbalancers"] == "0" })

	// The root CA's ConfigMap fills the quota: deleted, it comes back
	// once the recount makes room, and the room is its.
	if r := h.do("DELETE", ns+"/configmaps/kube-root-ca.crt", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete root CA: %d %s", r.Code, r.Body)
	}
	h.eventually("root CA published again", func() bool { return h.do("GET", ns+"/configmaps/kube-root-ca.crt", nil, nil).Code == http.StatusOK })
	if r := h.do("POST", ns+"/configmaps", ct, []byte(`{"metadata":{"name":"x"}}`)); r.Code != http.StatusForbidden || !strings.Contains(r.Body.String(), "exceeded quota") {
		t.Errorf("a ConfigMap beyond the quota: %d %s; want 403 exceeded quota", r.Code, r.Body)
	}
}
