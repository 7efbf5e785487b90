package server_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"testing"
)

// TestDeleteCollectionAsKube: DELETE of a collection deletes the page its
// list options name, limit and continue included, and answers with that
// page as listed and its continue token, as kube's DeleteCollection does;
// across all namespaces a namespaced resource takes list and watch alone
// (405 for the collection's other methods, 404 for a name), so one
// request cannot empty every namespace.
func TestDeleteCollectionAsKube(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("dc", nil)
	const cms = "/api/v1/namespaces/dc/configmaps"
	for _, n := range []string{"a", "b", "c", "d"} {
		h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"`+n+`","labels":{"grp":"x"}}}`, http.StatusCreated)
	}
	names := func(path string) (out []string, cont string) {
		t.Helper()
		var l struct {
			Metadata struct{ Continue string }
			Items    []struct {
				Metadata struct{ Name, ResourceVersion string }
			}
		}
		r := h.do("GET", path, nil, nil)
		if err := json.Unmarshal(r.Body.Bytes(), &l); err != nil || r.Code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, r.Code, r.Body)
		}
		for _, it := range l.Items {
			out = append(out, it.Metadata.Name)
		}
		return out, l.Metadata.Continue
	}
	del := func(query string) (deleted []string, cont string) {
		t.Helper()
		r := h.do("DELETE", cms+"?labelSelector=grp%3Dx&"+query, nil, nil)
		var l struct {
			Kind     string
			Metadata struct{ Continue string }
			Items    []struct {
				Metadata struct{ Name, DeletionTimestamp string }
			}
		}
		if err := json.Unmarshal(r.Body.Bytes(), &l); err != nil || r.Code != http.StatusOK || l.Kind != "ConfigMapList" {
			t.Fatalf("DELETE ?%s: %d %s", query, r.Code, r.Body)
		}
		for _, it := range l.Items {
			if it.Metadata.DeletionTimestamp != "" {
				t.Errorf("DELETE ?%s answered %s after its deletion; want it as listed", query, it.Metadata.Name)
			}
			deleted = append(deleted, it.Metadata.Name)
		}
		return deleted, l.Metadata.Continue
	}
	deleted, cont := del("limit=2")
	if !slices.Equal(deleted, []string{"a", "b"}) || cont == "" {
		t.Fatalf("first page: deleted %v, continue %q; want a and b and a token", deleted, cont)
	}
	if left, _ := names(cms + "?labelSelector=grp%3Dx"); !slices.Equal(left, []string{"c", "d"}) {
		t.Fatalf("after the first page: %v left; want c and d", left)
	}
	if deleted, cont = del("limit=2&continue=" + url.QueryEscape(cont)); !slices.Equal(deleted, []string{"c", "d"}) || cont != "" {
		t.Fatalf("second page: deleted %v, continue %q", deleted, cont)
	}

	// Across all namespaces: list only.
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"kept"}}`, http.StatusCreated)
	for _, c := range []struct {
		method, path string
		code         int
	}{
		{"DELETE", "/api/v1/configmaps", http.StatusMethodNotAllowed},
		{"DELETE", "/api/v1/configmaps?dryRun=All", http.StatusMethodNotAllowed},
		{"POST", "/api/v1/configmaps", http.StatusMethodNotAllowed},
		{"GET", "/api/v1/configmaps/kept", http.StatusNotFound},
		{"DELETE", "/api/v1/configmaps/kept", http.StatusNotFound},
	} {
		if r := h.do(c.method, c.path, map[string]string{"Content-Type": "application/json"}, []byte(`{"metadata":{"name":"x"}}`)); r.Code != c.code {
			t.Errorf("%s %s: %d %s; want %d", c.method, c.path, r.Code, r.Body, c.code)
		}
	}
	if left, _ := names(cms); !slices.Contains(left, "kept") {
		t.Errorf("after the refused deletes across namespaces: %v; want kept still there", left)
	}
	if all, _ := names("/api/v1/configmaps"); !slices.Contains(all, "kept") {
		t.Errorf("list across namespaces: %v", all)
	}
}
