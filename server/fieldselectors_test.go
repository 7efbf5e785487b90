package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestKindFieldSelectors: the field selectors kube-apiserver supports for
// a kind select by that kind's fields, in lists and in watches (a pod that
// comes to match is ADDED), with kube's legacy label (pods' spec.host) and
// kube's 400 for labels the kind does not support — what a scheduler and
// a kubelet rely on.
func TestKindFieldSelectors(t *testing.T) {
	h := refNewHarness(t)
	json := map[string]string{"Content-Type": "application/json"}
	pods := "/api/v1/namespaces/default/pods"
	pod := func(name, node string) {
		t.Helper()
		spec := `"containers":[{"name":"c","image":"nginx"}]`
		if node != "" {
			spec += `,"nodeName":"` + node + `"`
		}
		if r := h.do("POST", pods, json, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`"},"spec":{`+spec+`,"hostNetwork":true}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create pod %s: %d %s", name, r.Code, r.Body)
		}
	}
	pod("a", "n1")
	pod("b", "n2")
	pod("c", "")
	names := func(path, selector string) []string { return names(t, h, path, selector) }
	for _, c := range []struct{ selector, want string }{
		{"spec.nodeName=n1", "a"},
		{"spec.host=n2", "b"}, // kube's legacy label for spec.nodeName
		{"spec.nodeName=", "c"},
		{"spec.nodeName!=", "a,b"},
		{"status.phase!=Succeeded,status.phase!=Failed", "a,b,c"}, // the scheduler's pod informer
		{"status.phase=Running", ""},
		{"spec.hostNetwork=true,spec.restartPolicy=Always,spec.schedulerName=default-scheduler", "a,b,c"},
		{"spec.serviceAccountName=default,metadata.name=b", "b"},
	} {
		if got := strings.Join(names(pods, c.selector), ","); got != c.want {
			t.Errorf("pods ?fieldSelector=%s: [%s]; want [%s]", c.selector, got, c.want)
		}
	}

	if r := h.do("POST", "/api/v1/nodes", json, []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n1"},"spec":{"unschedulable":true}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", r.Code, r.Body)
	}
	if r := h.do("POST", "/api/v1/nodes", json, []byte(`{"apiVersion":"v1","kind":"Node","metadata":{"name":"n2"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", r.Code, r.Body)
	}
	if got := strings.Join(names("/api/v1/nodes", "spec.unschedulable=false"), ","); got != "n2" {
		t.Errorf("nodes ?fieldSelector=spec.unschedulable=false: [%s]; want [n2]", got)
	}

	// kube's conversion words the refusals, kind by kind.
	for _, c := range []struct{ path, selector, message string }{
		{pods, "spec.containers=x", "field label not supported: spec.containers"},
		{"/api/v1/nodes", "metadata.namespace=x", "field label not supported: metadata.namespace"},
		{"/apis/batch/v1/namespaces/default/jobs", "status.failed=1", `field label "status.failed" not supported for Job`},
		{"/api/v1/namespaces/default/configmaps", "data.k=v", `"data.k" is not a known field selector: only "metadata.name", "metadata.namespace"`},
	} {
		r := h.do("GET", c.path+"?fieldSelector="+c.selector, nil, nil)
		var st struct {
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		}
		_ = jsonUnmarshal(r.Body.Bytes(), &st)
		if r.Code != http.StatusBadRequest || st.Reason != "BadRequest" || st.Message != c.message {
			t.Errorf("%s ?fieldSelector=%s: %d %s %q; want 400 BadRequest %q", c.path, c.selector, r.Code, st.Reason, st.Message, c.message)
		}
	}

	// A kubelet's watch of its node's pods: a pod bound to it comes as
	// ADDED.
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	resp, err := http.Get(hs.URL + pods + "?watch=1&timeoutSeconds=20&fieldSelector=spec.nodeName=n3&resourceVersion=" + listRV(t, h, pods))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if r := h.do("POST", pods+"/c/binding", json, []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"c"},"target":{"kind":"Node","name":"n3"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("bind c to n3: %d %s", r.Code, r.Body)
	}
	line, err := bufio.NewReader(resp.Body).ReadBytes('\n')
	if err != nil {
		t.Fatal(err)
	}
	var ev struct {
		Type   string `json:"type"`
		Object struct {
			Metadata struct{ Name string }     `json:"metadata"`
			Spec     struct{ NodeName string } `json:"spec"`
		} `json:"object"`
	}
	if err := jsonUnmarshal(line, &ev); err != nil || ev.Type != "ADDED" || ev.Object.Metadata.Name != "c" || ev.Object.Spec.NodeName != "n3" {
		t.Fatalf("watch spec.nodeName=n3 after binding c there: %s (%v); want ADDED c on n3", line, err)
	}
}

func itemNames(t *testing.T, body []byte) []string {
	t.Helper()
	var list struct {
		Items []struct {
			Metadata struct{ Name string } `json:"metadata"`
		} `json:"items"`
	}
	if err := jsonUnmarshal(body, &list); err != nil {
		t.Fatalf("list: %v: %s", err, body)
	}
	var out []string
	for _, it := range list.Items {
		out = append(out, it.Metadata.Name)
	}
	slices.Sort(out)
	return out
}

func listRV(t *testing.T, h *refHarness, path string) string {
	t.Helper()
	var list struct {
		Metadata struct{ ResourceVersion string } `json:"metadata"`
	}
	r := h.do("GET", path, nil, nil)
	if err := jsonUnmarshal(r.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	return list.Metadata.ResourceVersion
}

func jsonUnmarshal(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("%w: %.200s", err, b)
	}
	return nil
}

// TestNodeCreateKeepsStatus: a kubelet registers its Node with its status
// (capacity, allocatable, addresses, conditions), and kube's node strategy
// keeps it on create; a Pod's create still starts from a Pending status.
func TestNodeCreateKeepsStatus(t *testing.T) {
	h := refNewHarness(t)
	body := `{"apiVersion":"v1","kind":"Node","metadata":{"name":"k1"},"status":{"capacity":{"cpu":"4","memory":"8Gi","pods":"110"},` +
		`"allocatable":{"cpu":"3800m","memory":"7Gi","pods":"110"},"addresses":[{"type":"InternalIP","address":"10.0.0.5"}],` +
		`"conditions":[{"type":"Ready","status":"True","reason":"KubeletReady","lastHeartbeatTime":"2026-11-25T00:00:00Z","lastTransitionTime":"2026-11-25T00:00:00Z"}],` +
		`"daemonEndpoints":{"kubeletEndpoint":{"Port":10250}}}}`
	if r := h.do("POST", "/api/v1/nodes", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
		t.Fatalf("create node: %d %s", r.Code, r.Body)
	}
	r := h.do("GET", "/api/v1/nodes/k1", nil, nil)
	var node struct {
		Status struct {
			Capacity    map[string]string `json:"capacity"`
			Allocatable map[string]string `json:"allocatable"`
			Addresses   []struct{ Address string }
			Conditions  []struct{ Type, Status string }
			Daemon      struct {
				Kubelet struct{ Port int } `json:"kubeletEndpoint"`
			} `json:"daemonEndpoints"`
		} `json:"status"`
	}
	if err := jsonUnmarshal(r.Body.Bytes(), &node); err != nil {
		t.Fatal(err)
	}
	st := node.Status
	if st.Capacity["cpu"] != "4" || st.Allocatable["memory"] != "7Gi" || len(st.Addresses) != 1 || st.Addresses[0].Address != "10.0.0.5" ||
		len(st.Conditions) != 1 || st.Conditions[0].Status != "True" || st.Daemon.Kubelet.Port != 10250 {
		t.Fatalf("node k1 after create: %s; want the status it was created with", r.Body)
	}
}

// TestLegacyBindings: the core bindings resource (what older schedulers
// POST) binds the Pod its metadata names, as pods/binding does: once.
func TestLegacyBindings(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/pods", ct, []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create pod: %d %s", r.Code, r.Body)
	}
	bind := []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n1"}}`)
	if r := h.do("POST", "/api/v1/namespaces/default/bindings", ct, bind); r.Code != http.StatusCreated || !strings.Contains(r.Body.String(), `"status":"Success"`) {
		t.Fatalf("POST bindings: %d %s; want 201 Success", r.Code, r.Body)
	}
	if got := strings.Join(names(t, h, "/api/v1/namespaces/default/pods", "spec.nodeName=n1"), ","); got != "p" {
		t.Fatalf("pods on n1 after the binding: [%s]; want [p]", got)
	}
	if r := h.do("POST", "/api/v1/namespaces/default/bindings", ct, bind); r.Code != http.StatusConflict || !strings.Contains(r.Body.String(), `pod p is already assigned to node \"n1\"`) {
		t.Fatalf("second binding: %d %s; want 409 already assigned", r.Code, r.Body)
	}
}

func names(t *testing.T, h *refHarness, path, selector string) []string {
	t.Helper()
	r := h.do("GET", path+"?fieldSelector="+selector, nil, nil)
	if r.Code != http.StatusOK {
		t.Fatalf("list %s ?fieldSelector=%s: %d %s", path, selector, r.Code, r.Body)
	}
	return itemNames(t, r.Body.Bytes())
}

// TestFieldsRefreshedAtStart: a Pod stored by a Tabula that did not yet
// select Pods by spec.nodeName is found by it once a server starts on the
// database — the upgrade a kubelet's list depends on.
func TestFieldsRefreshedAtStart(t *testing.T) {
	st := storetest.Open(t, "sqlite://:memory:")
	old := `{"metadata":{"name":"old","namespace":"default","uid":"5b4c6a1e-0000-4000-8000-000000000001","creationTimestamp":"2026-01-01T00:00:00Z"},` +
		`"spec":{"nodeName":"n9","containers":[{"name":"c","image":"nginx"}]},"status":{"phase":"Running"}}`
	if _, err := st.Create(context.Background(), kv.Key{Resource: "pods", Namespace: "default", Name: "old"}, func(int64) (kv.Entry, error) {
		return kv.Entry{Value: []byte(old), Fields: map[string]string{"metadata.name": "old", "metadata.namespace": "default"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: st})
	h := &refHarness{t: t, h: srv.Handler(), store: st, state: map[string]string{}}
	for _, sel := range []string{"spec.nodeName=n9", "status.phase=Running"} {
		if got := strings.Join(names(t, h, "/api/v1/namespaces/default/pods", sel), ","); got != "old" {
			t.Errorf("pods ?fieldSelector=%s after start: [%s]; want [old]", sel, got)
		}
	}
}

// TestControllersSwitchedOffByKCMName: with kube-controller-manager's
// serviceaccount-controller switched off, Tabula still publishes
// kube-root-ca.crt in a new namespace but makes no default ServiceAccount
// (kcm's controller would); its pass makes the account before the
// ConfigMap, so its absence once the ConfigMap exists is settled.
func TestControllersSwitchedOffByKCMName(t *testing.T) {
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Controllers: []string{"*", "-serviceaccount-controller"}})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	if r := h.do("POST", "/api/v1/namespaces", map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"team"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	h.waitFor("kube-root-ca.crt in team", func() bool {
		return h.do("GET", "/api/v1/namespaces/team/configmaps/kube-root-ca.crt", nil, nil).Code == http.StatusOK
	})
	if r := h.do("GET", "/api/v1/namespaces/team/serviceaccounts/default", nil, nil); r.Code != http.StatusNotFound {
		t.Fatalf("default ServiceAccount with serviceaccount-controller off: %d; want 404", r.Code)
	}
}

// TestNamespaceFinalizedByKCM: with Tabula's namespace-controller off,
// kube-controller-manager's removes a terminating namespace's contents
// and then its "kubernetes" finalizer through /finalize; as on
// kube-apiserver, a terminating namespace left with no finalizers is
// removed.
func TestNamespaceFinalizedByKCM(t *testing.T) {
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Controllers: []string{"*", "-namespace-controller"}})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces", ct, []byte(`{"metadata":{"name":"gone"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create namespace: %d %s", r.Code, r.Body)
	}
	if r := h.do("DELETE", "/api/v1/namespaces/gone", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete namespace: %d %s", r.Code, r.Body)
	}
	r := h.do("GET", "/api/v1/namespaces/gone", nil, nil)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"phase":"Terminating"`) || !strings.Contains(r.Body.String(), `"finalizers":["kubernetes"]`) {
		t.Fatalf("namespace after delete: %d %s; want Terminating with the kubernetes finalizer", r.Code, r.Body)
	}
	if r := h.do("PUT", "/api/v1/namespaces/gone/finalize", ct, []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"gone"},"spec":{"finalizers":[]}}`)); r.Code != http.StatusOK {
		t.Fatalf("finalize: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/namespaces/gone", nil, nil); r.Code != http.StatusNotFound {
		t.Fatalf("namespace after its last finalizer went: %d %s; want 404", r.Code, r.Body)
	}
}

