package openapi

import (
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/openapi3"
	"k8s.io/client-go/rest"
)

// client-go's own OpenAPI clients (the ones kubectl builds on) read the
// documents: the v3 index and per-group-version documents through
// discovery.OpenAPIV3 and openapi3.Root, v2 through OpenAPISchema, which
// asks for protobuf.
func TestClientGoReadsDocuments(t *testing.T) {
	f := newFixture(t)
	dc, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: f.srv.URL})
	if err != nil {
		t.Fatal(err)
	}

	paths, err := dc.OpenAPIV3().Paths()
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"api/v1", "apis/coordination.k8s.io/v1", "apis/events.k8s.io/v1"} {
		gv, ok := paths[p]
		if !ok {
			t.Errorf("OpenAPIV3().Paths() lacks %s", p)
			continue
		}
		if _, err := gv.Schema("application/json"); err != nil {
			t.Errorf("%s: %v", p, err)
		}
	}

	root := openapi3.NewRoot(dc.OpenAPIV3())
	gvs, err := root.GroupVersions()
	if err != nil {
		t.Fatal(err)
	}
	want := map[schema.GroupVersion]bool{{Version: "v1"}: true, {Group: "coordination.k8s.io", Version: "v1"}: true, {Group: "events.k8s.io", Version: "v1"}: true}
	for _, gv := range gvs {
		delete(want, gv)
	}
	if len(want) != 0 {
		t.Errorf("GroupVersions() = %v, missing %v", gvs, want)
	}

	doc, err := root.GVSpec(schema.GroupVersion{Group: "coordination.k8s.io", Version: "v1"})
	if err != nil {
		t.Fatal(err)
	}
	lease := doc.Components.Schemas["io.k8s.api.coordination.v1.Lease"]
	if lease == nil || lease.Extensions[extGVK] == nil {
		t.Fatalf("Lease schema = %v", lease)
	}
	// What kubectl's query-parameter verifier looks for: a PATCH operation
	// tagged with the kind that lists fieldValidation itself.
	found := false
	for _, item := range doc.Paths.Paths {
		op := item.Patch
		if op == nil || op.Extensions[extGVK] == nil {
			continue
		}
		for _, p := range op.Parameters {
			if p.Name == "fieldValidation" && p.In == "query" {
				found = true
			}
		}
	}
	if !found {
		t.Error("no Lease PATCH operation lists fieldValidation")
	}

	v2, err := dc.OpenAPISchema()
	if err != nil {
		t.Fatal(err)
	}
	if v2.GetSwagger() != "2.0" || len(v2.GetDefinitions().GetAdditionalProperties()) == 0 {
		t.Errorf("v2 document: swagger %q, %d definitions", v2.GetSwagger(), len(v2.GetDefinitions().GetAdditionalProperties()))
	}
}
