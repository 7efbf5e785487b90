package server_test

import (
	"encoding/json"
	"net/http"
	"testing"
)

// TestStorageProtection: a deleted PersistentVolumeClaim waits while a
// running Pod uses it and goes once the Pod does; a PersistentVolume that
// is not Bound goes at once; both through their protection finalizers.
func TestStorageProtection(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	const pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"
	const pods = "/api/v1/namespaces/default/pods"
	for _, c := range []struct{ path, body string }{
		{pvcs, `{"metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`},
		{pvcs, `{"metadata":{"name":"idle"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}}}}`},
		{pods, `{"metadata":{"name":"user"},"spec":{"containers":[{"name":"c","image":"busybox"}],"volumes":[{"name":"v","persistentVolumeClaim":{"claimName":"data"}}]}}`},
		{"/api/v1/persistentvolumes", `{"metadata":{"name":"vol"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"hostPath":{"path":"/tmp/vol"}}}`},
	} {
		if r := h.do("POST", c.path, ct, []byte(c.body)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", c.path, r.Code, r.Body)
		}
	}
	gone := func(path string) func() bool {
		return func() bool { return h.do("GET", path, nil, nil).Code == http.StatusNotFound }
	}
	for _, p := range []string{pvcs + "/data", pvcs + "/idle", "/api/v1/persistentvolumes/vol"} {
		if r := h.do("DELETE", p, nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete %s: %d %s", p, r.Code, r.Body)
		}
	}
	h.eventually("the unused claim goes", gone(pvcs+"/idle"))
	h.eventually("the unbound volume goes", gone("/api/v1/persistentvolumes/vol"))

	var claim struct {
		Metadata struct {
			DeletionTimestamp *string
			Finalizers        []string
		}
	}
	r := h.do("GET", pvcs+"/data", nil, nil)
	if err := json.Unmarshal(r.Body.Bytes(), &claim); err != nil || r.Code != http.StatusOK ||
		claim.Metadata.DeletionTimestamp == nil || len(claim.Metadata.Finalizers) != 1 || claim.Metadata.Finalizers[0] != "kubernetes.io/pvc-protection" {
		t.Fatalf("a claim a Pod uses, after its delete and the idle claim's removal: %d %s; want it held by kubernetes.io/pvc-protection", r.Code, r.Body)
	}
	if r := h.do("DELETE", pods+"/user", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete pod: %d %s", r.Code, r.Body)
	}
	h.eventually("the claim goes once its Pod has", gone(pvcs+"/data"))
}
