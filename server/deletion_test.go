package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestFinalizers: an object with a finalizer survives DELETE with a
// deletionTimestamp, refuses new finalizers, and goes away when its last
// finalizer is removed.
func TestFinalizers(t *testing.T) {
	h := refNewHarness(t)
	const path = "/api/v1/namespaces/default/configmaps"
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", path, ct, []byte(`{"metadata":{"name":"fin","finalizers":["example.com/hold"]},"data":{"k":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	del := h.do("DELETE", path+"/fin", nil, nil)
	var obj struct {
		Kind     string
		Metadata struct {
			DeletionTimestamp *string
			Finalizers        []string
		}
	}
	if err := json.Unmarshal(del.Body.Bytes(), &obj); err != nil || del.Code != http.StatusOK || obj.Kind != "ConfigMap" || obj.Metadata.DeletionTimestamp == nil {
		t.Fatalf("delete: %d %s; want 200 with the ConfigMap and a deletionTimestamp", del.Code, del.Body)
	}
	if r := h.do("GET", path+"/fin", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("get while finalizer pending: %d; want 200", r.Code)
	}
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	add := h.do("PATCH", path+"/fin", merge, []byte(`{"metadata":{"finalizers":["example.com/hold","example.com/another"]}}`))
	if add.Code != http.StatusUnprocessableEntity || !strings.Contains(add.Body.String(), "no new finalizers can be added if the object is being deleted") {
		t.Fatalf("adding a finalizer while deleting: %d %s; want 422", add.Code, add.Body)
	}
	if r := h.do("PATCH", path+"/fin", merge, []byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
		t.Fatalf("removing the finalizer: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", path+"/fin", nil, nil); r.Code != http.StatusNotFound {
		t.Fatalf("get after the last finalizer went: %d; want 404", r.Code)
	}
}

// TestNamespaceTermination: a namespace whose content is held by a
// finalizer stays Terminating with kube's progress conditions, and goes
// away once the content does.
func TestNamespaceTermination(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"doomed"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/namespaces/doomed/configmaps", ct, []byte(`{"metadata":{"name":"held","finalizers":["example.com/hold"]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create configmap: %d %s", r.Code, r.Body)
	}
	del := h.do("DELETE", "/api/v1/namespaces/doomed", nil, nil)
	if del.Code != http.StatusOK || !strings.Contains(del.Body.String(), `"phase":"Terminating"`) {
		t.Fatalf("delete namespace: %d %s; want 200 with phase Terminating", del.Code, del.Body)
	}
	h.eventually("terminating conditions", func() bool {
		b := h.do("GET", "/api/v1/namespaces/doomed", nil, nil).Body.String()
		return strings.Contains(b, "Some resources are remaining: configmaps. has 1 resource instances") &&
			strings.Contains(b, "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances")
	})
	if r := h.do("PATCH", "/api/v1/namespaces/doomed/configmaps/held", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
		t.Fatalf("release configmap: %d %s", r.Code, r.Body)
	}
	h.eventually("namespace removed", func() bool {
		return h.do("GET", "/api/v1/namespaces/doomed", nil, nil).Code == http.StatusNotFound
	})
}

