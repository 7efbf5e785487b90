package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStorageAndNetworkingStrategiesAsKube: what kube 1.35's strategies
// of storage and networking kinds do that clients see:
//   - a claim's dataSource and dataSourceRef fill each other (external
//     provisioners read the latter), and a dataSource of a kind no
//     provisioner reads is dropped;
//   - a StorageClass update is validated whole, a PersistentVolume's
//     mount options are checked against its type, a new
//     VolumeAttachment's attacher and volume names are checked, a
//     CSINode may carry a node ID of 256 characters;
//   - a CSIDriver's spec change moves its generation on; a discovery/v1
//     EndpointSlice keeps no deprecatedTopology;
//   - the kinds' warnings: a Recycle reclaim policy, a CSI driver asking
//     for tokens it may log, an ambiguous NetworkPolicy CIDR, the
//     deprecated ingress class annotation.
func TestStorageAndNetworkingStrategiesAsKube(t *testing.T) {
	h := refNewHarness(t)
	const js = "application/json"
	send := func(method, path, body string, want int) (map[string]interface{}, string) {
		t.Helper()
		ct := js
		if method == "PATCH" {
			ct = "application/merge-patch+json"
		}
		r := h.do(method, path, map[string]string{"Content-Type": ct, "Accept": js}, []byte(body))
		if r.Code != want {
			t.Fatalf("%s %s: %d %s; want %d", method, path, r.Code, r.Body, want)
		}
		var m map[string]interface{}
		_ = json.Unmarshal(r.Body.Bytes(), &m)
		return m, strings.Join(r.Header().Values("Warning"), "\n")
	}

	const pvcs = "/api/v1/namespaces/default/persistentvolumeclaims"
	claim := func(name, source string) map[string]interface{} {
		m, _ := send("POST", pvcs, `{"apiVersion":"v1","kind":"PersistentVolumeClaim","metadata":{"name":"`+name+`"},"spec":{"accessModes":["ReadWriteOnce"],"resources":{"requests":{"storage":"1Gi"}},`+source+`}}`, http.StatusCreated)
		return m
	}
	m := claim("clone", `"dataSource":{"kind":"PersistentVolumeClaim","name":"src"}`)
	if ref := refDig(m, "spec", "dataSourceRef", "name"); ref != "src" {
		t.Errorf("a claim's dataSource: dataSourceRef %v; want it filled in", refDig(m, "spec", "dataSourceRef"))
	}
	m = claim("populated", `"dataSourceRef":{"apiGroup":"x.io","kind":"Foo","name":"src"}`)
	if ds := refDig(m, "spec", "dataSource", "kind"); ds != "Foo" {
		t.Errorf("a claim's dataSourceRef: dataSource %v; want it filled in", refDig(m, "spec", "dataSource"))
	}
	m = claim("odd", `"dataSource":{"apiGroup":"x.io","kind":"Foo","name":"src"}`)
	if refDig(m, "spec", "dataSource") != nil || refDig(m, "spec", "dataSourceRef") != nil {
		t.Errorf("a dataSource of another kind: %v, %v; want both dropped", refDig(m, "spec", "dataSource"), refDig(m, "spec", "dataSourceRef"))
	}

	const classes = "/apis/storage.k8s.io/v1/storageclasses"
	send("POST", classes, `{"apiVersion":"storage.k8s.io/v1","kind":"StorageClass","metadata":{"name":"slow"},"provisioner":"example.com/p"}`, http.StatusCreated)
	send("PATCH", classes+"/slow", `{"allowedTopologies":[{"matchLabelExpressions":[{"key":"","values":[]}]}]}`, http.StatusUnprocessableEntity)

	const pvs = "/api/v1/persistentvolumes"
	st, _ := send("POST", pvs, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"mo","annotations":{"volume.beta.kubernetes.io/mount-options":"ro"}},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"csi":{"driver":"example.com","volumeHandle":"h"}}}`, http.StatusUnprocessableEntity)
	if msg, _ := st["message"].(string); !strings.Contains(msg, "may not specify mount options for this volume type") {
		t.Errorf("mount options on a CSI volume: %s", msg)
	}
	_, w := send("POST", pvs, `{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"recycled"},"spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"persistentVolumeReclaimPolicy":"Recycle","hostPath":{"path":"/tmp/x"}}}`, http.StatusCreated)
	if !strings.Contains(w, "spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated") {
		t.Errorf("a Recycle volume: warnings %q", w)
	}

	const drivers = "/apis/storage.k8s.io/v1/csidrivers"
	_, w = send("POST", drivers, `{"apiVersion":"storage.k8s.io/v1","kind":"CSIDriver","metadata":{"name":"example.com"},"spec":{"tokenRequests":[{"audience":"x"}]}}`, http.StatusCreated)
	if !strings.Contains(w, "spec.serviceAccountTokenInSecrets is unset") {
		t.Errorf("a driver asking for tokens: warnings %q", w)
	}
	if m, _ = send("PATCH", drivers+"/example.com", `{"spec":{"podInfoOnMount":true}}`, http.StatusOK); refDig(m, "metadata", "generation") != float64(1) {
		t.Errorf("a driver's spec change: generation %v; want 1", refDig(m, "metadata", "generation"))
	}
	send("POST", "/apis/storage.k8s.io/v1/csinodes", `{"apiVersion":"storage.k8s.io/v1","kind":"CSINode","metadata":{"name":"n1"},"spec":{"drivers":[{"name":"example.com","nodeID":"`+strings.Repeat("n", 200)+`"}]}}`, http.StatusCreated)
	send("POST", "/apis/storage.k8s.io/v1/volumeattachments", `{"apiVersion":"storage.k8s.io/v1","kind":"VolumeAttachment","metadata":{"name":"va"},"spec":{"attacher":"Not_A_Driver!","nodeName":"n1","source":{"persistentVolumeName":"Bad_PV_Name"}}}`, http.StatusUnprocessableEntity)

	m, _ = send("POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", `{"apiVersion":"discovery.k8s.io/v1","kind":"EndpointSlice","metadata":{"name":"es"},"addressType":"IPv4","endpoints":[{"addresses":["10.1.2.3"],"deprecatedTopology":{"kubernetes.io/hostname":"n1"}}]}`, http.StatusCreated)
	if eps, _ := m["endpoints"].([]interface{}); len(eps) != 1 || refDig(eps[0], "deprecatedTopology") != nil {
		t.Errorf("an EndpointSlice's endpoints %v; want deprecatedTopology dropped", m["endpoints"])
	}

	_, w = send("POST", "/apis/networking.k8s.io/v1/namespaces/default/networkpolicies", `{"apiVersion":"networking.k8s.io/v1","kind":"NetworkPolicy","metadata":{"name":"np"},"spec":{"podSelector":{},"ingress":[{"from":[{"ipBlock":{"cidr":"10.0.0.1/8"}}]}]}}`, http.StatusCreated)
	if !strings.Contains(w, `spec.ingress[0].from[0].ipBlock.cidr: CIDR value \"10.0.0.1/8\" is ambiguous`) {
		t.Errorf("an ambiguous CIDR: warnings %q", w)
	}
	_, w = send("POST", "/apis/networking.k8s.io/v1/namespaces/default/ingresses", `{"apiVersion":"networking.k8s.io/v1","kind":"Ingress","metadata":{"name":"ing","annotations":{"kubernetes.io/ingress.class":"nginx"}},"spec":{"defaultBackend":{"service":{"name":"s","port":{"number":80}}}}}`, http.StatusCreated)
	if !strings.Contains(w, `annotation \"kubernetes.io/ingress.class\" is deprecated`) {
		t.Errorf("the ingress class annotation: warnings %q", w)
	}
}
