package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestWorkloadStrategiesAsKube: rules of kube 1.35's workload strategies
// that clients lean on.
//   - A suspended Job that never started may have its pod template's
//     scheduling directives changed (Kueue does so before it lets a Job
//     run); its resources and a started Job's template may not: the
//     condition-based rules are behind gates off by default.
//   - An HPA may target a ReplicationController by apiVersion v1 (kubectl
//     autoscale rc sends that).
//   - A DaemonSet created with a template generation keeps it.
//   - A StatefulSet update's error is reported once.
func TestWorkloadStrategiesAsKube(t *testing.T) {
	h := refNewHarness(t)
	const (
		js    = "application/json"
		merge = "application/merge-patch+json"
		jobs  = "/apis/batch/v1/namespaces/default/jobs"
	)
	job := func(name string) {
		h.mustDo("POST", jobs, js, `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"`+name+`"},"spec":{"suspend":true,"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"}}}]}}}}`, http.StatusCreated)
	}
	const nodeSelector = `{"spec":{"template":{"spec":{"nodeSelector":{"zone":"a"}}}}}`
	job("fresh")
	j := h.mustDo("PATCH", jobs+"/fresh", merge, nodeSelector, http.StatusOK)
	if refDig(j, "spec", "template", "spec", "nodeSelector", "zone") != "a" {
		t.Errorf("suspended, never started Job: nodeSelector %v; want it changed", refDig(j, "spec", "template", "spec", "nodeSelector"))
	}
	resources := `[{"op":"replace","path":"/spec/template/spec/containers/0/resources/requests/cpu","value":"200m"}]`
	h.mustDo("PATCH", jobs+"/fresh", "application/json-patch+json", resources, http.StatusUnprocessableEntity)

	job("started")
	h.mustDo("PATCH", jobs+"/started/status", merge, `{"status":{"startTime":"2026-01-01T00:00:00Z","conditions":[{"type":"Suspended","status":"True","reason":"JobSuspended","lastProbeTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, http.StatusOK)
	st := h.mustDo("PATCH", jobs+"/started", merge, nodeSelector, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "spec.template: Invalid value") || !strings.Contains(msg, "field is immutable") {
		t.Errorf("a Job that started: %s; want its template immutable", msg)
	}
	h.mustDo("PATCH", jobs+"/started", "application/json-patch+json", resources, http.StatusUnprocessableEntity)

	const rcs = "/api/v1/namespaces/default/replicationcontrollers"
	h.mustDo("POST", rcs, js, `{"apiVersion":"v1","kind":"ReplicationController","metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"app":"rc"},"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	const hpas = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
	h.mustDo("POST", hpas, js, `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"rc"},"spec":{"scaleTargetRef":{"apiVersion":"v1","kind":"ReplicationController","name":"rc"},"maxReplicas":4}}`, http.StatusCreated)
	st = h.mustDo("POST", hpas, js, `{"apiVersion":"autoscaling/v1","kind":"HorizontalPodAutoscaler","metadata":{"name":"deploy"},"spec":{"scaleTargetRef":{"apiVersion":"v1","kind":"Deployment","name":"d"},"maxReplicas":4}}`, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "apiVersion must specify API group") {
		t.Errorf("an HPA naming a Deployment without its group: %s; want refused", msg)
	}

	const dss = "/apis/apps/v1/namespaces/default/daemonsets"
	ds := h.mustDo("POST", dss, js, `{"apiVersion":"apps/v1","kind":"DaemonSet","metadata":{"name":"restored","annotations":{"deprecated.daemonset.template.generation":"5"}},"spec":{"selector":{"matchLabels":{"app":"ds"}},"template":{"metadata":{"labels":{"app":"ds"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	if g := refDig(ds, "metadata", "annotations", "deprecated.daemonset.template.generation"); g != "5" {
		t.Errorf("DaemonSet created with template generation 5: %v; want 5 kept", g)
	}

	const stss = "/apis/apps/v1/namespaces/default/statefulsets"
	h.mustDo("POST", stss, js, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"serviceName":"s","selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	st = h.mustDo("PATCH", stss+"/s", merge, `{"spec":{"minReadySeconds":-1}}`, http.StatusUnprocessableEntity)
	if causes, _ := refDig(st, "details", "causes").([]interface{}); len(causes) != 1 {
		t.Errorf("a StatefulSet update with one error: causes %v; want one", causes)
	}
}