// TestNamespaceContentFailureStaysWithItsNamespace: content a namespace
// cannot delete (an admission policy refuses) is reported in its own
// conditions, as kube's ContentDeletionFailed, and holds only that
// namespace: another terminating beside it is emptied and removed. The
// refusal is a deletecollection item's, as in kube.
func TestNamespaceContentFailureStaysWithItsNamespace(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	const ar = "/apis/admissionregistration.k8s.io/v1"
	h.mustDo("POST", ar+"/validatingadmissionpolicies", "application/json", `{"metadata":{"name":"guard"},"spec":{"failurePolicy":"Fail",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["DELETE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"!has(oldObject.metadata.labels) || !('guard' in oldObject.metadata.labels)","message":"guarded"}]}}`, http.StatusCreated)
	h.mustDo("POST", ar+"/validatingadmissionpolicybindings", "application/json", `{"metadata":{"name":"guard"},"spec":{"policyName":"guard","validationActions":["Deny"]}}`, http.StatusCreated)
	h.eventually("the policy to refuse", func() bool {
		// A probe deleted before the policy took effect is made again.
		h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"probe","labels":{"guard":"x"}}}`))
		return h.do("DELETE", "/api/v1/namespaces/default/configmaps/probe", nil, nil).Code == http.StatusUnprocessableEntity
	})
	// A deletecollection's items are admitted as kube admits them: the
	// request names no object, so the refusal names none ("Unknown"), as
	// the namespace controller's, which deletes collections, below. (The
	// last probe is still there.)
	if r := h.do("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=guard", nil, nil); r.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(r.Body.String(), `configmaps \"Unknown\" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: guarded`) {
		t.Errorf("deletecollection of a guarded ConfigMap: %d %s", r.Code, r.Body)
	}
	// The stuck one first in the controller's order.
	for _, ns := range []string{"a-stuck", "b-free"} {
		h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"`+ns+`"}}`, http.StatusCreated)
		h.mustDo("POST", "/api/v1/namespaces/"+ns+"/configmaps", "application/json", `{"metadata":{"name":"plain"}}`, http.StatusCreated)
	}
	h.mustDo("POST", "/api/v1/namespaces/a-stuck/configmaps", "application/json", `{"metadata":{"name":"kept","labels":{"guard":"x"}}}`, http.StatusCreated)
	for _, ns := range []string{"a-stuck", "b-free"} {
		h.mustDo("DELETE", "/api/v1/namespaces/"+ns, "", "", http.StatusOK)
	}
	h.eventually("b-free removed", func() bool { return h.do("GET", "/api/v1/namespaces/b-free", nil, nil).Code == http.StatusNotFound })
	var last string
	defer func() {
		if t.Failed() {
			t.Logf("a-stuck: %s", last)
		}
	}()
	h.eventually("a-stuck's failure condition", func() bool {
		b := h.do("GET", "/api/v1/namespaces/a-stuck", nil, nil).Body.String()
		last = b
		return strings.Contains(b, `"type":"NamespaceDeletionContentFailure","status":"True"`) && strings.Contains(b, `"reason":"ContentDeletionFailed"`) &&
			strings.Contains(b, `Failed to delete all resource types, 1 remaining: configmaps \"Unknown\" is forbidden: ValidatingAdmissionPolicy 'guard' with binding 'guard' denied request: guarded`)
	})
	h.mustDo("DELETE", ar+"/validatingadmissionpolicybindings/guard", "", "", http.StatusOK)
	h.eventually("a-stuck removed once the policy is gone", func() bool {
		return h.do("GET", "/api/v1/namespaces/a-stuck", nil, nil).Code == http.StatusNotFound
	})
}

