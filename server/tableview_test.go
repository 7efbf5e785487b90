package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"
)

// TestTableFromCachedProtobuf: a Table (with each row's metadata, or its
// whole object) and a metadata list are the same whether their objects
// are decoded from the stored JSON (nothing cached) or from the Protobuf
// encodings a Protobuf list leaves cached; for a list large enough to be
// decoded on several cores and for a small one, and for Deployments,
// whose rows read the spec and status.
func TestTableFromCachedProtobuf(t *testing.T) {
	h := refNewHarness(t)
	jsonBody := map[string]string{"Content-Type": "application/json"}
	for i := range 300 {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%03d","labels":{"n":"%d"},"annotations":{"a":"b"}},"data":{"k":"v","e":""}}`, i, i)
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", jsonBody, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for i := range 3 {
		body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d-%d"},"spec":{"replicas":%d,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27","resources":{"limits":{"cpu":"500m","memory":"1Gi"}}}]}}}}`, i, i)
		if r := h.do("POST", "/apis/apps/v1/namespaces/default/deployments", jsonBody, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/apis/apps/v1/namespaces/default/deployments"} {
		views := []struct{ accept, query string }{
			{"application/json;as=Table;v=v1;g=meta.k8s.io", ""},
			{"application/json;as=Table;v=v1;g=meta.k8s.io", "?includeObject=Object"},
			{"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io", ""},
		}
		get := func(accept, query string) map[string]any {
			t.Helper()
			r := h.do("GET", path+query, map[string]string{"Accept": accept}, nil)
			if r.Code != http.StatusOK {
				t.Fatalf("GET %s%s as %s: %d %s", path, query, accept, r.Code, r.Body)
			}
			return ageless(t, r.Body.Bytes())
		}
		var fromJSON []map[string]any
		for _, v := range views {
			fromJSON = append(fromJSON, get(v.accept, v.query))
		}
		if r := h.do("GET", path, map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}, nil); r.Code != http.StatusOK {
			t.Fatalf("protobuf list: %d", r.Code)
		}
		for i, v := range views {
			if got := get(v.accept, v.query); !reflect.DeepEqual(got, fromJSON[i]) {
				a, _ := json.Marshal(fromJSON[i])
				b, _ := json.Marshal(got)
				t.Errorf("%s%s as %s differs once Protobuf is cached:\nfrom JSON:     %.600s\nfrom Protobuf: %.600s", path, v.query, v.accept, a, b)
			}
		}
	}
}

// ageless decodes a Table or list, blanking each row's Age cell (it moves
// with the clock between two requests).
func ageless(t *testing.T, body []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	cols, _ := m["columnDefinitions"].([]any)
	age := -1
	for i, c := range cols {
		if c.(map[string]any)["name"] == "Age" {
			age = i
		}
	}
	rows, _ := m["rows"].([]any)
	for _, r := range rows {
		if cells := r.(map[string]any)["cells"].([]any); age >= 0 {
			cells[age] = ""
		}
	}
	return m
}

// TestTableRowsShareTheTableVersion: the rows' PartialObjectMetadata of a
// meta.k8s.io/v1beta1 Table are v1beta1 too, as kube-apiserver writes
// them (reference representations/table-v1beta1-configmaps), in a list
// read twice (its rows' metadata then cached) and for one object.
func TestTableRowsShareTheTableVersion(t *testing.T) {
	h := refNewHarness(t)
	if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"v"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	for _, version := range []string{"v1", "v1beta1", "v1", "v1beta1"} {
		for _, path := range []string{"/api/v1/namespaces/default/configmaps", "/api/v1/namespaces/default/configmaps/v"} {
			r := h.do("GET", path, map[string]string{"Accept": "application/json;as=Table;v=" + version + ";g=meta.k8s.io"}, nil)
			var tbl struct {
				APIVersion string `json:"apiVersion"`
				Rows       []struct {
					Object struct {
						APIVersion string `json:"apiVersion"`
					} `json:"object"`
				} `json:"rows"`
			}
			if err := json.Unmarshal(r.Body.Bytes(), &tbl); err != nil || r.Code != http.StatusOK || len(tbl.Rows) == 0 {
				t.Fatalf("%s as %s: %d %s (%v)", path, version, r.Code, r.Body, err)
			}
			want := "meta.k8s.io/" + version
			for _, row := range tbl.Rows {
				if tbl.APIVersion != want || row.Object.APIVersion != want {
					t.Fatalf("%s as %s: Table %s with a row of %s", path, version, tbl.APIVersion, row.Object.APIVersion)
				}
			}
		}
	}
}
