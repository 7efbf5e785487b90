package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestComponentStatuses: computed on read, listed (also as a Table) and
// got by name, with kube-apiserver's deprecation warning; the database
// stands where etcd would and is healthy.
func TestComponentStatuses(t *testing.T) {
	h := refNewHarness(t)
	const path = "/api/v1/componentstatuses"
	r := h.do("GET", path, nil, nil)
	var list struct {
		Kind  string
		Items []struct {
			Metadata   struct{ Name string }
			Conditions []struct{ Type, Status, Message, Error string }
		}
	}
	if err := json.Unmarshal(r.Body.Bytes(), &list); err != nil || r.Code != http.StatusOK || list.Kind != "ComponentStatusList" {
		t.Fatalf("list: %d %s", r.Code, r.Body)
	}
	if !strings.Contains(r.Header().Get("Warning"), "v1 ComponentStatus is deprecated in v1.19+") {
		t.Errorf("no deprecation warning: %q", r.Header().Get("Warning"))
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.Metadata.Name)
		if len(it.Conditions) != 1 || it.Conditions[0].Type != "Healthy" ||
			(it.Conditions[0].Status == "True") == (it.Conditions[0].Error != "") {
			t.Errorf("%s: conditions %+v", it.Metadata.Name, it.Conditions)
		}
		if it.Metadata.Name == "database" && it.Conditions[0].Status != "True" {
			t.Errorf("database: %+v", it.Conditions)
		}
	}
	if strings.Join(names, ",") != "controller-manager,database,scheduler" {
		t.Errorf("components %v", names)
	}
	tbl := h.do("GET", path, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil)
	if tbl.Code != http.StatusOK || !strings.Contains(tbl.Body.String(), `"name":"Status"`) || !strings.Contains(tbl.Body.String(), `"database","Healthy"`) {
		t.Errorf("table: %d %s", tbl.Code, tbl.Body)
	}
	if r := h.do("GET", path+"/database", nil, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"kind":"ComponentStatus"`) {
		t.Errorf("get: %d %s", r.Code, r.Body)
	}
	if r := h.do("GET", path+"/etcd-9", nil, nil); r.Code != http.StatusNotFound {
		t.Errorf("get unknown: %d %s", r.Code, r.Body)
	}
	if r := h.do("DELETE", path+"/database", nil, nil); r.Code != http.StatusMethodNotAllowed {
		t.Errorf("delete: %d; want 405", r.Code)
	}
}
