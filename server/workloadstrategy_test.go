package server_test

import (
	"encoding/json"
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

// TestWorkloadWarningsAsKube: the workload kinds and Pods warn as kube's
// strategies do: about deprecated pod template fields on create and on
// a spec change (not on a change of labels alone), a name that is not a
// DNS label where Pods are named after it, a StatefulSet keeping every
// revision. A PodTemplate's generation starts at 1, as kube's strategy
// sets it.
func TestWorkloadWarningsAsKube(t *testing.T) {
	h := refNewHarness(t)
	const js = "application/json"
	const betaOS = `spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use \"kubernetes.io/os\" instead`
	template := `"template":{"metadata":{"labels":{"app":"w"}},"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"},"containers":[{"name":"c","image":"busybox"}]}}`
	warnings := func(method, path, body string, want int) string {
		t.Helper()
		ct := js
		if method == "PATCH" {
			ct = "application/merge-patch+json"
		}
		r := h.do(method, path, map[string]string{"Content-Type": ct}, []byte(body))
		if r.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, r.Code, r.Body)
		}
		return strings.Join(r.Header().Values("Warning"), "\n")
	}
	const deploys = "/apis/apps/v1/namespaces/default/deployments"
	w := warnings("POST", deploys, `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web.v1"},"spec":{"selector":{"matchLabels":{"app":"w"}},`+template+`}}`, http.StatusCreated)
	if !strings.Contains(w, betaOS) || !strings.Contains(w, "metadata.name: this is used in Pod names and hostnames") {
		t.Errorf("create: warnings %q; want the deprecated node selector and the name's", w)
	}
	if w := warnings("PATCH", deploys+"/web.v1", `{"metadata":{"labels":{"x":"y"}}}`, http.StatusOK); w != "" {
		t.Errorf("a label change: warnings %q; want none", w)
	}
	if w := warnings("PATCH", deploys+"/web.v1", `{"spec":{"replicas":3}}`, http.StatusOK); !strings.Contains(w, betaOS) || strings.Contains(w, "metadata.name") {
		t.Errorf("a spec change: warnings %q; want the template's, not the name's", w)
	}

	const stss = "/apis/apps/v1/namespaces/default/statefulsets"
	w = warnings("POST", stss, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"serviceName":"s","revisionHistoryLimit":-1,"selector":{"matchLabels":{"app":"w"}},`+template+`}}`, http.StatusCreated)
	if !strings.Contains(w, "spec.revisionHistoryLimit: a negative value retains all historical revisions") {
		t.Errorf("StatefulSet keeping every revision: warnings %q", w)
	}

	const cjs = "/apis/batch/v1/namespaces/default/cronjobs"
	warnings("POST", cjs, `{"apiVersion":"batch/v1","kind":"CronJob","metadata":{"name":"cj"},"spec":{"schedule":"* * * * *","jobTemplate":{"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}}}`, http.StatusCreated)
	// A schedule with TZ is refused on create (only data from before
	// could carry one, and be warned about); this one is not warned about.
	if w := warnings("PATCH", cjs+"/cj", `{"spec":{"suspend":true}}`, http.StatusOK); w != "" {
		t.Errorf("CronJob update: warnings %q; want none", w)
	}

	const pods = "/api/v1/namespaces/default/pods"
	w = warnings("POST", pods, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p.1"},"spec":{"nodeSelector":{"beta.kubernetes.io/os":"linux"},"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	if !strings.Contains(w, `spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14`) || !strings.Contains(w, "metadata.name: this is used in the Pod's hostname") {
		t.Errorf("Pod create: warnings %q", w)
	}

	const pts = "/api/v1/namespaces/default/podtemplates"
	pt := h.mustDo("POST", pts, js, `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"pt"},`+template+`}`, http.StatusCreated)
	if refDig(pt, "metadata", "generation") != float64(1) {
		t.Errorf("PodTemplate generation %v; want 1", refDig(pt, "metadata", "generation"))
	}
}

// TestDisabledFieldsDropped: fields behind kube 1.35's gates that are
// off by default are cleared on write, as kube's strategies clear them
// (a GitOps tool then sees the same diff on either server): a
// StatefulSet's maxUnavailable (MaxUnavailableStatefulSet, so 0 is not
// refused either), a container's stopSignal (ContainerStopSignals) in a
// Pod and in a pod template.
func TestDisabledFieldsDropped(t *testing.T) {
	h := refNewHarness(t)
	const js = "application/json"
	container := `{"name":"c","image":"busybox","lifecycle":{"stopSignal":"SIGUSR1"}}`
	sts := h.mustDo("POST", "/apis/apps/v1/namespaces/default/statefulsets", js, `{"apiVersion":"apps/v1","kind":"StatefulSet","metadata":{"name":"s"},"spec":{"serviceName":"s","updateStrategy":{"type":"RollingUpdate","rollingUpdate":{"maxUnavailable":0}},"selector":{"matchLabels":{"app":"s"}},"template":{"metadata":{"labels":{"app":"s"}},"spec":{"os":{"name":"linux"},"containers":[`+container+`]}}}}`, http.StatusCreated)
	if mu := refDig(sts, "spec", "updateStrategy", "rollingUpdate", "maxUnavailable"); mu != nil {
		t.Errorf("StatefulSet maxUnavailable %v; want it dropped", mu)
	}
	first := func(containers interface{}) interface{} {
		l, _ := containers.([]interface{})
		if len(l) == 0 {
			t.Fatalf("no containers in the answer")
		}
		return l[0]
	}
	if s := refDig(first(refDig(sts, "spec", "template", "spec", "containers")), "lifecycle"); s != nil {
		t.Errorf("pod template's lifecycle %v; want stopSignal dropped", s)
	}
	pod := h.mustDo("POST", "/api/v1/namespaces/default/pods", js, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"os":{"name":"linux"},"containers":[`+container+`]}}`, http.StatusCreated)
	if s := refDig(first(refDig(pod, "spec", "containers")), "lifecycle"); s != nil {
		t.Errorf("Pod's lifecycle %v; want stopSignal dropped", s)
	}
}

// TestScaleTable: a scale subresource is printed as kube's scale printer
// prints it (kubectl get deploy web --subresource=scale), and its
// metadata view is served.
func TestScaleTable(t *testing.T) {
	h := refNewHarness(t)
	h.mustDo("POST", "/apis/apps/v1/namespaces/default/deployments", "application/json", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"w"}},"template":{"metadata":{"labels":{"app":"w"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`, http.StatusCreated)
	const scale = "/apis/apps/v1/namespaces/default/deployments/web/scale"
	r := h.do("GET", scale, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}, nil)
	var tbl struct {
		Kind              string
		ColumnDefinitions []struct{ Name, Type string }
		Rows              []struct {
			Cells  []interface{}
			Object struct{ Kind string }
		}
	}
	if err := json.Unmarshal(r.Body.Bytes(), &tbl); err != nil || r.Code != http.StatusOK || tbl.Kind != "Table" {
		t.Fatalf("scale as Table: %d %s", r.Code, r.Body)
	}
	var cols []string
	for _, c := range tbl.ColumnDefinitions {
		cols = append(cols, c.Name+":"+c.Type)
	}
	if got := strings.Join(cols, ","); got != "Name:string,Desired:integer,Available:integer,Age:string" {
		t.Errorf("columns %s; want kube's scale printer's", got)
	}
	if len(tbl.Rows) != 1 || len(tbl.Rows[0].Cells) != 4 || tbl.Rows[0].Cells[0] != "web" || tbl.Rows[0].Cells[1] != float64(2) || tbl.Rows[0].Cells[2] != float64(0) ||
		tbl.Rows[0].Object.Kind != "PartialObjectMetadata" {
		t.Errorf("rows %+v; want web, 2 desired, 0 available, with its metadata", tbl.Rows)
	}
	m := h.mustDo("GET", scale, "", "", http.StatusOK)
	if m["kind"] != "Scale" {
		t.Errorf("plain scale: kind %v", m["kind"])
	}
	r = h.do("GET", scale, map[string]string{"Accept": "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io"}, nil)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"kind":"PartialObjectMetadata"`) {
		t.Errorf("scale metadata: %d %s", r.Code, r.Body)
	}
}
