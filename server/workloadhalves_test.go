package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestWritesKeepTheOtherHalf: a status write keeps the spec and a main
// update the status even where the served version carries part of them
// in annotations: autoscaling/v1 HPAs' metrics and conditions, apps/v1
// Deployments' rollback, as kube's strategies judge them on the internal
// object.
func TestWritesKeepTheOtherHalf(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	merge := map[string]string{"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
	const v1 = "/apis/autoscaling/v1/namespaces/default/horizontalpodautoscalers"
	const v2 = "/apis/autoscaling/v2/namespaces/default/horizontalpodautoscalers"
	h.mustDo("POST", v2, "application/json", `{"metadata":{"name":"hm"},"spec":{"scaleTargetRef":{"apiVersion":"apps/v1","kind":"Deployment","name":"web"},
	  "minReplicas":1,"maxReplicas":5,"metrics":[{"type":"Resource","resource":{"name":"memory","target":{"type":"Utilization","averageUtilization":60}}}]}}`, http.StatusCreated)
	memoryKept := func(step string) {
		t.Helper()
		got := h.mustDo("GET", v2+"/hm", "", "", http.StatusOK)
		b, _ := json.Marshal(got["spec"])
		if !strings.Contains(string(b), `"name":"memory"`) {
			t.Errorf("%s: v2 spec %s; want the memory metric kept", step, b)
		}
	}
	conditionsKept := func(step string) {
		t.Helper()
		got := h.mustDo("GET", v2+"/hm", "", "", http.StatusOK)
		b, _ := json.Marshal(got["status"])
		if !strings.Contains(string(b), `"type":"AbleToScale"`) {
			t.Errorf("%s: v2 status %s; want the condition kept", step, b)
		}
	}

	// A v1 status PUT without the annotations: the spec's memory metric
	// stays.
	cur := h.mustDo("GET", v1+"/hm", "", "", http.StatusOK)
	md := cur["metadata"].(map[string]interface{})
	if a, _ := md["annotations"].(map[string]interface{}); a["autoscaling.alpha.kubernetes.io/metrics"] == nil {
		t.Fatalf("v1 HPA without its metrics annotation: %v", md)
	}
	delete(md, "annotations")
	b, _ := json.Marshal(cur)
	if rec := h.do("PUT", v1+"/hm/status", hd, b); rec.Code != http.StatusOK {
		t.Fatalf("v1 status PUT: %d %s", rec.Code, rec.Body)
	}
	memoryKept("v1 status PUT without annotations")
	// A v1 status patch adding a metric: the spec does not take it.
	h.mustDo("PATCH", v1+"/hm/status", "application/merge-patch+json", `{"metadata":{"annotations":{"autoscaling.alpha.kubernetes.io/metrics":
	  "[{\"type\":\"Resource\",\"resource\":{\"name\":\"cpu\",\"targetAverageUtilization\":30}}]"}}}`, http.StatusOK)
	got := h.mustDo("GET", v2+"/hm", "", "", http.StatusOK)
	if b, _ := json.Marshal(got["spec"]); strings.Contains(string(b), `"averageUtilization":30`) {
		t.Errorf("v1 status patch of the metrics annotation reached the spec: %s", b)
	}

	// A v1 main PUT without the conditions annotation: the status's
	// conditions stay, the spec change lands.
	h.mustDo("PATCH", v2+"/hm/status", "application/merge-patch+json", `{"status":{"currentReplicas":1,"desiredReplicas":1,
	  "conditions":[{"type":"AbleToScale","status":"True","reason":"Ready","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`, http.StatusOK)
	conditionsKept("v2 status patch")
	cur = h.mustDo("GET", v1+"/hm", "", "", http.StatusOK)
	md = cur["metadata"].(map[string]interface{})
	a := md["annotations"].(map[string]interface{})
	delete(a, "autoscaling.alpha.kubernetes.io/conditions")
	cur["spec"].(map[string]interface{})["maxReplicas"] = 6
	b, _ = json.Marshal(cur)
	if rec := h.do("PUT", v1+"/hm", hd, b); rec.Code != http.StatusOK {
		t.Fatalf("v1 PUT: %d %s", rec.Code, rec.Body)
	}
	conditionsKept("v1 PUT without the conditions annotation")
	memoryKept("v1 PUT")
	if got := h.mustDo("GET", v2+"/hm", "", "", http.StatusOK); got["spec"].(map[string]interface{})["maxReplicas"] != float64(6) {
		t.Errorf("v1 PUT's maxReplicas not written: %v", got["spec"])
	}

	// A Deployment's status write neither sets nor clears the rollback.
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"web","annotations":{"deprecated.deployment.rollback.to":"3"}},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	rec := h.do("PATCH", deps+"/web/status", merge, []byte(`{"metadata":{"annotations":{"deprecated.deployment.rollback.to":null,"other":"x"}}}`))
	if !strings.Contains(rec.Body.String(), `"deprecated.deployment.rollback.to":"3"`) || !strings.Contains(rec.Body.String(), `"other":"x"`) {
		t.Errorf("status patch clearing the rollback: %d %s; want it kept, the other annotation written", rec.Code, rec.Body)
	}
}

// TestUnconvertibleAnnotations: a body whose annotations kube converts
// into fields and cannot parse is refused by the decoder, as kube's: a
// 400 on create and update, an invalid patch on a merge patch.
func TestUnconvertibleAnnotations(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	const dss = "/apis/apps/v1/namespaces/default/daemonsets"
	const body = `{"metadata":{"name":"agent"%s},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`
	bad := `,"annotations":{"deprecated.daemonset.template.generation":"abc"}`
	rec := h.do("POST", dss, hd, []byte(strings.Replace(body, "%s", bad, 1)))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), `DaemonSet in version \"v1\" cannot be handled as a DaemonSet: strconv.ParseInt: parsing \"abc\": invalid syntax`) {
		t.Errorf("daemon set create: %d %s; want 400 from the decoder", rec.Code, rec.Body)
	}
	h.mustDo("POST", dss, "application/json", strings.Replace(body, "%s", "", 1), http.StatusCreated)
	rec = h.do("PATCH", dss+"/agent", map[string]string{"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
		[]byte(`{"metadata":{"annotations":{"deprecated.daemonset.template.generation":"abc"}}}`))
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `"field":"patch"`) ||
		!strings.Contains(rec.Body.String(), `strconv.ParseInt: parsing \"abc\": invalid syntax`) {
		t.Errorf("daemon set merge patch: %d %s; want 422 on the patch", rec.Code, rec.Body)
	}
	rec = h.do("POST", "/apis/apps/v1/namespaces/default/deployments", hd, []byte(`{"metadata":{"name":"web","annotations":{"deprecated.deployment.rollback.to":"abc"}},
	  "spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`))
	if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(),
		`Deployment in version \"v1\" cannot be handled as a Deployment: failed to parse annotation[deprecated.deployment.rollback.to]=abc as int64`) {
		t.Errorf("deployment create: %d %s; want 400 from the decoder", rec.Code, rec.Body)
	}
}
