package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// scaleAnswer is the part of an autoscaling/v1 Scale the tests read.
type scaleAnswer struct {
	Kind, APIVersion string
	Metadata         struct{ Name, Namespace, UID, ResourceVersion string }
	Spec             struct{ Replicas int32 }
	Status           struct {
		Replicas int32
		Selector string
	}
}

// TestScaleSubresource: GET, PUT and every patch type of /scale read and
// write the object's spec.replicas as an autoscaling/v1 Scale; the write
// is the object's own (generation moves), conditional on a given
// resourceVersion and uid; bad Scales get kube's 422 and nothing changes.
func TestScaleSubresource(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	const deploy = "/apis/apps/v1/namespaces/default/deployments"
	body := `{"metadata":{"name":"web"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"web"},"matchExpressions":[{"key":"tier","operator":"In","values":["front"]}]},
		"template":{"metadata":{"labels":{"app":"web","tier":"front"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`
	if r := h.do("POST", deploy, ct, []byte(body)); r.Code != http.StatusCreated {
		t.Fatalf("create deployment: %d %s", r.Code, r.Body)
	}
	get := func() scaleAnswer {
		t.Helper()
		r := h.do("GET", deploy+"/web/scale", nil, nil)
		var sc scaleAnswer
		if r.Code != http.StatusOK || json.Unmarshal(r.Body.Bytes(), &sc) != nil {
			t.Fatalf("get scale: %d %s", r.Code, r.Body)
		}
		return sc
	}
	generation := func() int64 {
		t.Helper()
		var d struct{ Metadata struct{ Generation int64 } }
		r := h.do("GET", deploy+"/web", nil, nil)
		if err := json.Unmarshal(r.Body.Bytes(), &d); err != nil {
			t.Fatal(err)
		}
		return d.Metadata.Generation
	}
	sc := get()
	if sc.Kind != "Scale" || sc.APIVersion != "autoscaling/v1" || sc.Metadata.Name != "web" || sc.Metadata.Namespace != "default" ||
		sc.Metadata.UID == "" || sc.Spec.Replicas != 2 || sc.Status.Selector != "app=web,tier in (front)" {
		t.Fatalf("scale %+v", sc)
	}

	put := h.do("PUT", deploy+"/web/scale", ct, []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":3}}`))
	if put.Code != http.StatusOK || !strings.Contains(put.Body.String(), `"replicas":3`) {
		t.Fatalf("put scale: %d %s", put.Code, put.Body)
	}
	if g := generation(); g != 2 {
		t.Fatalf("generation %d after scaling; want 2 (the spec changed)", g)
	}
	for _, p := range []struct {
		ct, body string
		want     int32
	}{
		{"application/merge-patch+json", `{"spec":{"replicas":4}}`, 4},
		{"application/strategic-merge-patch+json", `{"spec":{"replicas":5}}`, 5},
		{"application/json-patch+json", `[{"op":"replace","path":"/spec/replicas","value":6}]`, 6},
	} {
		r := h.do("PATCH", deploy+"/web/scale", map[string]string{"Content-Type": p.ct}, []byte(p.body))
		if r.Code != http.StatusOK {
			t.Fatalf("%s patch of scale: %d %s", p.ct, r.Code, r.Body)
		}
		if sc := get(); sc.Spec.Replicas != p.want {
			t.Fatalf("%s patch: replicas %d, want %d", p.ct, sc.Spec.Replicas, p.want)
		}
	}

	before := get()
	for name, c := range map[string]struct {
		method, ct, body string
		code             int
		text             string
	}{
		"negative replicas": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":-1}}`,
			http.StatusUnprocessableEntity, `Scale.autoscaling \"web\" is invalid: spec.replicas: Invalid value: -1: must be greater than or equal to 0`},
		"stale resourceVersion": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","resourceVersion":"1"},"spec":{"replicas":9}}`,
			http.StatusConflict, "the object has been modified"},
		"other uid": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","uid":"00000000-0000-0000-0000-000000000000"},"spec":{"replicas":9}}`,
			http.StatusConflict, "Precondition failed: UID in precondition"},
		"other name": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"db"},"spec":{"replicas":9}}`,
			http.StatusBadRequest, "does not match the name on the URL"},
		"no name": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{},"spec":{"replicas":9}}`,
			http.StatusBadRequest, "the name of the object (web based on URL) was undeterminable: name must be provided"},
		"a deployment body": {"PUT", "application/json", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":9}}`,
			http.StatusBadRequest, "cannot be handled as a Scale"},
		"patch to negative": {"PATCH", "application/merge-patch+json", `{"spec":{"replicas":-2}}`,
			http.StatusUnprocessableEntity, "must be greater than or equal to 0"},
		"dry run": {"PUT", "application/json", `{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":9}}`,
			http.StatusOK, `"replicas":9`},
	} {
		path := deploy + "/web/scale"
		if name == "dry run" {
			path += "?dryRun=All"
		}
		r := h.do(c.method, path, map[string]string{"Content-Type": c.ct}, []byte(c.body))
		if r.Code != c.code || !strings.Contains(r.Body.String(), c.text) {
			t.Errorf("%s: %d %s; want %d with %q", name, r.Code, r.Body, c.code, c.text)
		}
	}
	if after := get(); after.Spec.Replicas != before.Spec.Replicas || after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Fatalf("refused and dry-run writes changed the object: %+v, was %+v", after, before)
	}

	if r := h.do("GET", deploy+"/absent/scale", nil, nil); r.Code != http.StatusNotFound || !strings.Contains(r.Body.String(), `deployments.apps \"absent\" not found`) {
		t.Fatalf("scale of a missing deployment: %d %s", r.Code, r.Body)
	}
	// kube's scale storage prints a Table (TestScaleTable has its cells).
	if r := h.do("GET", deploy+"/web/scale", map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"kind":"Table"`) {
		t.Fatalf("a Scale as a Table: %d %s; want 200 with a Table", r.Code, r.Body)
	}
	if r := h.do("GET", deploy+"/web/scale", map[string]string{"Accept": "application/yaml"}, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "kind: Scale") {
		t.Fatalf("a Scale as YAML: %d %s", r.Code, r.Body)
	}
	if r := h.do("DELETE", deploy+"/web/scale", nil, nil); r.Code != http.StatusMethodNotAllowed {
		t.Fatalf("DELETE of a scale subresource: %d; want 405", r.Code)
	}

	// A ReplicationController's selector is a map of labels.
	rc := `{"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"app":"rc"},"template":{"metadata":{"labels":{"app":"rc"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`
	if r := h.do("POST", "/api/v1/namespaces/default/replicationcontrollers", ct, []byte(rc)); r.Code != http.StatusCreated {
		t.Fatalf("create rc: %d %s", r.Code, r.Body)
	}
	r := h.do("GET", "/api/v1/namespaces/default/replicationcontrollers/rc/scale", nil, nil)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"selector":"app=rc"`) {
		t.Fatalf("rc scale: %d %s", r.Code, r.Body)
	}
}
