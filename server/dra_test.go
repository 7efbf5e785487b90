package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDRAStrategiesAsKube: kube's dynamic resource allocation strategies
// drop the fields of features kube 1.35 leaves off (extended resources,
// device taints), warn of a slice's upper-case driver, and drop a claim's
// device statuses when the devices are deallocated, so a driver or
// scheduler clearing only the allocation is not refused.
func TestDRAStrategiesAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	const g = "/apis/resource.k8s.io/v1"
	spec := func(rec *httptest.ResponseRecorder) string {
		var o struct{ Spec json.RawMessage }
		_ = json.Unmarshal(rec.Body.Bytes(), &o)
		return string(o.Spec)
	}
	rec := h.do("POST", g+"/deviceclasses", hd, []byte(`{"metadata":{"name":"dc"},"spec":{"extendedResourceName":"example.com/gpu"}}`))
	if rec.Code != http.StatusCreated || strings.Contains(spec(rec), "extendedResourceName") {
		t.Errorf("device class: %d %s; want extendedResourceName dropped", rec.Code, rec.Body)
	}
	rec = h.do("POST", g+"/resourceslices", hd, []byte(`{"metadata":{"name":"rs"},"spec":{"driver":"X.Example.com","nodeName":"n","pool":{"name":"p","resourceSliceCount":1},
	  "devices":[{"name":"d","taints":[{"key":"k","effect":"NoSchedule"}]}]}}`))
	if rec.Code != http.StatusCreated || strings.Contains(spec(rec), "taints") {
		t.Errorf("resource slice: %d %s; want the taints dropped", rec.Code, rec.Body)
	}
	if w := strings.Join(rec.Header().Values("Warning"), "\n"); !strings.Contains(w, `spec.driver: driver names should be lowercase; \"X.Example.com\" contains uppercase characters`) {
		t.Errorf("resource slice warnings %q; want the upper-case driver's", w)
	}

	claims := "/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
	// Admin access to devices only in a namespace labelled for it.
	admin := `{"metadata":{"name":"adm"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"dc","adminAccess":true}}]}}}`
	rec = h.do("POST", claims, hd, []byte(admin))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(),
		"spec.devices.requests[0].adminAccess: Forbidden: admin access to devices requires the `resource.kubernetes.io/admin-access: true` label on the containing namespace") {
		t.Errorf("admin access in an unlabelled namespace: %d %s; want kube's 422", rec.Code, rec.Body)
	}
	h.mustDo("PATCH", "/api/v1/namespaces/default", "application/merge-patch+json", `{"metadata":{"labels":{"resource.kubernetes.io/admin-access":"true"}}}`, http.StatusOK)
	h.mustDo("POST", claims, "application/json", admin, http.StatusCreated)
	h.mustDo("POST", claims, "application/json", `{"metadata":{"name":"c"},"spec":{"devices":{"requests":[{"name":"r","exactly":{"deviceClassName":"dc"}}]}}}`, http.StatusCreated)
	allocated := `{"allocation":{"devices":{"results":[{"request":"r","driver":"x.example.com","pool":"p","device":"d"}]}},
	  "devices":[{"driver":"x.example.com","pool":"p","device":"d","conditions":[]}]}`
	put := func(status string) *httptest.ResponseRecorder {
		cur := h.mustDo("GET", claims+"/c", "", "", http.StatusOK)
		var st map[string]interface{}
		if err := json.Unmarshal([]byte(status), &st); err != nil {
			t.Fatal(err)
		}
		cur["status"] = st
		b, _ := json.Marshal(cur)
		return h.do("PUT", claims+"/c/status", hd, b)
	}
	if r := put(allocated); r.Code != http.StatusOK {
		t.Fatalf("allocate: %d %s", r.Code, r.Body)
	}
	r := put(`{"devices":[{"driver":"x.example.com","pool":"p","device":"d","conditions":[]}]}`)
	var got struct{ Status map[string]interface{} }
	if err := json.Unmarshal(r.Body.Bytes(), &got); r.Code != http.StatusOK || err != nil || len(got.Status) != 0 {
		t.Errorf("deallocate keeping the device status: %d %s; want 200 and no status left", r.Code, r.Body)
	}
}
