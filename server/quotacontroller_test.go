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

// TestQuotaRecountLooksAgain: admission charges a quota before the object
// it admits is stored, so a recount can fall between the two and give
// the usage back; a recount that lowers usage is made again shortly, so
// usage it lowered and that is still lower (here a charge the test writes
// for an object that never comes) is settled without waiting for the
// five-minute resync.
func TestQuotaRecountLooksAgain(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"q2"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("namespace: %d %s", r.Code, r.Body)
	}
	const ns = "/api/v1/namespaces/q2"
	if r := h.do("POST", ns+"/resourcequotas", ct, []byte(`{"metadata":{"name":"q"},"spec":{"hard":{"services.loadbalancers":"2"}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("quota: %d %s", r.Code, r.Body)
	}
	type quota struct {
		Metadata map[string]any `json:"metadata"`
		Spec     map[string]any `json:"spec"`
		Status   struct {
			Hard map[string]string `json:"hard"`
			Used map[string]string `json:"used"`
		} `json:"status"`
	}
	get := func() quota {
		var q quota
		_ = json.Unmarshal(h.do("GET", ns+"/resourcequotas/q", nil, nil).Body.Bytes(), &q)
		return q
	}
	h.eventually("quota counted", func() bool { return get().Status.Used["services.loadbalancers"] == "0" })
	// charge writes what admission writes for a load balancer being
	// created.
	charge := func() {
		t.Helper()
		q := get()
		q.Status.Used["services.loadbalancers"] = "1"
		b, _ := json.Marshal(q)
		if r := h.do("PUT", ns+"/resourcequotas/q/status", ct, b); r.Code != http.StatusOK {
			t.Fatalf("charge: %d %s", r.Code, r.Body)
		}
	}
	charge()
	// A delete in the namespace has it recounted: the charge goes back.
	if r := h.do("POST", ns+"/configmaps", ct, []byte(`{"metadata":{"name":"c"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("configmap: %d %s", r.Code, r.Body)
	}
	if r := h.do("DELETE", ns+"/configmaps/c", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete configmap: %d %s", r.Code, r.Body)
	}
	h.eventually("the recount to give the charge back", func() bool { return get().Status.Used["services.loadbalancers"] == "0" })
	// Charged again just after that recount, with nothing else in the
	// namespace changing: the second look settles it.
	charge()
	h.eventually("the second look to give it back", func() bool { return get().Status.Used["services.loadbalancers"] == "0" })
}