// TestEventFieldSelectorsAcrossGroups: an Event written through either
// group is found by the other group's field selectors, as kube-apiserver's
// one Event storage finds it (kubectl describe pod selects core Events by
// involvedObject.name; kube-scheduler writes events.k8s.io ones); and an
// Event stored with only its writer's fields (by an earlier Tabula) is
// found both ways once a server starts on the database.
func TestEventFieldSelectorsAcrossGroups(t *testing.T) {
	st := storetest.Open(t, "sqlite://:memory:")
	old := `{"metadata":{"name":"old","namespace":"default","uid":"5b4c6a1e-0000-4000-8000-000000000002","creationTimestamp":"2026-01-01T00:00:00Z"},` +
		`"involvedObject":{"kind":"Pod","namespace":"default","name":"p0"},"reason":"Old","type":"Normal"}`
	if _, err := st.Create(context.Background(), kv.Key{Resource: "events", Namespace: "default", Name: "old"}, func(int64) (kv.Entry, error) {
		return kv.Entry{Value: []byte(old), Fields: map[string]string{"metadata.name": "old", "metadata.namespace": "default",
			"involvedObject.kind": "Pod", "involvedObject.name": "p0", "involvedObject.namespace": "default", "reason": "Old", "type": "Normal"}}, nil
	}); err != nil {
		t.Fatal(err)
	}
	srv := servertest.Server(t, server.Config{Store: st})
	h := &refHarness{t: t, h: srv.Handler(), store: st, state: map[string]string{}}
	h.mustDo("POST", "/apis/events.k8s.io/v1/namespaces/default/events", "application/json",
		`{"metadata":{"name":"sched"},"eventTime":"2026-11-30T00:00:00.000000Z","reportingController":"default-scheduler","reportingInstance":"s1",
		  "action":"Binding","reason":"Scheduled","type":"Normal","regarding":{"kind":"Pod","namespace":"default","name":"p1"}}`, http.StatusCreated)
	h.mustDo("POST", "/api/v1/namespaces/default/events", "application/json",
		`{"metadata":{"name":"kubelet"},"involvedObject":{"kind":"Pod","namespace":"default","name":"p2"},"reason":"Pulled","type":"Normal","source":{"component":"kubelet"}}`, http.StatusCreated)
	for _, c := range []struct{ path, sel, want string }{
		{"/api/v1/namespaces/default/events", "involvedObject.name=p1", "sched"},
		{"/api/v1/namespaces/default/events", "involvedObject.kind=Pod,reason=Scheduled", "sched"},
		{"/apis/events.k8s.io/v1/namespaces/default/events", "regarding.name=p2", "kubelet"},
		{"/apis/events.k8s.io/v1/namespaces/default/events", "regarding.name=p0", "old"},
		{"/api/v1/namespaces/default/events", "involvedObject.name=p0", "old"},
	} {
		if got := strings.Join(names(t, h, c.path, c.sel), ","); got != c.want {
			t.Errorf("%s ?fieldSelector=%s: [%s]; want [%s]", c.path, c.sel, got, c.want)
		}
	}
}
