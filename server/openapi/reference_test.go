package openapi

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"reflect"
	"sort"
	"testing"
)

// referenceDir holds the recordings of a real kube-apiserver v1.35.4
// (the repository's testdata/reference/discovery seen from the package
// directory; see RECORDING.md there).
const referenceDir = "../../testdata/reference/discovery/"

func referenceDoc(t *testing.T, file string) map[string]interface{} {
	t.Helper()
	fh, err := os.Open(referenceDir + file)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	zr, err := gzip.NewReader(fh)
	if err != nil {
		t.Fatal(err)
	}
	var d map[string]interface{}
	if err := json.NewDecoder(zr).Decode(&d); err != nil {
		t.Fatal(err)
	}
	return d
}

// effectiveParams is the set of an operation's parameters, with the ones
// declared for the whole path, keyed by name and location.
func effectiveParams(pathItem interface{}, method string) map[string]interface{} {
	out := map[string]interface{}{}
	for _, list := range []interface{}{dig(pathItem, "parameters"), dig(pathItem, method, "parameters")} {
		ps, _ := list.([]interface{})
		for _, p := range ps {
			out[dig(p, "name").(string)+" in "+dig(p, "in").(string)] = p
		}
	}
	return out
}

func TestConfigMapPatchMatchesReference(t *testing.T) {
	ref := referenceDoc(t, "openapi-v3-api-v1.body.json.gz")
	ours := newFixture(t).doc("api/v1")
	const path = "/api/v1/namespaces/{namespace}/configmaps/{name}"

	want := effectiveParams(dig(ref, "paths", path), "patch")
	got := effectiveParams(dig(ours, "paths", path), "patch")
	if !reflect.DeepEqual(got, want) {
		t.Errorf("PATCH %s parameters differ from kube-apiserver:\n got  %s\n want %s", path, keys(got), keys(want))
		for k, p := range want {
			if !reflect.DeepEqual(got[k], p) {
				t.Errorf("  %s: got %v, want %v", k, got[k], p)
			}
		}
	}
	for _, part := range []string{"requestBody", "responses", "operationId", "x-kubernetes-action", "x-kubernetes-group-version-kind", "tags", "description"} {
		if g, w := dig(ours, "paths", path, "patch", part), dig(ref, "paths", path, "patch", part); !reflect.DeepEqual(g, w) {
			t.Errorf("PATCH %s %s: got %v, want %v", path, part, g, w)
		}
	}
}

// Every path Tabula documents must be documented exactly like kube-apiserver
// does (the reference server serves more resources than Tabula).
func TestPathsMatchReference(t *testing.T) {
	f := newFixture(t)
	for name, file := range map[string]string{
		"api/v1":                      "openapi-v3-api-v1.body.json.gz",
		"apis/coordination.k8s.io/v1": "openapi-v3-coordination-v1.body.json.gz",
	} {
		ref := referenceDoc(t, file)
		ours := f.doc(name)
		if !reflect.DeepEqual(ours["info"], ref["info"]) {
			t.Errorf("%s info = %v, want %v", name, ours["info"], ref["info"])
		}
		if g, w := dig(ours, "components", "securitySchemes"), dig(ref, "components", "securitySchemes"); !reflect.DeepEqual(g, w) {
			t.Errorf("%s securitySchemes = %v, want %v", name, g, w)
		}
		for path, item := range dig(ours, "paths").(map[string]interface{}) {
			want := dig(ref, "paths", path)
			if want == nil {
				t.Errorf("%s: path %s is not in kube-apiserver's document", name, path)
				continue
			}
			if !reflect.DeepEqual(item, want) {
				g, _ := json.MarshalIndent(item, "", " ")
				w, _ := json.MarshalIndent(want, "", " ")
				t.Errorf("%s: path %s differs:\n got  %s\n want %s", name, path, g, w)
			}
		}
		for s := range dig(ours, "components", "schemas").(map[string]interface{}) {
			if dig(ref, "components", "schemas", s) == nil {
				t.Errorf("%s: schema %s is not in kube-apiserver's document", name, s)
			}
		}
	}

	// coordination.k8s.io/v1 is served completely: same paths, same schemas.
	ref := referenceDoc(t, "openapi-v3-coordination-v1.body.json.gz")
	ours := f.doc("apis/coordination.k8s.io/v1")
	for _, part := range []string{"paths", "components/schemas"} {
		var g, w map[string]interface{}
		if part == "paths" {
			g, w = ours["paths"].(map[string]interface{}), ref["paths"].(map[string]interface{})
		} else {
			g, w = dig(ours, "components", "schemas").(map[string]interface{}), dig(ref, "components", "schemas").(map[string]interface{})
		}
		if gk, wk := keys(g), keys(w); !reflect.DeepEqual(gk, wk) {
			t.Errorf("coordination.k8s.io/v1 %s = %v, want %v", part, gk, wk)
		}
	}
}

// The generated definitions match kube-apiserver's for the kinds served.
func TestSchemasMatchReference(t *testing.T) {
	f := newFixture(t)
	cases := map[string][]string{
		"openapi-v3-api-v1.body.json.gz": {"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.core.v1.ServiceAccount",
			"io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "io.k8s.apimachinery.pkg.apis.meta.v1.Status"},
		"openapi-v3-coordination-v1.body.json.gz": {"io.k8s.api.coordination.v1.Lease", "io.k8s.api.coordination.v1.LeaseList",
			"io.k8s.api.coordination.v1.LeaseSpec", "io.k8s.apimachinery.pkg.apis.meta.v1.Patch"},
	}
	docs := map[string]string{"openapi-v3-api-v1.body.json.gz": "api/v1", "openapi-v3-coordination-v1.body.json.gz": "apis/coordination.k8s.io/v1"}
	for file, names := range cases {
		ref := referenceDoc(t, file)
		ours := f.doc(docs[file])
		for _, n := range names {
			g, w := dig(ours, "components", "schemas", n), dig(ref, "components", "schemas", n)
			if !reflect.DeepEqual(g, w) {
				gj, _ := json.MarshalIndent(g, "", " ")
				wj, _ := json.MarshalIndent(w, "", " ")
				t.Errorf("schema %s differs:\n got  %s\n want %s", n, gj, wj)
			}
		}
	}
}

func keys(m map[string]interface{}) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