// TestNamespacePodsGoFirst: as kube 1.35's OrderedNamespaceDeletion, a
// terminating namespace's Pods are deleted before anything else, which
// waits until they are gone (a running Pod keeps its ConfigMaps and
// Secrets while it stops); meanwhile the conditions are kube's all-clear.
func TestNamespacePodsGoFirst(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"ordered"}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/ordered/configmaps", "application/json", `{"metadata":{"name":"config"}}`, http.StatusCreated)
	// On a node, so its deletion waits for its grace period.
	h.mustDo("POST", "/api/v1/namespaces/ordered/pods", "application/json",
		`{"metadata":{"name":"p"},"spec":{"nodeName":"n1","terminationGracePeriodSeconds":600,"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	h.mustDo("DELETE", "/api/v1/namespaces/ordered", "", "", http.StatusOK)
	h.eventually("the Pod terminating and the conditions written", func() bool {
		pod := h.do("GET", "/api/v1/namespaces/ordered/pods/p", nil, nil).Body.String()
		ns := h.do("GET", "/api/v1/namespaces/ordered", nil, nil).Body.String()
		return strings.Contains(pod, "deletionTimestamp") && strings.Contains(ns, `"reason":"ContentRemoved"`)
	})
	if r := h.do("GET", "/api/v1/namespaces/ordered/configmaps/config", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("the ConfigMap while the Pod terminates: %d %s; want it kept", r.Code, r.Body)
	}
	h.mustDo("DELETE", "/api/v1/namespaces/ordered/pods/p?gracePeriodSeconds=0", "", "", http.StatusOK)
	h.eventually("the namespace removed after its Pod", func() bool {
		return h.do("GET", "/api/v1/namespaces/ordered", nil, nil).Code == http.StatusNotFound
	})
}

// TestRepeatedDeleteBeforeAdmission: a delete that can change nothing is
// answered with the object before admission, as kube's stores answer it:
// a Pod's graceful delete under way, a Namespace whose spec finalizers
// remain. A delete that shortens the grace period is admitted.
func TestRepeatedDeleteBeforeAdmission(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	const pods = "/api/v1/namespaces/default/pods"
	h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"held","labels":{"guard":"x"}}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/held/configmaps", "application/json", `{"metadata":{"name":"c","finalizers":["example.com/hold"]}}`, http.StatusCreated)
	h.mustDo("POST", pods, "application/json",
		`{"metadata":{"name":"slow","labels":{"guard":"x"}},"spec":{"nodeName":"n1","terminationGracePeriodSeconds":600,"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	h.mustDo("DELETE", "/api/v1/namespaces/held", "", "", http.StatusOK)
	h.mustDo("DELETE", pods+"/slow", "", "", http.StatusOK)
	const ar = "/apis/admissionregistration.k8s.io/v1"
	h.mustDo("POST", ar+"/validatingadmissionpolicies", "application/json", `{"metadata":{"name":"guard"},"spec":{"failurePolicy":"Fail",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["DELETE"],"resources":["pods","namespaces"]}]},
		"validations":[{"expression":"!has(oldObject.metadata.labels) || !('guard' in oldObject.metadata.labels)","message":"guarded"}]}}`, http.StatusCreated)
	h.mustDo("POST", ar+"/validatingadmissionpolicybindings", "application/json", `{"metadata":{"name":"guard"},"spec":{"policyName":"guard","validationActions":["Deny"]}}`, http.StatusCreated)
	h.eventually("the policy to refuse", func() bool {
		h.do("POST", pods, map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"probe","labels":{"guard":"x"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`))
		return h.do("DELETE", pods+"/probe", nil, nil).Code == http.StatusUnprocessableEntity
	})
	for _, path := range []string{pods + "/slow", pods + "/slow?gracePeriodSeconds=600", "/api/v1/namespaces/held"} {
		if r := h.do("DELETE", path, nil, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "deletionTimestamp") {
			t.Errorf("DELETE %s again: %d %s; want 200 with the object as it is", path, r.Code, r.Body)
		}
	}
	if r := h.do("DELETE", pods+"/slow?gracePeriodSeconds=10", nil, nil); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "guarded") {
		t.Errorf("a delete shortening the grace period: %d %s; want the policy's 422", r.Code, r.Body)
	}
}

// TestNamespaceFinalizedUnderOtherFinalizers: a namespace that a
// metadata finalizer holds is still emptied, given kube's all-clear
// conditions (all five) and finalized by the controller (spec.finalizers
// emptied); it goes once its finalizer's owner removes it.
func TestNamespaceFinalizedUnderOtherFinalizers(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"held","finalizers":["example.com/x"]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	if r := h.do("DELETE", "/api/v1/namespaces/held", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete namespace: %d %s", r.Code, r.Body)
	}
	h.eventually("spec finalized with the all-clear conditions", func() bool {
		b := h.do("GET", "/api/v1/namespaces/held", nil, nil).Body.String()
		return strings.Contains(b, `"spec":{}`) && strings.Count(b, `"status":"False"`) == 5 &&
			strings.Contains(b, `"reason":"ContentRemoved"`) && strings.Contains(b, `"reason":"ContentHasNoFinalizers"`)
	})
	// A later delete is the generic store's: kube's markAsDeleting gives
	// the object its finalizer holds a zero grace period.
	if r := h.do("DELETE", "/api/v1/namespaces/held", nil, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"deletionGracePeriodSeconds":0`) {
		t.Errorf("second delete of the finalized namespace: %d %s; want 200 with deletionGracePeriodSeconds 0", r.Code, r.Body)
	}
	if r := h.do("PATCH", "/api/v1/namespaces/held", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
		t.Fatalf("release namespace: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/namespaces/held", nil, nil); r.Code != http.StatusNotFound {
		t.Errorf("namespace after its last finalizer: %d %s; want 404", r.Code, r.Body)
	}
}

// TestNamespaceTerminationLarge: a namespace holding more objects than the
// namespace controller reads at a time is emptied and removed.
func TestNamespaceTerminationLarge(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"big"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	const n = 1001 // two full pages of 500 and one more
	for i := range n {
		if r := h.do("POST", "/api/v1/namespaces/big/configmaps", ct, []byte(fmt.Sprintf(`{"metadata":{"name":"cm-%04d"}}`, i))); r.Code != http.StatusCreated {
			t.Fatalf("create configmap %d: %d %s", i, r.Code, r.Body)
		}
	}
	if r := h.do("DELETE", "/api/v1/namespaces/big", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete namespace: %d %s", r.Code, r.Body)
	}
	h.eventually("namespace removed", func() bool {
		return h.do("GET", "/api/v1/namespaces/big", nil, nil).Code == http.StatusNotFound
	})
	if b := h.do("GET", "/api/v1/namespaces/big/configmaps", nil, nil).Body.String(); !strings.Contains(b, `"items":[]`) {
		t.Fatalf("configmaps left in the removed namespace: %.300s", b)
	}
}

// TestCoreFinalizerNames: the core kinds Tabula validates itself refuse a
// finalizer without a domain unless it is one of kube's standard names,
// as kube's core metadata validation does.
func TestCoreFinalizerNames(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/secrets",
		"/api/v1/namespaces/default/serviceaccounts", "/api/v1/namespaces/default/endpoints", "/api/v1/namespaces"} {
		r := h.do("POST", path, ct, []byte(`{"metadata":{"name":"bad-finalizer","finalizers":["nodomain"]}}`))
		const want = `metadata.finalizers[0]: Invalid value: \"nodomain\": name is neither a standard finalizer name nor is it fully qualified`
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
			t.Errorf("POST %s with finalizer nodomain: %d %s; want 422 %s", path, r.Code, r.Body, want)
		}
		r = h.do("POST", path, ct, []byte(`{"metadata":{"name":"good-finalizers","finalizers":["orphan","example.com/hold"]}}`))
		if r.Code != http.StatusCreated {
			t.Errorf("POST %s with a standard and a qualified finalizer: %d %s; want 201", path, r.Code, r.Body)
		}
	}
}

// TestDeletionFieldsImmutable: an update may not start a deletion by
// setting deletionTimestamp or deletionGracePeriodSeconds, nor change the
// grace period of one under way (kube's 422, field is immutable); an
// update that leaves them out keeps them.
func TestDeletionFieldsImmutable(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps/"
	ct := map[string]string{"Content-Type": "application/json"}
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	for _, name := range []string{"live", "held"} {
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(`{"metadata":{"name":"`+name+`","finalizers":["example.com/hold"]}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
		}
	}
	if r := h.do("DELETE", cms+"held", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete held: %d %s", r.Code, r.Body)
	}
	for _, c := range []struct{ name, patch, field string }{
		{"live", `{"metadata":{"deletionTimestamp":"2020-01-01T00:00:00Z"}}`, "metadata.deletionTimestamp"},
		{"live", `{"metadata":{"deletionGracePeriodSeconds":5}}`, "metadata.deletionGracePeriodSeconds"},
		{"held", `{"metadata":{"deletionGracePeriodSeconds":5}}`, "metadata.deletionGracePeriodSeconds"},
	} {
		r := h.do("PATCH", cms+c.name, merge, []byte(c.patch))
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), c.field+": Invalid value") || !strings.Contains(r.Body.String(), "field is immutable") {
			t.Errorf("PATCH %s %s: %d %s; want 422 %s is immutable", c.name, c.patch, r.Code, r.Body, c.field)
		}
	}
	// Left out, they stay.
	r := h.do("PATCH", cms+"held", merge, []byte(`{"metadata":{"deletionTimestamp":null,"deletionGracePeriodSeconds":null},"data":{"k":"v"}}`))
	var cm struct {
		Metadata struct {
			DeletionTimestamp          *string
			DeletionGracePeriodSeconds *int64
		}
	}
	if err := json.Unmarshal(r.Body.Bytes(), &cm); err != nil || r.Code != http.StatusOK || cm.Metadata.DeletionTimestamp == nil || cm.Metadata.DeletionGracePeriodSeconds == nil {
		t.Errorf("PATCH removing the deletion fields: %d %s; want 200 with both kept", r.Code, r.Body)
	}
}

// TestNamespaceWaitsForUnavailableAggregatedAPI: as kube's namespace
// controller, which reads what to delete from discovery, a namespace
// waits while an aggregated API is unavailable (it may hold content
// there), saying so in its DiscoveryFailure condition with client-go's
// error; the rest of its content is deleted meanwhile, and the namespace
// goes once the API is gone.
func TestNamespaceWaitsForUnavailableAggregatedAPI(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	h.mustDo("POST", "/apis/apiregistration.k8s.io/v1/apiservices", "application/json", `{"metadata":{"name":"v1.missing.example"},
		"spec":{"group":"missing.example","version":"v1","groupPriorityMinimum":100,"versionPriority":10,"insecureSkipTLSVerify":true,
		"service":{"namespace":"default","name":"missing"}}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"aggwait"}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/aggwait/configmaps", "application/json", `{"metadata":{"name":"c"}}`, http.StatusCreated)
	h.mustDo("DELETE", "/api/v1/namespaces/aggwait", "", "", http.StatusOK)
	const msg = "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: missing.example/v1: stale GroupVersion discovery: missing.example/v1"
	var last string
	h.eventually("the discovery failure reported", func() bool {
		last = h.do("GET", "/api/v1/namespaces/aggwait", nil, nil).Body.String()
		return strings.Contains(last, `"type":"NamespaceDeletionDiscoveryFailure","status":"True"`) && strings.Contains(last, `"reason":"DiscoveryFailed","message":"`+msg+`"`)
	})
	h.eventually("the ConfigMap deleted meanwhile", func() bool {
		return h.do("GET", "/api/v1/namespaces/aggwait/configmaps/c", nil, nil).Code == http.StatusNotFound
	})
	if r := h.do("GET", "/api/v1/namespaces/aggwait", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("the namespace while the API is unavailable: %d %s; want it kept", r.Code, r.Body)
	}
	h.mustDo("DELETE", "/apis/apiregistration.k8s.io/v1/apiservices/v1.missing.example", "", "", http.StatusOK)
	h.eventually("the namespace removed once the API is gone", func() bool {
		return h.do("GET", "/api/v1/namespaces/aggwait", nil, nil).Code == http.StatusNotFound
	})
}
