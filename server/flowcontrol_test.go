package server_test

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

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
