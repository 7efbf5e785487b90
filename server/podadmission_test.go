package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPodAdmission: Pods get what kube-apiserver's default admission
// gives them, and are refused for what it refuses.
func TestPodAdmission(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	mk := func(path, body string, code int, want ...string) {
		t.Helper()
		r := h.do("POST", path, ct, []byte(body))
		if r.Code != code {
			t.Fatalf("POST %s %s: %d %s; want %d", path, body, r.Code, r.Body, code)
		}
		for _, w := range want {
			if !strings.Contains(r.Body.String(), w) {
				t.Errorf("POST %s: %s lacks %s", path, r.Body, w)
			}
		}
	}
	const pods = "/api/v1/namespaces/default/pods"
	container := `"containers":[{"name":"c","image":"busybox"}]`
	mk(pods, `{"metadata":{"name":"plain"},"spec":{`+container+`}}`, http.StatusCreated,
		`"serviceAccountName":"default"`, `"mountPath":"/var/run/secrets/kubernetes.io/serviceaccount"`, `"expirationSeconds":3607`,
		`"key":"node.kubernetes.io/not-ready","operator":"Exists","effect":"NoExecute","tolerationSeconds":300`,
		`"priority":0`, `"preemptionPolicy":"PreemptLowerPriority"`)
	mk(pods, `{"metadata":{"name":"nosa"},"spec":{"serviceAccountName":"ghost",`+container+`}}`, http.StatusForbidden,
		`error looking up service account default/ghost`)
	mk("/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"quiet"},"automountServiceAccountToken":false}`, http.StatusCreated)
	r := h.do("POST", pods, ct, []byte(`{"metadata":{"name":"quiet"},"spec":{"serviceAccountName":"quiet",`+container+`}}`))
	if r.Code != http.StatusCreated || strings.Contains(r.Body.String(), "kube-api-access") {
		t.Errorf("a Pod of an account that does not automount: %d %s", r.Code, r.Body)
	}
	mk("/api/v1/namespaces/default/serviceaccounts", `{"metadata":{"name":"puller"},"imagePullSecrets":[{"name":"registry"}]}`, http.StatusCreated)
	mk(pods, `{"metadata":{"name":"pulls"},"spec":{"serviceAccountName":"puller",`+container+`}}`, http.StatusCreated,
		`"imagePullSecrets":[{"name":"registry"}]`)
	// A Pod that already has the token volume keeps it and gets no second one.
	r = h.do("POST", pods, ct, []byte(`{"metadata":{"name":"own"},"spec":{"volumes":[{"name":"kube-api-access-mine","emptyDir":{}}],`+container+`}}`))
	if r.Code != http.StatusCreated || strings.Count(r.Body.String(), `"name":"kube-api-access-`) != 2 || !strings.Contains(r.Body.String(), `"name":"kube-api-access-mine","readOnly":true`) {
		t.Errorf("a Pod with its own kube-api-access volume: %d %s", r.Code, r.Body)
	}
	mk(pods, `{"metadata":{"name":"never"},"spec":{"preemptionPolicy":"Never",`+container+`}}`, http.StatusForbidden,
		`the string value of PreemptionPolicy (Never) must not be provided in pod spec`)
	mk(pods, `{"metadata":{"name":"critical"},"spec":{"priorityClassName":"system-cluster-critical",`+container+`}}`, http.StatusCreated,
		`"priority":2000000000`)
	mk(pods, `{"metadata":{"name":"unknown"},"spec":{"priorityClassName":"nope",`+container+`}}`, http.StatusForbidden,
		`no PriorityClass with name nope was found`)
	mk(pods, `{"metadata":{"name":"forced"},"spec":{"priority":5,`+container+`}}`, http.StatusForbidden,
		`the integer value of priority (5) must not be provided in pod spec`)
	mk("/apis/scheduling.k8s.io/v1/priorityclasses", `{"metadata":{"name":"everyone"},"value":7,"globalDefault":true}`, http.StatusCreated)
	mk(pods, `{"metadata":{"name":"defaulted"},"spec":{`+container+`}}`, http.StatusCreated, `"priorityClassName":"everyone"`, `"priority":7`)
	// kube's Priority plugin allows one global default.
	mk("/apis/scheduling.k8s.io/v1/priorityclasses", `{"metadata":{"name":"another"},"value":8,"globalDefault":true}`, http.StatusForbidden,
		`priorityclasses.scheduling.k8s.io \"another\" is forbidden: PriorityClass everyone is already marked as default. Only one default can exist`)
}
