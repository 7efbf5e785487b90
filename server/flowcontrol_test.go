package server_test

import (
	"bufio"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/tabula-dev/tabula/server"
)

// TestWatchesGiveBackTheirSeats: under priority and fairness a watch pays
// seats only while it opens (kube charges its initialisation): once its
// stream has started, or its initial events are sent, the seats are
// free again. With thirty watches of an ordinary user open (plain and
// sendInitialEvents ones), her priority level executes nothing (kube's
// dump_priority_levels), her reads are served,
// and every answer names its FlowSchema and priority level.
func TestWatchesGiveBackTheirSeats(t *testing.T) {
	srv := aliceAndRootServer(t, server.Config{MaxRequestsInflight: 40, MaxMutatingRequestsInflight: 20})
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	getAs := func(token, path string) *http.Response {
		req, _ := http.NewRequest(http.MethodGet, hs.URL+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hs.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	get := func(path string) *http.Response { return getAs("tok-alice", path) }
	const cms = "/api/v1/namespaces/default/configmaps"
	for i := 0; i < 30; i++ {
		path := cms + "?watch=1&timeoutSeconds=60"
		if i%2 == 1 {
			path += "&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
		}
		resp := get(path)
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("watch %d: %d", i, resp.StatusCode)
		}
		if i%2 == 1 {
			// Its initial events end with the annotated bookmark.
			sc := bufio.NewScanner(resp.Body)
			for sc.Scan() && !strings.Contains(sc.Text(), "k8s.io/initial-events-end") {
			}
		}
	}
	// Seats are given back once the signal reaches the dispatcher: wait
	// for global-default to execute nothing.
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	h.waitFor("global-default executing nothing", func() bool {
		resp := getAs("tok-root", "/debug/api_priority_and_fairness/dump_priority_levels")
		defer resp.Body.Close()
		rows, err := csv.NewReader(resp.Body).ReadAll()
		if err != nil || len(rows) < 2 {
			return false
		}
		col := map[string]int{}
		for i, name := range rows[0] {
			col[strings.TrimSpace(name)] = i
		}
		for _, row := range rows[1:] {
			if strings.TrimSpace(row[0]) == "global-default" {
				return strings.TrimSpace(row[col["ExecutingRequests"]]) == "0" && strings.TrimSpace(row[col["WaitingRequests"]]) == "0"
			}
		}
		return false
	})
	for i := 0; i < 5; i++ {
		resp := get(cms)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("read %d with thirty watches open: %d", i, resp.StatusCode)
		}
		if resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID") == "" || resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID") == "" {
			t.Errorf("read %d names no FlowSchema or priority level: %v", i, resp.Header)
		}
	}
}

// TestFlowSchemaEditsTakeEffect: a FlowSchema changed in place classifies
// by its new spec, as kube's config controller re-reads a changed one:
// alice's requests move from workload-low to workload-high when her
// FlowSchema is edited, and the answer's priority level header says so.
func TestFlowSchemaEditsTakeEffect(t *testing.T) {
	srv := aliceAndRootServer(t, server.Config{})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	root := map[string]string{"Authorization": "Bearer tok-root", "Content-Type": "application/json"}
	const fc = "/apis/flowcontrol.apiserver.k8s.io/v1"
	uid := func(level string) string {
		var pl struct{ Metadata struct{ UID string } }
		if err := json.Unmarshal(h.do("GET", fc+"/prioritylevelconfigurations/"+level, root, nil).Body.Bytes(), &pl); err != nil || pl.Metadata.UID == "" {
			t.Fatalf("priority level %s: %v", level, err)
		}
		return pl.Metadata.UID
	}
	schema := func(level string) []byte {
		return []byte(`{"metadata":{"name":"alice"},"spec":{"priorityLevelConfiguration":{"name":"` + level + `"},"matchingPrecedence":500,
			"rules":[{"subjects":[{"kind":"User","user":{"name":"alice"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}]}]}}`)
	}
	aliceLevel := func() string {
		return h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Authorization": "Bearer tok-alice"}, nil).Header().Get("X-Kubernetes-PF-PriorityLevel-UID")
	}
	low, high := uid("workload-low"), uid("workload-high")
	if r := h.do("POST", fc+"/flowschemas", root, schema("workload-low")); r.Code != http.StatusCreated {
		t.Fatalf("create FlowSchema: %d %s", r.Code, r.Body)
	}
	h.waitFor("alice classified workload-low", func() bool { return aliceLevel() == low })
	// A patch: the config controller writes the FlowSchema's status.
	if r := h.do("PATCH", fc+"/flowschemas/alice", map[string]string{"Authorization": "Bearer tok-root", "Content-Type": "application/merge-patch+json"},
		[]byte(`{"spec":{"priorityLevelConfiguration":{"name":"workload-high"}}}`)); r.Code != http.StatusOK {
		t.Fatalf("edit FlowSchema: %d %s", r.Code, r.Body)
	}
	h.waitFor("alice classified workload-high after the edit", func() bool { return aliceLevel() == high })
}

