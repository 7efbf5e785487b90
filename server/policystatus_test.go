package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPolicyTypeCheckingKnowsCustomKinds: the policy status controller
// type-checks expressions against CustomResourceDefinitions and against
// custom resources through their CRDs' schemas, as
// kube-controller-manager's resolver does.
func TestPolicyTypeCheckingKnowsCustomKinds(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", ct, []byte(`{"metadata":{"name":"widgets.example.com"},
	  "spec":{"group":"example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
	    "spec":{"type":"object","properties":{"size":{"type":"integer"}}}}}}}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("CRD: %d %s", r.Code, r.Body)
	}
	h.eventually("widgets served", func() bool {
		return h.do("GET", "/apis/example.com/v1/namespaces/default/widgets", nil, nil).Code == http.StatusOK
	})
	for name, rule := range map[string]string{
		"vap-crd": `{"apiGroups":["apiextensions.k8s.io"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["customresourcedefinitions"]}`,
		"vap-cr":  `{"apiGroups":["example.com"],"apiVersions":["v1"],"operations":["CREATE"],"resources":["widgets"]}`,
	} {
		if r := h.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", ct, []byte(`{"metadata":{"name":"`+name+`"},
		  "spec":{"matchConstraints":{"resourceRules":[`+rule+`]},"validations":[{"expression":"object.spec.nosuchfield == 1"}]}}`)); r.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	for _, name := range []string{"vap-crd", "vap-cr"} {
		h.eventually(name+" type-checked", func() bool {
			b := h.do("GET", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/"+name, nil, nil).Body.String()
			return strings.Contains(b, `"fieldRef":"spec.validations[0].expression"`) && strings.Contains(b, "undefined field 'nosuchfield'")
		})
	}
}
