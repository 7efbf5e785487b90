package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPodSubresources: what a kubelet would serve answers as on
// kube-apiserver when there is no kubelet to ask (TestKubeletStreams has
// one); binding and eviction change the store.
func TestPodSubresources(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	const pods = "/api/v1/namespaces/default/pods"
	mustCreate := func(path, body string) {
		t.Helper()
		if r := h.do("POST", path, ct, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", path, r.Code, r.Body)
		}
	}
	mustCreate(pods, `{"metadata":{"name":"one","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)
	mustCreate(pods, `{"metadata":{"name":"two"},"spec":{"initContainers":[{"name":"init","image":"busybox"}],"containers":[{"name":"a","image":"busybox"},{"name":"b","image":"busybox"}]}}`)
	mustCreate("/api/v1/namespaces/default/services", `{"metadata":{"name":"web"},"spec":{"selector":{"app":"web"},"ports":[{"port":80}]}}`)

	check := func(method, path, body string, code int, text string) {
		t.Helper()
		r := h.do(method, path, ct, []byte(body))
		if r.Code != code || !strings.Contains(r.Body.String(), text) {
			t.Errorf("%s %s: %d %s; want %d with %q", method, path, r.Code, r.Body, code, text)
		}
	}
	check("GET", pods+"/one/log", "", http.StatusNoContent, "")
	check("GET", pods+"/one/log?tailLines=x", "", http.StatusBadRequest, `parsing \"x\": invalid syntax`)
	check("GET", pods+"/one/log?tailLines=-1", "", http.StatusUnprocessableEntity, "tailLines: Invalid value: -1: must be greater than or equal to 0")
	check("GET", pods+"/one/log?sinceSeconds=5&sinceTime=2026-01-01T00:00:00Z", "", http.StatusUnprocessableEntity, "at most one of `sinceTime` or `sinceSeconds` may be specified")
	check("GET", pods+"/two/log", "", http.StatusBadRequest, "a container name must be specified for pod two, choose one of: [init a b]")
	check("GET", pods+"/one/log?container=nope", "", http.StatusBadRequest, "container nope is not valid for pod one")
	check("POST", pods+"/one/exec?command=ls&stdout=true", "", http.StatusBadRequest, "pod one does not have a host assigned")
	check("GET", pods+"/one/attach", "", http.StatusBadRequest, "pod one does not have a host assigned")
	check("POST", pods+"/one/portforward?ports=80", "", http.StatusBadRequest, "pod one does not have a host assigned")
	check("GET", pods+"/one/proxy/healthz", "", http.StatusBadRequest, "address not allowed")
	check("GET", pods+"/absent/log", "", http.StatusNotFound, `pods \"absent\" not found`)
	// No Endpoints object (no endpoints controller runs here): the lookup's 404, as kube-apiserver's.
	check("GET", "/api/v1/namespaces/default/services/web:80/proxy/", "", http.StatusNotFound, `endpoints \"web\" not found`)
	check("GET", "/api/v1/nodes/n1/proxy/metrics", "", http.StatusNotFound, `nodes \"n1\" not found`)
	check("DELETE", pods+"/one/log", "", http.StatusMethodNotAllowed, "")

	// A connecter (kube's exec, attach, port-forward and proxies) refuses
	// a dry run, even an empty one, before it looks the object up; the
	// log, a plain read, ignores it.
	for _, path := range []string{pods + "/absent/exec?command=ls&dryRun", pods + "/absent/attach?dryRun=All", pods + "/absent/portforward?dryRun=",
		pods + "/absent/proxy/x?dryRun=All", "/api/v1/namespaces/default/services/absent/proxy/?dryRun", "/api/v1/nodes/absent/proxy/metrics?dryRun=All"} {
		check("POST", path, "", http.StatusBadRequest, `"message":"dryRun is not supported"`)
	}
	check("GET", pods+"/one/log?dryRun=All", "", http.StatusNoContent, "")
	// Methods are kube's routes': a proxy relays HEAD and OPTIONS too;
	// a stream opens by GET or POST alone; a built-in kind has no HEAD.
	check("OPTIONS", pods+"/one/proxy/healthz", "", http.StatusBadRequest, "address not allowed")
	check("HEAD", pods+"/one/proxy/healthz", "", http.StatusBadRequest, "")
	check("OPTIONS", "/api/v1/namespaces/default/services/web:80/proxy/", "", http.StatusNotFound, `endpoints \"web\" not found`)
	check("OPTIONS", "/api/v1/nodes/n1/proxy/metrics", "", http.StatusNotFound, `nodes \"n1\" not found`)
	for _, path := range []string{pods + "/one/exec?command=ls", pods + "/one/attach", pods + "/one/portforward"} {
		for _, method := range []string{"HEAD", "PUT", "OPTIONS"} {
			check(method, path, "", http.StatusMethodNotAllowed, "")
		}
	}
	for _, path := range []string{pods, pods + "/one", pods + "/one/log", pods + "/one/status", "/api/v1/namespaces"} {
		check("HEAD", path, "", http.StatusMethodNotAllowed, "")
	}
	check("OPTIONS", pods+"/one", "", http.StatusMethodNotAllowed, "")

	// Binding: the scheduler's way to assign a node, once.
	check("POST", pods+"/one/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"one"},"target":{"kind":"Pod","name":"n1"}}`,
		http.StatusUnprocessableEntity, "target.kind")
	check("POST", pods+"/one/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"two"},"target":{"name":"n1"}}`,
		http.StatusBadRequest, "name in URL does not match name in Binding object")
	check("POST", pods+"/one/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"one","annotations":{"a":"b"}},"target":{"name":"n1"}}`,
		http.StatusCreated, `"status":"Success"`)
	var pod struct {
		Metadata struct {
			Annotations   map[string]string
			ManagedFields []struct{ Subresource string }
		}
		Spec   struct{ NodeName string }
		Status struct {
			Conditions []struct{ Type, Status string }
		}
	}
	if err := json.Unmarshal(h.do("GET", pods+"/one", nil, nil).Body.Bytes(), &pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.NodeName != "n1" || pod.Metadata.Annotations["a"] != "b" || len(pod.Status.Conditions) == 0 {
		t.Fatalf("bound pod %+v", pod)
	}
	// kube-apiserver's binding writes the Pod without field tracking.
	for _, e := range pod.Metadata.ManagedFields {
		if e.Subresource == "binding" {
			t.Errorf("the binding added a managedFields entry: %+v", pod.Metadata.ManagedFields)
		}
	}
	check("POST", pods+"/one/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"one"},"target":{"name":"n2"}}`,
		http.StatusConflict, `pod one is already assigned to node \"n1\"`)
	// Bound to a Node: the node must exist, and say where its kubelet is.
	check("GET", pods+"/one/log", "", http.StatusNotFound, `nodes \"n1\" not found`)
	mustCreate("/api/v1/nodes", `{"metadata":{"name":"n1"}}`)
	check("GET", pods+"/one/log", "", http.StatusInternalServerError, "no preferred addresses found; known addresses: []")
	check("GET", "/api/v1/nodes/n1/proxy/metrics", "", http.StatusInternalServerError, "no preferred addresses found; known addresses: []")

	// Eviction: a Pending Pod goes at once; a running one only within its
	// PodDisruptionBudget. A policy/v1beta1 body is taken too, as kube's
	// eviction takes it; another kind is refused.
	check("POST", pods+"/two/eviction", `{"apiVersion":"policy/v1","kind":"Other","metadata":{"name":"two"}}`, http.StatusBadRequest, "")
	// Its delete options are checked as kube's eviction checks them, and
	// a dryRun disagreeing with the request's is kube's plain 500.
	check("POST", pods+"/two/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"two"},"deleteOptions":{"ignoreStoreReadErrorWithClusterBreakingPotential":true}}`,
		http.StatusUnprocessableEntity, `deleteOptions.ignoreStoreReadErrorWithClusterBreakingPotential: Invalid value: true: can not be set for pod eviction, try after removing the option`)
	check("POST", pods+"/two/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"two"},"deleteOptions":{"propagationPolicy":"Bogus"}}`,
		http.StatusUnprocessableEntity, `DeleteOptions.meta.k8s.io \"\" is invalid: propagationPolicy: Unsupported value: \"Bogus\"`)
	check("POST", pods+"/two/eviction?dryRun=All", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"two"},"deleteOptions":{"dryRun":["Bogus"]}}`,
		http.StatusInternalServerError, `"status":"Failure","message":"Non-matching dry-run options in request and content: [All] and [Bogus]","code":500}`)
	check("POST", pods+"/two/eviction", `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"two"}}`, http.StatusCreated, `"status":"Success"`)
	h.eventually("the evicted pod is gone", func() bool { return h.do("GET", pods+"/two", nil, nil).Code == http.StatusNotFound })
	running := func(name string, ready bool) {
		t.Helper()
		body := `{"status":{"phase":"Running","conditions":[{"type":"Ready","status":"` + map[bool]string{true: "True", false: "False"}[ready] + `"}]}}`
		if r := h.do("PATCH", pods+"/"+name+"/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(body)); r.Code != http.StatusOK {
			t.Fatalf("mark %s running: %d %s", name, r.Code, r.Body)
		}
	}
	running("one", true)
	const pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	mustCreate(pdbs, `{"metadata":{"name":"web"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}`)
	check("POST", pods+"/one/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"one"}}`,
		http.StatusTooManyRequests, "The disruption budget web is still being processed by the server.")
	if r := h.do("POST", pods+"/one/eviction", ct, []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"one"}}`)); r.Header().Get("Retry-After") != "10" {
		t.Errorf("a budget still being processed: Retry-After %q; want 10, which client-go waits and retries on", r.Header().Get("Retry-After"))
	}
	// Two budgets over one Pod: kube answers the failure as the create's
	// result, with 201.
	mustCreate(pdbs, `{"metadata":{"name":"web2"},"spec":{"minAvailable":1,"selector":{"matchLabels":{"app":"web"}}}}`)
	check("POST", pods+"/one/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"one"}}`,
		http.StatusCreated, `"status":"Failure","message":"This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.","code":500`)
	if r := h.do("DELETE", pdbs+"/web2", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete web2: %d %s", r.Code, r.Body)
	}
	if r := h.do("PATCH", pdbs+"/web/status", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"status":{"observedGeneration":1,"disruptionsAllowed":0,"currentHealthy":1,"desiredHealthy":1,"expectedPods":1}}`)); r.Code != http.StatusOK {
		t.Fatalf("pdb status: %d %s", r.Code, r.Body)
	}
	check("POST", pods+"/one/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"one"}}`,
		http.StatusTooManyRequests, "The disruption budget web needs 1 healthy pods and has 1 currently")
	if r := h.do("PATCH", pdbs+"/web/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"disruptionsAllowed":1}}`)); r.Code != http.StatusOK {
		t.Fatalf("pdb status: %d %s", r.Code, r.Body)
	}
	check("POST", pods+"/one/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"one"}}`, http.StatusCreated, `"status":"Success"`)
	var pdb struct {
		Status struct {
			DisruptionsAllowed int
			DisruptedPods      map[string]string
		}
	}
	if err := json.Unmarshal(h.do("GET", pdbs+"/web", nil, nil).Body.Bytes(), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Status.DisruptedPods["one"] == "" {
		t.Fatalf("budget after the eviction: %+v; want 0 allowed and pod one recorded", pdb.Status)
	}
	// The evicted Pod, in its grace period on its node, is marked as
	// kube marks it, for Jobs' pod failure policies.
	var evicted struct {
		Metadata struct{ DeletionTimestamp string }
		Status   struct {
			Conditions []struct{ Type, Status, Reason, Message string }
		}
	}
	if err := json.Unmarshal(h.do("GET", pods+"/one", nil, nil).Body.Bytes(), &evicted); err != nil {
		t.Fatal(err)
	}
	marked := false
	for _, c := range evicted.Status.Conditions {
		marked = marked || c.Type == "DisruptionTarget" && c.Status == "True" && c.Reason == "EvictionByEvictionAPI" && c.Message == "Eviction API: evicting"
	}
	if !marked || evicted.Metadata.DeletionTimestamp == "" {
		t.Errorf("the evicted pod: %+v; want it terminating with the DisruptionTarget condition", evicted)
	}

	// An unready Pod under a healthy budget goes without spending it
	// (kubectl drain past a crash-looping Pod); under an unhealthy one it
	// is refused.
	for _, name := range []string{"three", "four"} {
		mustCreate(pods, `{"metadata":{"name":"`+name+`","labels":{"app":"web"}},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`)
		running(name, false)
	}
	check("POST", pods+"/three/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"three"}}`, http.StatusCreated, `"status":"Success"`)
	if err := json.Unmarshal(h.do("GET", pdbs+"/web", nil, nil).Body.Bytes(), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Status.DisruptedPods["three"] != "" {
		t.Errorf("budget after evicting an unready pod: %+v; want it unspent", pdb.Status)
	}
	if r := h.do("PATCH", pdbs+"/web/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"currentHealthy":0}}`)); r.Code != http.StatusOK {
		t.Fatalf("pdb status: %d %s", r.Code, r.Body)
	}
	check("POST", pods+"/four/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"four"}}`,
		http.StatusTooManyRequests, "The disruption budget web needs 1 healthy pods and has 0 currently")
}

// TestBindingAndEvictionGuards: what kube-apiserver's binding and eviction
// storage refuse or only pretend to do — a dry run in the query, the
// binding's resourceVersion and a Pod's scheduling gates as
// preconditions, a body naming another namespace — and what a binding
// carries over besides the node (its labels; the nomination cleared).
func TestBindingAndEvictionGuards(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	mergePatch := map[string]string{"Content-Type": "application/merge-patch+json"}
	const pods = "/api/v1/namespaces/default/pods"
	type podView struct {
		Metadata struct {
			ResourceVersion string
			Labels          map[string]string
		}
		Spec   struct{ NodeName string }
		Status struct{ NominatedNodeName string }
	}
	get := func(name string) (podView, int) {
		t.Helper()
		var p podView
		r := h.do("GET", pods+"/"+name, nil, nil)
		if r.Code == http.StatusOK {
			if err := json.Unmarshal(r.Body.Bytes(), &p); err != nil {
				t.Fatal(err)
			}
		}
		return p, r.Code
	}
	check := func(method, path, body string, code int, text string) {
		t.Helper()
		r := h.do(method, path, ct, []byte(body))
		if r.Code != code || !strings.Contains(r.Body.String(), text) {
			t.Errorf("%s %s: %d %s; want %d with %q", method, path, r.Code, r.Body, code, text)
		}
	}
	for _, name := range []string{"a", "b", "gated"} {
		spec := `{"containers":[{"name":"c","image":"busybox"}]}`
		if name == "gated" {
			spec = `{"schedulingGates":[{"name":"wait"}],"containers":[{"name":"c","image":"busybox"}]}`
		}
		check("POST", pods, `{"metadata":{"name":"`+name+`","labels":{"app":"x"}},"spec":`+spec+`}`, http.StatusCreated, "")
	}

	// Dry runs answer as the real thing would and change nothing.
	check("POST", pods+"/a/binding?dryRun=All", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a"},"target":{"name":"n1"}}`, http.StatusCreated, `"status":"Success"`)
	check("POST", "/api/v1/namespaces/default/bindings?dryRun=All", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a"},"target":{"name":"n1"}}`, http.StatusCreated, `"status":"Success"`)
	if p, _ := get("a"); p.Spec.NodeName != "" {
		t.Errorf("a dry-run binding bound the pod to %q", p.Spec.NodeName)
	}
	check("POST", pods+"/b/eviction?dryRun=All", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"b"}}`, http.StatusCreated, `"status":"Success"`)
	if _, code := get("b"); code != http.StatusOK {
		t.Errorf("a dry-run eviction deleted the pod: get %d", code)
	}

	// Bodies naming another namespace are refused.
	check("POST", pods+"/b/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"b","namespace":"kube-system"}}`,
		http.StatusBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
	check("POST", pods+"/a/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a","namespace":"kube-system"},"target":{"name":"n1"}}`,
		http.StatusBadRequest, "the namespace of the provided object does not match the namespace sent on the request")
	if _, code := get("b"); code != http.StatusOK {
		t.Errorf("an eviction refused for its namespace deleted the pod: get %d", code)
	}

	// Preconditions: a stale resourceVersion, scheduling gates.
	check("POST", pods+"/a/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a","resourceVersion":"1"},"target":{"name":"n1"}}`,
		http.StatusConflict, "Precondition failed: ResourceVersion in precondition: 1, ResourceVersion in object meta: ")
	check("POST", pods+"/gated/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"gated"},"target":{"name":"n1"}}`,
		http.StatusConflict, "pod gated has non-empty .spec.schedulingGates")
	if p, _ := get("gated"); p.Spec.NodeName != "" {
		t.Errorf("a gated pod was bound to %q", p.Spec.NodeName)
	}

	// A binding at the Pod's current resourceVersion binds it, copies its
	// labels over the Pod's and clears the nomination.
	if r := h.do("PATCH", pods+"/a/status", mergePatch, []byte(`{"status":{"nominatedNodeName":"n1"}}`)); r.Code != http.StatusOK {
		t.Fatalf("nominate: %d %s", r.Code, r.Body)
	}
	cur, _ := get("a")
	check("POST", pods+"/a/binding", `{"apiVersion":"v1","kind":"Binding","metadata":{"name":"a","resourceVersion":"`+cur.Metadata.ResourceVersion+`","labels":{"app":"y","topology.k8s.io/zone":"z1"}},"target":{"name":"n1"}}`,
		http.StatusCreated, `"status":"Success"`)
	p, _ := get("a")
	if p.Spec.NodeName != "n1" || p.Status.NominatedNodeName != "" || p.Metadata.Labels["app"] != "y" || p.Metadata.Labels["topology.k8s.io/zone"] != "z1" {
		t.Errorf("bound pod: node %q, nominated %q, labels %v; want n1, none, app=y and the zone", p.Spec.NodeName, p.Status.NominatedNodeName, p.Metadata.Labels)
	}

	// A running Pod's dry-run eviction checks its budget and spends none of it.
	if r := h.do("PATCH", pods+"/b/status", mergePatch, []byte(`{"status":{"phase":"Running"}}`)); r.Code != http.StatusOK {
		t.Fatalf("mark running: %d %s", r.Code, r.Body)
	}
	const pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	check("POST", pdbs, `{"metadata":{"name":"x"},"spec":{"minAvailable":0,"selector":{"matchLabels":{"app":"x"}}}}`, http.StatusCreated, "")
	if r := h.do("PATCH", pdbs+"/x/status", mergePatch, []byte(`{"status":{"observedGeneration":1,"disruptionsAllowed":1,"currentHealthy":1,"desiredHealthy":0,"expectedPods":1}}`)); r.Code != http.StatusOK {
		t.Fatalf("pdb status: %d %s", r.Code, r.Body)
	}
	check("POST", pods+"/b/eviction", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"b"},"deleteOptions":{"dryRun":["All"]}}`, http.StatusCreated, `"status":"Success"`)
	check("POST", pods+"/b/eviction?dryRun=All", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"b"}}`, http.StatusCreated, `"status":"Success"`)
	var pdb struct {
		Status struct {
			DisruptionsAllowed int
			DisruptedPods      map[string]string
		}
	}
	if err := json.Unmarshal(h.do("GET", pdbs+"/x", nil, nil).Body.Bytes(), &pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Status.DisruptionsAllowed != 1 || len(pdb.Status.DisruptedPods) != 0 {
		t.Errorf("budget after dry-run evictions: %+v; want 1 allowed, none disrupted", pdb.Status)
	}
	if _, code := get("b"); code != http.StatusOK {
		t.Errorf("a dry-run eviction of a running pod deleted it: get %d", code)
	}
}

// TestPodTopologyLabels: kube 1.35's PodTopologyLabels admission (on by
// default) copies the Node's zone and region labels onto a Pod bound to
// it, through the binding, and onto a Pod created with its node named.
func TestPodTopologyLabels(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	const pods = "/api/v1/namespaces/default/pods"
	for _, c := range []struct{ path, body string }{
		{"/api/v1/nodes", `{"metadata":{"name":"n1","labels":{"topology.kubernetes.io/zone":"z1","topology.kubernetes.io/region":"r1","other":"x"}}}`},
		{pods, `{"metadata":{"name":"bound"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`},
	} {
		if r := h.do("POST", c.path, ct, []byte(c.body)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.path, r.Code, r.Body)
		}
	}
	labels := func(name string) map[string]string {
		t.Helper()
		var p struct {
			Metadata struct{ Labels map[string]string }
		}
		if err := json.Unmarshal(h.do("GET", pods+"/"+name, nil, nil).Body.Bytes(), &p); err != nil {
			t.Fatal(err)
		}
		return p.Metadata.Labels
	}
	want := func(name string, l map[string]string) {
		t.Helper()
		if l["topology.kubernetes.io/zone"] != "z1" || l["topology.kubernetes.io/region"] != "r1" || l["other"] != "" {
			t.Errorf("%s's labels %v; want the node's zone and region only", name, l)
		}
	}
	// The plugin reads Nodes from its informer, as kube's does: a dry-run
	// create on the node shows when the Node has reached it.
	h.eventually("the plugin to see the node", func() bool {
		r := h.do("POST", pods+"?dryRun=All", ct, []byte(`{"metadata":{"name":"probe"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`))
		return r.Code == http.StatusCreated && strings.Contains(r.Body.String(), `"topology.kubernetes.io/zone":"z1"`)
	})
	if r := h.do("POST", pods+"/bound/binding", ct, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bound"},"target":{"kind":"Node","name":"n1"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("binding: %d %s", r.Code, r.Body)
	}
	want("bound", labels("bound"))
	if r := h.do("POST", pods, ct, []byte(`{"metadata":{"name":"placed"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create placed: %d %s", r.Code, r.Body)
	}
	want("placed", labels("placed"))
	// The legacy bindings collection is admitted as itself, which the
	// plugin does not act on (kube: podtopologylabels/admission.go).
	if r := h.do("POST", pods, ct, []byte(`{"metadata":{"name":"legacy"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create legacy: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/namespaces/default/bindings", ct, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"legacy"},"target":{"kind":"Node","name":"n1"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("legacy binding: %d %s", r.Code, r.Body)
	}
	if l := labels("legacy"); l["topology.kubernetes.io/zone"] != "" {
		t.Errorf("a pod bound through /bindings got labels %v; want none copied", l)
	}
}

// TestEvictionMarkIsNotAdmittedAgain: the DisruptionTarget mark an
// eviction writes before its delete is the server's own, written without
// admission as kube's addConditionAndDeletePod writes it: a policy that
// refuses pods/status updates does not stop an eviction.
func TestEvictionMarkIsNotAdmittedAgain(t *testing.T) {
	h := refNewHarness(t)
	const vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies"
	h.mustDo("POST", vap, "application/json", `{"metadata":{"name":"frozen"},"spec":{"failurePolicy":"Fail",
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["UPDATE"],"resources":["pods/status"]}]},
		"validations":[{"expression":"false","message":"status is frozen"}]}}`, http.StatusCreated)
	h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings", "application/json",
		`{"metadata":{"name":"frozen"},"spec":{"policyName":"frozen","validationActions":["Deny"]}}`, http.StatusCreated)
	const pods = "/api/v1/namespaces/default/pods"
	h.mustDo("POST", pods, "application/json", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	h.waitFor("the policy to refuse a status update", func() bool {
		r := h.do("PATCH", pods+"/p/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"message":"x"}}`))
		return r.Code == http.StatusUnprocessableEntity && strings.Contains(r.Body.String(), "status is frozen")
	})
	h.mustDo("POST", pods+"/p/eviction", "application/json", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`, http.StatusCreated)
	h.mustDo("GET", pods+"/p", "", "", http.StatusNotFound)
}

// TestPodCreateAsKube: kube's pod strategy prepares a new Pod beyond its
// phase and QoS class: scheduling gates set PodScheduled=False
// (SchedulingGated); affinity terms' and spread constraints'
// matchLabelKeys and mismatchLabelKeys join their selectors with the
// Pod's values (kube-scheduler 1.35 reads only the selectors); a
// container's deprecated AppArmor annotation becomes its profile, with
// kube's warning.
func TestPodCreateAsKube(t *testing.T) {
	h := refNewHarness(t)
	rec := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json", "Accept": "application/json"}, []byte(`{
	  "metadata":{"name":"p","labels":{"app":"a","ver":"1","team":"t"},
	    "annotations":{"container.apparmor.security.beta.kubernetes.io/c":"runtime/default","container.apparmor.security.beta.kubernetes.io/d":"unconfined"}},
	  "spec":{"schedulingGates":[{"name":"g"}],"securityContext":{"appArmorProfile":{"type":"Unconfined"}},
	    "containers":[{"name":"c","image":"i"},{"name":"d","image":"i"}],
	    "affinity":{"podAntiAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":[
	      {"topologyKey":"kubernetes.io/hostname","labelSelector":{"matchLabels":{"app":"a"}},"matchLabelKeys":["ver","absent"],"mismatchLabelKeys":["team"]}]}},
	    "topologySpreadConstraints":[{"maxSkew":1,"topologyKey":"zone","whenUnsatisfiable":"DoNotSchedule",
	      "labelSelector":{"matchLabels":{"app":"a"}},"matchLabelKeys":["ver"]}]},
	  "status":{"phase":"Running","podIP":"10.0.0.5","hostIP":"192.0.2.1"}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	var pod map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &pod); err != nil {
		t.Fatal(err)
	}
	js := func(path ...interface{}) string {
		var v interface{} = pod
		for _, p := range path {
			switch k := p.(type) {
			case string:
				m, _ := v.(map[string]interface{})
				v = m[k]
			case int:
				l, _ := v.([]interface{})
				if k >= len(l) {
					return "missing"
				}
				v = l[k]
			}
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	if conds, _ := json.Marshal(pod["status"].(map[string]interface{})["conditions"]); strings.Count(string(conds), `"type"`) != 1 || js("status", "conditions", 0, "type") != `"PodScheduled"` || js("status", "conditions", 0, "status") != `"False"` ||
		js("status", "conditions", 0, "reason") != `"SchedulingGated"` || js("status", "conditions", 0, "message") != `"Scheduling is blocked due to non-empty scheduling gates"` {
		t.Errorf("conditions %s; want PodScheduled False SchedulingGated", js("status", "conditions"))
	}
	// The status sent is dropped, the singular podIP too (kube's
	// internal Pod has none to keep it in).
	if got := js("status", "podIP") + js("status", "hostIP") + js("status", "phase"); got != `nullnull"Pending"` {
		t.Errorf("status podIP, hostIP and phase %s; want none, none and Pending", got)
	}
	if got := js("spec", "affinity", "podAntiAffinity", "requiredDuringSchedulingIgnoredDuringExecution", 0, "labelSelector"); got !=
		`{"matchExpressions":[{"key":"ver","operator":"In","values":["1"]},{"key":"team","operator":"NotIn","values":["t"]}],"matchLabels":{"app":"a"}}` {
		t.Errorf("anti-affinity selector %s; want ver In (1) and team NotIn (t) merged", got)
	}
	if got := js("spec", "topologySpreadConstraints", 0, "labelSelector"); got != `{"matchExpressions":[{"key":"ver","operator":"In","values":["1"]}],"matchLabels":{"app":"a"}}` {
		t.Errorf("spread constraint selector %s; want ver In (1) merged", got)
	}
	if got := js("spec", "containers", 0, "securityContext"); got != `{"appArmorProfile":{"type":"RuntimeDefault"}}` {
		t.Errorf("container c securityContext %s; want the annotation's RuntimeDefault profile", got)
	}
	if got := js("spec", "containers", 1, "securityContext"); got != "null" {
		t.Errorf("container d securityContext %s; want none (its annotation repeats the Pod's profile)", got)
	}
	warnings := strings.Join(rec.Header().Values("Warning"), "\n")
	for c, warned := range map[string]bool{"c": true, "d": false} {
		want := `metadata.annotations[container.apparmor.security.beta.kubernetes.io/` + c + `]: deprecated since v1.30; use the \"appArmorProfile\" field instead`
		if strings.Contains(warnings, want) != warned {
			t.Errorf("warnings %s; want the one of container %s: %v", warnings, c, warned)
		}
	}
}

// TestNodeWritesAsKube: kube's node strategy drops the retired dynamic
// kubelet configuration from a written Node (spec.configSource unless it
// had one, status.config on create) and warns of it, of externalID and
// of pod CIDRs written ambiguously.
func TestNodeWritesAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	rec := h.do("POST", "/api/v1/nodes", hd, []byte(`{"metadata":{"name":"n1"},
	  "spec":{"externalID":"x","podCIDRs":["10.1.0.5/24"],"configSource":{"configMap":{"name":"c","namespace":"kube-system","kubeletConfigKey":"k"}}},
	  "status":{"config":{"error":"e"}}}`))
	if rec.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", rec.Code, rec.Body)
	}
	var node struct {
		Spec   map[string]interface{}
		Status map[string]interface{}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &node); err != nil {
		t.Fatal(err)
	}
	if node.Spec["configSource"] != nil || node.Status["config"] != nil || node.Spec["externalID"] != "x" {
		t.Errorf("created node spec %v status %v; want configSource and status.config dropped, externalID kept", node.Spec, node.Status)
	}
	// configSource is dropped before kube's warnings look.
	warnings := rec.Header().Values("Warning")
	for _, want := range []string{`spec.externalID: this field is deprecated, and is unused by Kubernetes`, `spec.podCIDRs[0]: CIDR value \"10.1.0.5/24\" is ambiguous in this context`} {
		if !strings.Contains(strings.Join(warnings, "\n"), want) {
			t.Errorf("create warnings %q; want %s", warnings, want)
		}
	}
	rec = h.do("PATCH", "/api/v1/nodes/n1", map[string]string{"Content-Type": "application/merge-patch+json", "Accept": "application/json"},
		[]byte(`{"spec":{"configSource":{"configMap":{"name":"c","namespace":"kube-system","kubeletConfigKey":"k"}}}}`))
	node.Spec = nil
	if err := json.Unmarshal(rec.Body.Bytes(), &node); rec.Code != http.StatusOK || err != nil || node.Spec["configSource"] != nil {
		t.Errorf("patch adding configSource: %d %s; want it dropped", rec.Code, rec.Body)
	}
}

// TestStatusIPWarnings: kube's status strategies warn of IPs written in
// forms a later release will refuse: a Pod's podIPs and hostIPs, a
// Service's load balancer ingress.
func TestStatusIPWarnings(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	patch := map[string]string{"Content-Type": "application/merge-patch+json", "Accept": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/pods", hd, []byte(`{"metadata":{"name":"p"},"spec":{"nodeName":"n","containers":[{"name":"c","image":"i"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", r.Code, r.Body)
	}
	rec := h.do("PATCH", "/api/v1/namespaces/default/pods/p/status", patch,
		[]byte(`{"status":{"podIP":"::ffff:10.0.0.1","podIPs":[{"ip":"::ffff:10.0.0.1"}],"hostIP":"2001:db8::0:1","hostIPs":[{"ip":"2001:db8::0:1"}]}}`))
	if rec.Code != http.StatusOK {
		t.Fatalf("pod status: %d %s", rec.Code, rec.Body)
	}
	got := strings.Join(rec.Header().Values("Warning"), "\n")
	for _, want := range []string{`status.podIPs[0].ip: non-standard IP address \"::ffff:10.0.0.1\" will be considered invalid in a future Kubernetes release: use \"10.0.0.1\"`,
		`status.hostIPs[0].ip: IPv6 address \"2001:db8::0:1\" should be in RFC 5952 canonical format (\"2001:db8::1\")`} {
		if !strings.Contains(got, want) {
			t.Errorf("pod status warnings %q; want %s", got, want)
		}
	}
	if r := h.do("POST", "/api/v1/namespaces/default/services", hd, []byte(`{"metadata":{"name":"s"},"spec":{"type":"LoadBalancer","ports":[{"port":80}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create service: %d %s", r.Code, r.Body)
	}
	rec = h.do("PATCH", "/api/v1/namespaces/default/services/s/status", patch, []byte(`{"status":{"loadBalancer":{"ingress":[{"ip":"2001:db8::0:2"}]}}}`))
	if got := strings.Join(rec.Header().Values("Warning"), "\n"); rec.Code != http.StatusOK ||
		!strings.Contains(got, `status.loadBalancer.ingress[0]: IPv6 address \"2001:db8::0:2\" should be in RFC 5952 canonical format (\"2001:db8::2\")`) {
		t.Errorf("service status: %d, warnings %q", rec.Code, got)
	}
}

// TestEvictionRewritesDisruptionTarget: an eviction marks the Pod as
// kube's UpdatePodCondition does: a DisruptionTarget condition already
// True (a preemption's) takes the eviction's reason and message, keeps
// its transition time and loses its probe time.
func TestEvictionRewritesDisruptionTarget(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/pods", hd, []byte(`{"metadata":{"name":"p"},"spec":{"nodeName":"n","containers":[{"name":"c","image":"i"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", r.Code, r.Body)
	}
	if r := h.do("PATCH", "/api/v1/namespaces/default/pods/p/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"phase":"Running",
	  "conditions":[{"type":"DisruptionTarget","status":"True","reason":"PreemptionByScheduler","message":"m","lastProbeTime":"2026-01-01T00:00:00Z","lastTransitionTime":"2026-01-02T00:00:00Z"}]}}`)); r.Code != http.StatusOK {
		t.Fatalf("pod status: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/namespaces/default/pods/p/eviction", hd, []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("eviction: %d %s", r.Code, r.Body)
	}
	var pod struct {
		Status struct{ Conditions []map[string]interface{} }
	}
	rec := h.do("GET", "/api/v1/namespaces/default/pods/p", hd, nil)
	if err := json.Unmarshal(rec.Body.Bytes(), &pod); err != nil {
		t.Fatalf("get: %d %s", rec.Code, rec.Body)
	}
	if len(pod.Status.Conditions) != 1 {
		t.Fatalf("conditions %v", pod.Status.Conditions)
	}
	c := pod.Status.Conditions[0]
	if c["reason"] != "EvictionByEvictionAPI" || c["message"] != "Eviction API: evicting" || c["lastProbeTime"] != nil || c["lastTransitionTime"] != "2026-01-02T00:00:00Z" {
		t.Errorf("condition %v; want the eviction's reason and message, no probe time, the old transition time", c)
	}
}

// TestBindingPreconditionAsKube: a Binding whose UID precondition fails is
// kube's storage conflict on the Pod, with its StorageError text.
func TestBindingPreconditionAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/pods", hd, []byte(`{"metadata":{"name":"b3"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", r.Code, r.Body)
	}
	rec := h.do("POST", "/api/v1/namespaces/default/pods/b3/binding", hd, []byte(`{"metadata":{"name":"b3","uid":"abc"},"target":{"name":"n1"}}`))
	want := `Operation cannot be fulfilled on pods \"b3\": StorageError: invalid object, Code: 4, Key: /registry/pods/default/b3, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: abc, UID in object meta: `
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `"kind":"pods"`) {
		t.Errorf("binding with a wrong UID: %d %s; want kube's 409 on pods", rec.Code, rec.Body)
	}
}
