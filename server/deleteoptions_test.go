package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestDeleteOptionsBody: a DELETE's options are read as kube-apiserver
// reads them — from the body when there is one (unknown fields let
// through, another kind refused), from the query only when there is
// none.
func TestDeleteOptionsBody(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	ct := map[string]string{"Content-Type": "application/json"}
	create := func(name string) {
		t.Helper()
		if r := h.do("POST", cms, ct, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
		}
	}
	exists := func(name string) bool { return h.do("GET", cms+"/"+name, nil, nil).Code == http.StatusOK }
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		create(name)
	}
	for _, c := range []struct {
		name, path, body string
		code             int
		text             string
		kept             bool
	}{
		{"a Secret body", cms + "/a", `{"kind":"Secret","apiVersion":"v1","type":"x"}`, http.StatusBadRequest, `no kind \"Secret\" is registered for version \"v1\"`, true},
		{"a ListOptions body", cms + "/a", `{"kind":"ListOptions","apiVersion":"meta.k8s.io/v1"}`, http.StatusBadRequest, "converting (v1.ListOptions) to (v1.DeleteOptions): unknown conversion", true},
		{"a bad propagation policy", cms + "/a", `{"propagationPolicy":"Sideways"}`, http.StatusUnprocessableEntity, `propagationPolicy: Unsupported value: \"Sideways\"`, true},
		{"a bad dry run in the query", cms + "/a?dryRun=Maybe", ``, http.StatusUnprocessableEntity, `dryRun: Unsupported value: [\"Maybe\"]: supported values: \"All\"`, true},
		{"a dry run with an unknown field", cms + "/b", `{"dryRun":["All"],"newField":true}`, http.StatusOK, "", true},
		{"a dry run in the query, no body", cms + "/c?dryRun=All", ``, http.StatusOK, "", true},
		{"a per-group DeleteOptions body", cms + "/d", `{"kind":"DeleteOptions","apiVersion":"v1","dryRun":["All"]}`, http.StatusOK, "", true},
		// The query is not read beside a body, as on kube-apiserver.
		{"a body and a dry run in the query", cms + "/e?dryRun=All", `{}`, http.StatusOK, "", false},
	} {
		r := h.do("DELETE", c.path, ct, []byte(c.body))
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s: %d %s; want %d with %q", c.name, r.Code, r.Body, c.code, c.text)
		}
		name := strings.TrimPrefix(strings.SplitN(c.path, "?", 2)[0], cms+"/")
		if exists(name) != c.kept {
			t.Errorf("%s: %s exists %v afterwards; want %v", c.name, name, !c.kept, c.kept)
		}
	}
}