// TestAdmissionPolicyEditsTakeEffect: a ValidatingAdmissionPolicy changed
// in place is enforced by its new spec (kube's policy controller skips an
// update whose old and new resourceVersions are equal, so each update
// must come with the object it replaces).
func TestAdmissionPolicyEditsTakeEffect(t *testing.T) {
	h := refNewHarness(t)
	const ar = "/apis/admissionregistration.k8s.io/v1"
	h.mustDo("POST", ar+"/validatingadmissionpolicies", "application/json", `{"metadata":{"name":"names"},"spec":{
		"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["configmaps"]}]},
		"validations":[{"expression":"!object.metadata.name.startsWith('x')","message":"no x"}]}}`, http.StatusCreated)
	h.mustDo("POST", ar+"/validatingadmissionpolicybindings", "application/json", `{"metadata":{"name":"names"},"spec":{"policyName":"names","validationActions":["Deny"]}}`, http.StatusCreated)
	n := 0
	create := func(prefix string) int {
		n++
		return h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"},
			[]byte(`{"metadata":{"name":"`+prefix+strconv.Itoa(n)+`"}}`)).Code
	}
	h.waitFor("the policy to refuse x", func() bool { return create("x") == http.StatusUnprocessableEntity })
	h.mustDo("PATCH", ar+"/validatingadmissionpolicies/names", "application/merge-patch+json",
		`{"spec":{"validations":[{"expression":"!object.metadata.name.startsWith('y')","message":"no y"}]}}`, http.StatusOK)
	h.waitFor("the edited policy to refuse y", func() bool { return create("y") == http.StatusUnprocessableEntity })
	if code := create("x"); code != http.StatusCreated {
		t.Errorf("x after the edit: %d; want 201", code)
	}
}

// TestQueueWaitFollowsTheRequestTimeout: a request waits in its priority
// level's queue for a quarter of the time it asked for (?timeout=), as
// kube's deadline filter runs before flow control: with alice's one seat
// held by a create a webhook keeps waiting, her list asking for 1 s is
// refused (429) instead of waiting for the seat.
func TestQueueWaitFollowsTheRequestTimeout(t *testing.T) {
	entered, release := make(chan struct{}, 1), make(chan struct{})
	var once sync.Once
	free := func() { once.Do(func() { close(release) }) }
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		entered <- struct{}{}
		// Held until the test is done with the seat; at most 5 s, less
		// than the 15 s a request without its own timeout may queue.
		select {
		case <-release:
		case <-time.After(5 * time.Second):
		}
		in.Response = &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		in.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&in)
	}))
	defer hook.Close()
	defer free()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))

	// Few seats in all, so the tiny level's share is one, borrowing none.
	srv := aliceAndRootServer(t, server.Config{MaxRequestsInflight: 10, MaxMutatingRequestsInflight: 5, Metrics: prometheus.NewRegistry()})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	root := map[string]string{"Authorization": "Bearer tok-root", "Content-Type": "application/json"}
	alice := map[string]string{"Authorization": "Bearer tok-alice", "Content-Type": "application/json"}
	const fc = "/apis/flowcontrol.apiserver.k8s.io/v1"
	for _, c := range []struct{ path, body string }{
		{fc + "/prioritylevelconfigurations", `{"metadata":{"name":"tiny"},"spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
			"limitResponse":{"type":"Queue","queuing":{"queues":1,"handSize":1,"queueLengthLimit":10}}}}}`},
		{fc + "/flowschemas", `{"metadata":{"name":"alice"},"spec":{"priorityLevelConfiguration":{"name":"tiny"},"matchingPrecedence":500,
			"rules":[{"subjects":[{"kind":"User","user":{"name":"alice"}}],"resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"]}]}]}}`},
		{"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", `{"metadata":{"name":"alice-edit"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"},"subjects":[{"kind":"User","name":"alice"}]}`},
		{"/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", fmt.Sprintf(
			`{"metadata":{"name":"hold"},"webhooks":[{"name":"hold.tabula.dev","clientConfig":{"url":%q,"caBundle":%q},"timeoutSeconds":30,`+
				`"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],`+
				`"sideEffects":"None","admissionReviewVersions":["v1"]}]}`, hook.URL+"/validate", ca)},
	} {
		if r := h.do("POST", c.path, root, []byte(c.body)); r.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", c.path, r.Code, r.Body)
		}
	}
	tiny := func() bool {
		var pl struct{ Metadata struct{ UID string } }
		_ = json.Unmarshal(h.do("GET", fc+"/prioritylevelconfigurations/tiny", root, nil).Body.Bytes(), &pl)
		return h.do("GET", "/api/v1/namespaces/default/configmaps", alice, nil).Header().Get("X-Kubernetes-PF-PriorityLevel-UID") == pl.Metadata.UID
	}
	h.waitFor("alice in the tiny level", tiny)

	done := make(chan int, 1)
	go func() {
		done <- h.do("POST", "/api/v1/namespaces/default/configmaps?timeout=30s", alice, []byte(`{"metadata":{"name":"held"}}`)).Code
	}()
	<-entered // the create holds alice's one seat, inside the webhook
	const refusedList = `apiserver_request_terminations_total{code="429",component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} `
	// The counter is the process's: other tests may have added to it.
	before := metricValue(h.do("GET", "/metrics", root, nil).Body.String(), refusedList)
	r := h.do("GET", "/api/v1/namespaces/default/configmaps?timeout=1s", alice, nil)
	free()
	if r.Code != http.StatusTooManyRequests {
		t.Errorf("a list asking for 1 s while the seat is held: %d %s; want 429 after a quarter second's wait", r.Code, r.Body)
	}
	if code := <-done; code != http.StatusCreated {
		t.Errorf("the held create: %d; want 201", code)
	}
	// kube's request metrics that its filter keeps: the refusal counted
	// as a termination, and the in-flight and queued gauges (each
	// second's high watermark) beside priority and fairness's own.
	var metrics string
	h.waitFor("the filter's request metrics", func() bool {
		metrics = h.do("GET", "/metrics", root, nil).Body.String()
		return strings.Contains(metrics, `apiserver_current_inflight_requests{request_kind="mutating"}`) &&
			strings.Contains(metrics, `apiserver_current_inqueue_requests{request_kind="readOnly"}`)
	})
	if after := metricValue(metrics, refusedList); after < before+1 {
		t.Errorf("the 429 in apiserver_request_terminations_total: %v before, %v after:\n%s", before, after, grepLines(metrics, "apiserver_request_terminations_total"))
	}
}

