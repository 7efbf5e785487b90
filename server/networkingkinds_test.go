package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNetworkingKindsAsKube: a RuntimeClass update is validated whole and
// warns of deprecated node labels; a ServiceCIDR keeps the status a create
// or an update carries; an IPAddress's generateName is its name; an
// EndpointSlice update that sends only what v1 drops still moves the
// generation, as kube compares before dropping.
func TestNetworkingKindsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}

	const rcs = "/apis/node.k8s.io/v1/runtimeclasses"
	rec := h.do("POST", rcs, hd, []byte(`{"metadata":{"name":"rc1"},"handler":"h","scheduling":{"nodeSelector":{"beta.kubernetes.io/os":"linux"}}}`))
	if w := strings.Join(rec.Header().Values("Warning"), "\n"); rec.Code != http.StatusCreated ||
		w != `299 - "scheduling.nodeSelector: deprecated since v1.14; use \"kubernetes.io/os\" instead"` {
		t.Errorf("runtime class create: %d, warnings %q", rec.Code, w)
	}
	var cur map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &cur); err != nil {
		t.Fatal(err)
	}
	cur["overhead"] = map[string]interface{}{"podFixed": map[string]string{"cpu": "-1"}}
	b, _ := json.Marshal(cur)
	rec = h.do("PUT", rcs+"/rc1", hd, b)
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `overhead.limits[cpu]: Invalid value: \"-1\": must be greater than or equal to 0`) {
		t.Errorf("runtime class update with negative overhead: %d %s; want 422", rec.Code, rec.Body)
	}

	const g = "/apis/networking.k8s.io/v1"
	status := `{"conditions":[{"type":"Ready","status":"True","reason":"R","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}`
	rec = h.do("POST", g+"/servicecidrs", hd, []byte(`{"metadata":{"name":"extra"},"spec":{"cidrs":["10.200.0.0/24"]},"status":`+status+`}`))
	if rec.Code != http.StatusCreated || !strings.Contains(rec.Body.String(), `"reason":"R"`) {
		t.Errorf("service CIDR create with status: %d %s; want the status kept", rec.Code, rec.Body)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &cur); err != nil {
		t.Fatal(err)
	}
	cur["status"] = map[string]interface{}{"conditions": []map[string]string{{"type": "Ready", "status": "False", "reason": "Changed", "message": "m", "lastTransitionTime": "2026-01-01T00:00:00Z"}}}
	b, _ = json.Marshal(cur)
	rec = h.do("PUT", g+"/servicecidrs/extra", hd, b)
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"reason":"Changed"`) {
		t.Errorf("service CIDR update with status: %d %s; want the status written", rec.Code, rec.Body)
	}

	rec = h.do("POST", g+"/ipaddresses", hd, []byte(`{"metadata":{"generateName":"10.200.0.7"},"spec":{"parentRef":{"resource":"services","namespace":"default","name":"s"}}}`))
	var ip struct{ Metadata struct{ Name string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &ip); rec.Code != http.StatusCreated || err != nil || ip.Metadata.Name != "10.200.0.7" {
		t.Errorf("IP address by generateName: %d %s; want 201 named 10.200.0.7", rec.Code, rec.Body)
	}

	const eps = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
	rec = h.do("POST", eps, hd, []byte(`{"metadata":{"name":"es1"},"addressType":"IPv4","endpoints":[{"addresses":["10.0.0.1"]}]}`))
	if err := json.Unmarshal(rec.Body.Bytes(), &cur); rec.Code != http.StatusCreated || err != nil {
		t.Fatalf("endpoint slice: %d %s", rec.Code, rec.Body)
	}
	cur["endpoints"] = []map[string]interface{}{{"addresses": []string{"10.0.0.1"}, "deprecatedTopology": map[string]string{"kubernetes.io/hostname": "n1"}}}
	b, _ = json.Marshal(cur)
	rec = h.do("PUT", eps+"/es1", hd, b)
	var es struct {
		Metadata  struct{ Generation int }
		Endpoints []struct{ DeprecatedTopology map[string]string }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &es); rec.Code != http.StatusOK || err != nil || es.Metadata.Generation != 2 ||
		len(es.Endpoints) != 1 || es.Endpoints[0].DeprecatedTopology != nil {
		t.Errorf("endpoint slice update sending deprecatedTopology: %d %s; want generation 2, the topology dropped", rec.Code, rec.Body)
	}
}
