package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestEndpointsValidationAsKube: Endpoints and EndpointSlices are checked
// and warned about as kube's strategies do: a loopback address is
// refused, an address with leading zeros accepted with kube's warning,
// and an FQDN slice warned about on create.
func TestEndpointsValidationAsKube(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	const eps = "/api/v1/namespaces/default/endpoints"
	rec := h.do("POST", eps, ct, []byte(`{"metadata":{"name":"lo"},"subsets":[{"addresses":[{"ip":"127.0.0.1"}],"ports":[{"port":80}]}]}`))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), "may not be in the loopback range") {
		t.Errorf("a loopback endpoint: %d %s; want kube's 422", rec.Code, rec.Body)
	}
	warned := func(what string, rec interface {
		Header() http.Header
	}, want string) {
		t.Helper()
		for _, w := range rec.Header().Values("Warning") {
			if strings.Contains(w, want) {
				return
			}
		}
		t.Errorf("%s: warnings %q; want one saying %q", what, rec.Header().Values("Warning"), want)
	}
	rec = h.do("POST", eps, ct, []byte(`{"metadata":{"name":"zeros"},"subsets":[{"addresses":[{"ip":"010.1.1.1"}],"ports":[{"port":80}]}]}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("leading zeros: %d %s; want 201", rec.Code, rec.Body)
	}
	warned("leading zeros", rec, `subsets[0].addresses[0].ip: non-standard IP address`)

	rec = h.do("POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", ct,
		[]byte(`{"metadata":{"name":"fqdn"},"addressType":"FQDN","endpoints":[{"addresses":["db.example.com"]}]}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("FQDN slice: %d %s; want 201", rec.Code, rec.Body)
	}
	warned("FQDN slice", rec, "spec.addressType: FQDN endpoints are deprecated")
}