// metricValue is the value of the sample line that starts with prefix
// (name, labels and a space) in a /metrics text, 0 without one.
func metricValue(text, prefix string) float64 {
	for _, l := range strings.Split(text, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}

// grepLines is the lines of s that contain sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestFlowControlDumpsAnyMethod: kube serves the priority and fairness
// dumps on its non-REST mux, which answers any method.
func TestFlowControlDumpsAnyMethod(t *testing.T) {
	srv := aliceAndRootServer(t, server.Config{})
	h := &refHarness{t: t, h: srv.Handler(), state: map[string]string{}}
	for _, method := range []string{"GET", "POST"} {
		r := h.do(method, "/debug/api_priority_and_fairness/dump_priority_levels", map[string]string{"Authorization": "Bearer tok-root"}, nil)
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "PriorityLevelName") {
			t.Errorf("%s dump_priority_levels: %d %.200s; want 200 and the CSV", method, r.Code, r.Body)
		}
	}
}

// TestFlowSchemaTableOrder: as kube's printer lists them, FlowSchemas'
// Table rows are in the order requests are matched in (matchingPrecedence,
// then name), not by name; other views keep the list's order.
func TestFlowSchemaTableOrder(t *testing.T) {
	h := refNewHarness(t)
	const fs = "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas"
	for name, prec := range map[string]int{"a-last": 9000, "b-first": 600, "c-middle": 700, "d-middle": 700} {
		h.mustDo("POST", fs, "application/json", fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"order":"test"}},
			"spec":{"priorityLevelConfiguration":{"name":"global-default"},"matchingPrecedence":%d}}`, name, prec), http.StatusCreated)
	}
	names := func(accept string) []string {
		t.Helper()
		r := h.do("GET", fs+"?labelSelector=order%3Dtest", map[string]string{"Accept": accept}, nil)
		if r.Code != http.StatusOK {
			t.Fatalf("list as %s: %d %s", accept, r.Code, r.Body)
		}
		var out struct {
			Rows []struct {
				Cells []any `json:"cells"`
			} `json:"rows"`
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(r.Body.Bytes(), &out); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, row := range out.Rows {
			got = append(got, fmt.Sprint(row.Cells[0]))
		}
		for _, it := range out.Items {
			got = append(got, it.Metadata.Name)
		}
		return got
	}
	if got, want := names("application/json;as=Table;v=v1;g=meta.k8s.io"), []string{"b-first", "c-middle", "d-middle", "a-last"}; !slices.Equal(got, want) {
		t.Errorf("Table rows: %v; want %v", got, want)
	}
	if got, want := names("application/json"), []string{"a-last", "b-first", "c-middle", "d-middle"}; !slices.Equal(got, want) {
		t.Errorf("list items: %v; want %v (by name, as stored)", got, want)
	}
}
