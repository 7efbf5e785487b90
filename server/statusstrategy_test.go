package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestStatusStrategiesAsKube: writes through /status are prepared and
// validated as kube's status strategies do it, not as the main resource:
// kube's status validations refuse what they refuse (a Pod's malformed
// IP, a Deployment's negative replicas, a live Namespace set
// Terminating), a Pod keeps its QoS class and a PersistentVolume's phase
// change is stamped. A DaemonSet's template generation (apps/v1's
// deprecated.daemonset.template.generation annotation) is the server's:
// a template change moves it on, and a write that leaves the annotation
// out, through the main resource or /status, keeps it, as kube's
// daemonset strategies do (kubectl set image and replace used to get a
// 422). A Namespace's finalize write keeps its metadata changes.
func TestStatusStrategiesAsKube(t *testing.T) {
	h := refNewHarness(t)
	const (
		merge = "application/merge-patch+json"
		js    = "application/json"
	)

	// DaemonSets.
	const dss = "/apis/apps/v1/namespaces/default/daemonsets"
	tmpl := func(image string) string {
		return `"template":{"metadata":{"labels":{"app":"ds"}},"spec":{"containers":[{"name":"c","image":"` + image + `"}]}}`
	}
	h.mustDo("POST", dss, js, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"ds"}},`+tmpl("busybox:1")+`}}`, http.StatusCreated)
	templateGen := func(obj map[string]interface{}) interface{} {
		return refDig(obj, "metadata", "annotations", "deprecated.daemonset.template.generation")
	}
	ds := h.mustDo("PATCH", dss+"/ds", "application/strategic-merge-patch+json",
		`{"spec":{"template":{"spec":{"containers":[{"name":"c","image":"busybox:2"}]}}}}`, http.StatusOK)
	if templateGen(ds) != "2" || refDig(ds, "metadata", "generation") != float64(2) {
		t.Errorf("after a template change: template generation %v, generation %v; want 2 and 2", templateGen(ds), refDig(ds, "metadata", "generation"))
	}
	rv := refDig(ds, "metadata", "resourceVersion").(string)
	ds = h.mustDo("PUT", dss+"/ds", js, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds","resourceVersion":"`+rv+`"},"spec":{"selector":{"matchLabels":{"app":"ds"}},`+tmpl("busybox:2")+`}}`, http.StatusOK)
	if templateGen(ds) != "2" {
		t.Errorf("a replace without the annotation: template generation %v; want 2 kept", templateGen(ds))
	}
	ds = h.mustDo("PUT", dss+"/ds/status", js, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"ds"},"spec":{"selector":{"matchLabels":{"app":"ds"}},`+tmpl("busybox:2")+`},"status":{"currentNumberScheduled":1,"desiredNumberScheduled":1,"numberMisscheduled":0,"numberReady":1}}`, http.StatusOK)
	if templateGen(ds) != "2" || refDig(ds, "status", "numberReady") != float64(1) {
		t.Errorf("a status write without the annotation: template generation %v, numberReady %v; want 2 kept and 1", templateGen(ds), refDig(ds, "status", "numberReady"))
	}

	// Status validations.
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/deployments", js, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/pods", js, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"1","memory":"1Gi"}}}]}}`, http.StatusCreated)
	h.createNamespace("live", nil)
	for _, c := range []struct{ path, patch, want string }{
		{"/apis/apps/v1/namespaces/default/deployments/d/status", `{"status":{"replicas":-1}}`, "status.replicas: Invalid value: -1: must be greater than or equal to 0"},
		{"/api/v1/namespaces/default/pods/p/status", `{"status":{"podIP":"not-an-ip","podIPs":[{"ip":"not-an-ip"}]}}`, "status.podIPs[0]: Invalid value: \"not-an-ip\": must be a valid IP address"},
		{"/api/v1/namespaces/live/status", `{"status":{"phase":"Terminating"}}`, "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"},
	} {
		st := h.mustDo("PATCH", c.path, merge, c.patch, http.StatusUnprocessableEntity)
		if msg, _ := st["message"].(string); !strings.Contains(msg, c.want) {
			t.Errorf("PATCH %s %s: %q; want it to say %q", c.path, c.patch, msg, c.want)
		}
	}
	if rec := h.do("POST", "/api/v1/namespaces/live/configmaps", map[string]string{"Content-Type": js}, []byte(`{"metadata":{"name":"still-open"}}`)); rec.Code != http.StatusCreated {
		t.Errorf("a create in the namespace after the refused status write: %d %s", rec.Code, rec.Body)
	}

	// A Pod's status PUT keeps its QoS class.
	p := h.getJSON("/api/v1/namespaces/default/pods/p")
	p = h.mustDo("PUT", "/api/v1/namespaces/default/pods/p/status", js, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","resourceVersion":"`+refDig(p, "metadata", "resourceVersion").(string)+`"},"spec":{"containers":[{"name":"c","image":"busybox"}]},"status":{"phase":"Pending"}}`, http.StatusOK)
	if q := refDig(p, "status", "qosClass"); q != "Guaranteed" {
		t.Errorf("a Pod's status PUT without its QoS class: qosClass %v; want Guaranteed kept", q)
	}

	// A PersistentVolume's phase change is stamped; a write of the same
	// phase without the time keeps it.
	pvs := "/api/v1/persistentvolumes"
	h.mustDo("POST", pvs, js, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/pv"}}}`, http.StatusCreated)
	pv := h.mustDo("PUT", pvs+"/pv/status", js, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"status":{"phase":"Available"}}`, http.StatusOK)
	at := refDig(pv, "status", "lastPhaseTransitionTime")
	if at == nil {
		t.Errorf("a phase change without a time: lastPhaseTransitionTime unset; want it stamped")
	}
	pv = h.mustDo("PUT", pvs+"/pv/status", js, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"pv"},"status":{"phase":"Available","message":"same phase"}}`, http.StatusOK)
	if got := refDig(pv, "status", "lastPhaseTransitionTime"); got != at {
		t.Errorf("a write of the same phase without a time: lastPhaseTransitionTime %v; want %v kept", got, at)
	}

	// A Job's counters may not go down (kube's job status options).
	h.mustDo("POST", "/apis/batch/v1/namespaces/default/jobs", js, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"j"},"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	h.mustDo("PATCH", "/apis/batch/v1/namespaces/default/jobs/j/status", merge, `{"status":{"startTime":"2026-01-01T00:00:00Z","succeeded":1}}`, http.StatusOK)
	st := h.mustDo("PATCH", "/apis/batch/v1/namespaces/default/jobs/j/status", merge, `{"status":{"succeeded":0}}`, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter") {
		t.Errorf("a Job's succeeded counter going down: %q; want kube's refusal", msg)
	}

	// A status write's metadata is checked as every update's, whatever
	// the kind's status validation looks at: a CronJob's (which checks
	// nothing else) cannot set its deletionTimestamp, which would delete
	// it, nor a Namespace's add an unqualified finalizer.
	cjs := "/apis/batch/v1/namespaces/default/cronjobs"
	h.mustDo("POST", cjs, js, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`, http.StatusCreated)
	st = h.mustDo("PATCH", cjs+"/cj/status", merge, `{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}`, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "metadata.deletionTimestamp") {
		t.Errorf("a CronJob status write setting deletionTimestamp: %q; want it refused", msg)
	}
	h.mustDo("GET", cjs+"/cj", "", "", http.StatusOK)
	h.mustDo("PATCH", cjs+"/cj/status", merge, `{"metadata":{"labels":{"bad label":"x"}}}`, http.StatusUnprocessableEntity)
	h.mustDo("PATCH", "/api/v1/namespaces/live/status", merge, `{"metadata":{"finalizers":["foo"]}}`, http.StatusUnprocessableEntity)
	// The same for a main-resource update of a kind whose validation looks
	// at its spec alone.
	pdbs := "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	h.mustDo("POST", pdbs, js, `{"apiVersion":"policy/v1","kind":"PodDisruptionBudget","metadata":{"name":"b"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"a":"b"}}}}`, http.StatusCreated)
	h.mustDo("PATCH", pdbs+"/b", merge, `{"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}`, http.StatusUnprocessableEntity)
	h.mustDo("GET", pdbs+"/b", "", "", http.StatusOK)

	// A Node's status write cannot start using status.config.
	h.mustDo("POST", "/api/v1/nodes", js, `{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"}}`, http.StatusCreated)
	n := h.mustDo("PATCH", "/api/v1/nodes/n1/status", merge, `{"status":{"config":{"error":"boom"},"phase":"Running"}}`, http.StatusOK)
	if c := refDig(n, "status", "config"); c != nil {
		t.Errorf("a Node's status write set status.config %v; want it dropped", c)
	}

	// A finalize write keeps its metadata changes.
	h.createNamespace("fin", nil)
	ns := h.mustDo("PUT", "/api/v1/namespaces/fin/finalize", js, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"fin","labels":{"set":"by-finalize"}},"spec":{"finalizers":[]}}`, http.StatusOK)
	if l := refDig(ns, "metadata", "labels", "set"); l != "by-finalize" {
		t.Errorf("a finalize write's label: %v; want by-finalize kept", l)
	}
}

// TestCreateDropsStatusTheInternalKindLacks: a create's status is
// kube's strategy's, even in fields only the versioned kind has:
// autoscaling/v1's currentCPUUtilizationPercentage is not kept (nor
// shown as a CPU metric in v2).
func TestCreateDropsStatusTheInternalKindLacks(t *testing.T) {
	h := refNewHarness(t)
	const v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
	h.mustDo("POST", v1, "application/json", `{"metadata":{"name":"h"},"spec":{"scaleTargetRef":{"kind":"Deployment","name":"d","apiVersion":"apps/v1"},"maxReplicas":3},
		"status":{"currentReplicas":2,"desiredReplicas":2,"currentCPUUtilizationPercentage":50}}`, http.StatusCreated)
	for _, path := range []string{v1 + "/h", "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers/h"} {
		b := h.do("GET", path, nil, nil).Body.String()
		if strings.Contains(b, "currentCPUUtilizationPercentage") || strings.Contains(b, `"averageUtilization":50`) || strings.Contains(b, "currentAverageUtilization") || strings.Contains(b, `"currentReplicas":2`) {
			t.Errorf("GET %s: %s; want the status the create sent dropped", path, b)
		}
	}
}

// TestPodStatusDropsDisabledFields: a pods/status write loses fields whose
// feature gates are off (a container's allocatedResourcesStatus,
// ResourceHealthStatus, alpha) before validation, as every Pod write
// does in kube; so a later write of the Pod changes nothing.
func TestPodStatusDropsDisabledFields(t *testing.T) {
	h := refNewHarness(t)
	const pod = "/api/v1/namespaces/default/pods/p"
	h.mustDo("POST", "/api/v1/namespaces/default/pods", "application/json", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, http.StatusCreated)
	r := h.do("PATCH", pod+"/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"containerStatuses":[
		{"name":"c","image":"i","imageID":"","ready":false,"restartCount":0,"allocatedResourcesStatus":[{"name":"not a resource name!","resources":[]}]}]}}`))
	if r.Code != http.StatusOK || strings.Contains(r.Body.String(), "allocatedResourcesStatus") {
		t.Fatalf("status write with a disabled field: %d %s; want 200 without it", r.Code, r.Body)
	}
}

// TestCRDStatusWriteKeepsMetadata: kube's CRD status strategy resets the
// metadata from the new object itself, so a status write's labels stay
// (its spec does not).
func TestCRDStatusWriteKeepsMetadata(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", crdPath, "application/json", gadgetsCRD, http.StatusCreated)
	r := h.do("PATCH", crdPath+"/gadgets.test.example.com/status", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"metadata":{"labels":{"written":"by-status"}},"spec":{"names":{"shortNames":["zzshort"]}}}`))
	if b := r.Body.String(); r.Code != http.StatusOK || !strings.Contains(b, `"written":"by-status"`) || strings.Contains(b, `"zzshort"`) {
		t.Errorf("CRD status write: %d %s; want the label kept and the spec as it was", r.Code, b)
	}
}
