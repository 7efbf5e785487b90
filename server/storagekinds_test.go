package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestStorageKindsAsKube: kube's storage strategies warn of deprecated
// topology labels in StorageClasses and CSIStorageCapacities, check a
// capacity update whole (a negative capacity is refused), and a
// capacity's Table is the default one (kube's storage has no printer).
func TestStorageKindsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	const g = "/apis/storage.k8s.io/v1"
	rec := h.do("POST", g+"/storageclasses", hd, []byte(`{"metadata":{"name":"sc"},"provisioner":"p",
	  "allowedTopologies":[{"matchLabelExpressions":[{"key":"failure-domain.beta.kubernetes.io/zone","values":["z"]}]}]}`))
	if w := strings.Join(rec.Header().Values("Warning"), "\n"); rec.Code != http.StatusCreated ||
		!strings.Contains(w, `allowedTopologies[0].matchLabelExpressions[0].key: deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead`) {
		t.Errorf("storage class: %d, warnings %q", rec.Code, w)
	}
	caps := g + "/namespaces/default/csistoragecapacities"
	rec = h.do("POST", caps, hd, []byte(`{"metadata":{"name":"cap"},"storageClassName":"sc","capacity":"1Gi",
	  "nodeTopology":{"matchLabels":{"failure-domain.beta.kubernetes.io/zone":"z1"}}}`))
	if w := strings.Join(rec.Header().Values("Warning"), "\n"); rec.Code != http.StatusCreated ||
		!strings.Contains(w, `nodeTopology.matchLabels.failure-domain.beta.kubernetes.io/zone: deprecated since v1.17; use \"topology.kubernetes.io/zone\" instead`) {
		t.Errorf("capacity: %d, warnings %q", rec.Code, w)
	}
	var cur map[string]interface{}
	if err := json.Unmarshal(rec.Body.Bytes(), &cur); err != nil {
		t.Fatal(err)
	}
	cur["capacity"] = "-1"
	b, _ := json.Marshal(cur)
	rec = h.do("PUT", caps+"/cap", hd, b)
	if rec.Code != http.StatusUnprocessableEntity || !strings.Contains(rec.Body.String(), `capacity: Invalid value: \"-1\": must be greater than or equal to 0`) {
		t.Errorf("negative capacity update: %d %s; want 422", rec.Code, rec.Body)
	}
	rec = h.do("GET", caps, map[string]string{"Accept": "application/json;as=Table;g=meta.k8s.io;v=v1"}, nil)
	var tbl struct{ ColumnDefinitions []struct{ Name string } }
	if err := json.Unmarshal(rec.Body.Bytes(), &tbl); err != nil || len(tbl.ColumnDefinitions) != 2 ||
		tbl.ColumnDefinitions[0].Name != "Name" || tbl.ColumnDefinitions[1].Name != "Created At" {
		t.Errorf("capacity Table columns %+v (%v); want Name, Created At", tbl.ColumnDefinitions, err)
	}
}
