package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNamespaceRequestsAreInTheirNamespace: admission sees a request
// about a Namespace as being in that namespace, as kube-apiserver's
// request info puts it: a policy's namespaceSelector matches the
// namespace's own labels, and request.namespace names it. With the
// namespace left empty, a protecting policy with failurePolicy Ignore
// was skipped and the namespace deleted.
func TestNamespaceRequestsAreInTheirNamespace(t *testing.T) {
	h := refNewHarness(t)
	const vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	h.mustDo("POST", vap, "application/json", `{"metadata":{"name":"protect"},"spec":{"failurePolicy":"Ignore",
		"matchConstraints":{"namespaceSelector":{"matchLabels":{"protect":"yes"}},
		 "resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["UPDATE","DELETE"],"resources":["namespaces"]}]},
		"validations":[{"expression":"false","messageExpression":"'namespace ' + request.namespace + ' is protected'"}]}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", "application/json", `{"metadata":{"name":"protect"},"spec":{"policyName":"protect","validationActions":["Deny"]}}`, http.StatusCreated)
	h.createNamespace("n9", map[string]string{"protect": "yes"})

	const msg = "ValidatingAdmissionPolicy 'protect' with binding 'protect' denied request: namespace n9 is protected"
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("last update answer: %s", last)
		}
	}()
	h.waitFor("the policy to refuse an update of n9", func() bool {
		r := h.do("PATCH", "/api/v1/namespaces/n9", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"annotations":{"a":"b"}}}`))
		last = r.Body.String()
		return r.Code == http.StatusUnprocessableEntity && strings.Contains(last, msg)
	})
	if r := h.do("DELETE", "/api/v1/namespaces/n9", nil, nil); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), msg) {
		t.Errorf("delete of a protected namespace: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/namespaces/n9", nil, nil); r.Code != http.StatusOK || strings.Contains(r.Body.String(), "deletionTimestamp") {
		t.Errorf("n9 after the refused delete: %d %s", r.Code, r.Body)
	}
	// An unprotected namespace is not the policy's.
	h.createNamespace("n10", nil)
	if r := h.do("DELETE", "/api/v1/namespaces/n10", nil, nil); r.Code != http.StatusOK {
		t.Errorf("delete of an unprotected namespace: %d %s", r.Code, r.Body)
	}
}
