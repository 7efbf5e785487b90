package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestCoreKindsAsKube: core kinds' strategies as kube's answer them. The
// finalize subresource checks the finalizers it is given; ServiceAccounts,
// TLS Secrets and ResourceQuotas warn; a LimitRange sent without a name
// is named; a key in both of a ConfigMap's maps is one cause; an update's
// causes come metadata first and once.
func TestCoreKindsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	warnings := func(rec interface{ Header() http.Header }) string {
		return strings.Join(rec.Header().Values("Warning"), "\n")
	}

	h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"p1"}}`, http.StatusCreated)
	rec := h.do("PUT", "/api/v1/namespaces/p1/finalize", hd, []byte(`{"metadata":{"name":"p1"},"spec":{"finalizers":["kubernetes","foo","a/b/c"]}}`))
	if body := rec.Body.String(); rec.Code != http.StatusUnprocessableEntity ||
		!strings.Contains(body, `spec.finalizers[1]: Invalid value: \"foo\": name is neither a standard finalizer name nor is it fully qualified`) ||
		!strings.Contains(body, `spec.finalizers[2]: Invalid value: \"a/b/c\"`) {
		t.Errorf("finalize with bad names: %d %s; want 422 naming spec.finalizers[1] and [2]", rec.Code, body)
	}
	rec = h.do("PUT", "/api/v1/namespaces/p1/finalize", hd, []byte(`{"metadata":{"name":"p1"},"spec":{"finalizers":["kubernetes","example.com/x"]}}`))
	if rec.Code != http.StatusOK {
		t.Errorf("finalize with good names: %d %s", rec.Code, rec.Body)
	}

	const ns = "/api/v1/namespaces/default"
	rec = h.do("POST", ns+"/serviceaccounts", hd, []byte(`{"metadata":{"name":"sa1","annotations":{"kubernetes.io/enforce-mountable-secrets":"true"}}}`))
	if w := warnings(rec); rec.Code != http.StatusCreated ||
		w != `299 - "metadata.annotations[kubernetes.io/enforce-mountable-secrets]: deprecated in v1.32+; prefer separate namespaces to isolate access to mounted secrets"` {
		t.Errorf("service account: %d, warnings %q", rec.Code, w)
	}
	// Kept, not set anew: no warning.
	rec = h.do("PATCH", ns+"/serviceaccounts/sa1", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"labels":{"a":"b"}}}`))
	if w := warnings(rec); rec.Code != http.StatusOK || w != "" {
		t.Errorf("service account kept annotation: %d, warnings %q; want none", rec.Code, w)
	}

	rec = h.do("POST", ns+"/secrets", hd, []byte(`{"metadata":{"name":"tls1"},"type":"kubernetes.io/tls","stringData":{"tls.crt":"x","tls.key":"y"}}`))
	if w := warnings(rec); rec.Code != http.StatusCreated || w != `299 - "tls: failed to find any PEM data in certificate input"` {
		t.Errorf("tls secret: %d, warnings %q", rec.Code, w)
	}

	rec = h.do("POST", ns+"/resourcequotas", hd, []byte(`{"metadata":{"name":"q1"},"spec":{"hard":{"requests.cpu":"2","limits.cpu":"1","memory":"2Gi","limits.memory":"1Gi","requests.storage":"1Gi"}}}`))
	if got := rec.Header().Values("Warning"); rec.Code != http.StatusCreated || len(got) != 2 ||
		got[0] != `299 - "ResourceQuota requests.cpu (2) should be less than limits.cpu (1)"` ||
		got[1] != `299 - "ResourceQuota memory (2Gi) should be less than limits.memory (1Gi)"` {
		t.Errorf("resource quota: %d, warnings %q", rec.Code, got)
	}

	rec = h.do("POST", ns+"/limitranges", hd, []byte(`{"metadata":{},"spec":{"limits":[{"type":"Container","max":{"cpu":"1"}}]}}`))
	var lr struct{ Metadata struct{ Name string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &lr); rec.Code != http.StatusCreated || err != nil || len(lr.Metadata.Name) != 36 {
		t.Errorf("limit range without a name: %d %s; want 201 named by a UUID", rec.Code, rec.Body)
	}

	rec = h.do("POST", ns+"/configmaps", hd, []byte(`{"metadata":{"name":"dup"},"data":{"a":"x"},"binaryData":{"a":"eA=="}}`))
	var st struct {
		Details struct{ Causes []struct{ Field string } }
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &st); rec.Code != http.StatusUnprocessableEntity || err != nil ||
		len(st.Details.Causes) != 1 || st.Details.Causes[0].Field != "data[a]" {
		t.Errorf("key in data and binaryData: %d %s; want one cause, data[a]", rec.Code, rec.Body)
	}

	// A finalizer added while deleting, with a bad name: the name's cause
	// first, then the refusal, once (a budget's validation checks its spec
	// alone, so these are the common checks').
	const pdbs = "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	h.mustDo("POST", pdbs, "application/json", `{"metadata":{"name":"held","finalizers":["example.com/f"]},"spec":{"minAvailable":1}}`, http.StatusCreated)
	h.mustDo("DELETE", pdbs+"/held", "", "", http.StatusOK)
	cur := h.mustDo("GET", pdbs+"/held", "", "", http.StatusOK)
	md := cur["metadata"].(map[string]interface{})
	md["finalizers"] = []string{"example.com/f", "Bad Finalizer"}
	b, _ := json.Marshal(cur)
	rec = h.do("PUT", pdbs+"/held", hd, b)
	var causes struct {
		Details struct {
			Causes []struct{ Reason, Field string }
		}
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &causes); rec.Code != http.StatusUnprocessableEntity || err != nil || len(causes.Details.Causes) != 2 ||
		causes.Details.Causes[0].Reason != "FieldValueInvalid" || causes.Details.Causes[1].Reason != "FieldValueForbidden" {
		t.Errorf("finalizer added while deleting: %d %s; want 422, invalid name then forbidden, once each", rec.Code, rec.Body)
	}
}
