package openapi

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"testing"

	openapi_v2 "github.com/google/gnostic-models/openapiv2"
	openapi_v3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
)

// fixture serves a Service built from the built-in registry.
type fixture struct {
	t   *testing.T
	reg *schema.Registry
	svc *Service
	srv *httptest.Server
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	reg := schema.NewBuiltin()
	svc, err := New(reg, Info{Title: "Kubernetes", Version: "v1.35.4"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(svc.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, reg: reg, svc: svc, srv: srv}
}

// get fetches path without following redirects.
func (f *fixture) get(path, accept string) (*http.Response, []byte) {
	f.t.Helper()
	req, err := http.NewRequest("GET", f.srv.URL+path, nil)
	if err != nil {
		f.t.Fatal(err)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp, body
}

// index returns the /openapi/v3 paths and their serverRelativeURLs.
func (f *fixture) index() map[string]string {
	f.t.Helper()
	resp, body := f.get("/openapi/v3", "application/json")
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET /openapi/v3: %d %s", resp.StatusCode, body)
	}
	var idx struct {
		Paths map[string]struct {
			ServerRelativeURL string `json:"serverRelativeURL"`
		} `json:"paths"`
	}
	if err := json.Unmarshal(body, &idx); err != nil {
		f.t.Fatalf("decoding index: %v\n%s", err, body)
	}
	out := map[string]string{}
	for k, v := range idx.Paths {
		out[k] = v.ServerRelativeURL
	}
	return out
}

// doc fetches one v3 document through the index and decodes it as JSON.
func (f *fixture) doc(name string) map[string]interface{} {
	f.t.Helper()
	u, ok := f.index()[name]
	if !ok {
		f.t.Fatalf("%q not in /openapi/v3 index", name)
	}
	resp, body := f.get(u, "application/json")
	if resp.StatusCode != http.StatusOK {
		f.t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	var d map[string]interface{}
	if err := json.Unmarshal(body, &d); err != nil {
		f.t.Fatal(err)
	}
	return d
}

// dig walks nested JSON maps.
func dig(v interface{}, keys ...string) interface{} {
	for _, k := range keys {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// refs collects every "$ref" value inside v.
func refs(v interface{}, out map[string]bool) {
	switch x := v.(type) {
	case map[string]interface{}:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "$ref" {
				out[s] = true
			}
			refs(e, out)
		}
	case []interface{}:
		for _, e := range x {
			refs(e, out)
		}
	}
}

// resolves reports whether a local JSON pointer names something in doc.
func resolves(doc map[string]interface{}, ref string) bool {
	if !strings.HasPrefix(ref, "#/") {
		return false
	}
	var v interface{} = doc
	for _, part := range strings.Split(ref[2:], "/") {
		part = strings.ReplaceAll(strings.ReplaceAll(part, "~1", "/"), "~0", "~")
		m, ok := v.(map[string]interface{})
		if !ok {
			return false
		}
		if v, ok = m[part]; !ok {
			return false
		}
	}
	return true
}

// paramNames returns the names of an operation's parameters, including the
// ones declared once for the whole path.
func paramNames(pathItem map[string]interface{}, method string) []string {
	var names []string
	for _, list := range []interface{}{pathItem["parameters"], dig(pathItem, method, "parameters")} {
		ps, _ := list.([]interface{})
		for _, p := range ps {
			names = append(names, dig(p, "name").(string))
		}
	}
	sort.Strings(names)
	return names
}

func TestIndexListsEveryGroupVersion(t *testing.T) {
	f := newFixture(t)
	idx := f.index()
	want := []string{"api", "api/v1", "apis", "version"}
	for _, gv := range f.reg.GroupVersions() {
		if gv.Group != "" {
			want = append(want, "apis/"+gv.Group, "apis/"+gv.String())
		}
	}
	sort.Strings(want)
	want = slices.Compact(want)
	var got []string
	for k := range idx {
		got = append(got, k)
	}
	sort.Strings(got)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("index paths = %v, want %v", got, want)
	}
	for name, u := range idx {
		if !strings.HasPrefix(u, "/openapi/v3/"+name+"?hash=") {
			t.Errorf("%s: serverRelativeURL %q", name, u)
		}
	}
}

func TestConfigMapDocument(t *testing.T) {
	f := newFixture(t)
	d := f.doc("api/v1")
	if v := d["openapi"]; v != "3.0.0" {
		t.Errorf("openapi = %v", v)
	}
	if title, ver := dig(d, "info", "title"), dig(d, "info", "version"); title != "Kubernetes" || ver != "1.35" {
		t.Errorf("info = %v %v", title, ver)
	}

	cm := dig(d, "components", "schemas", "io.k8s.api.core.v1.ConfigMap")
	if cm == nil {
		t.Fatal("no io.k8s.api.core.v1.ConfigMap schema")
	}
	gvk, _ := dig(cm, "x-kubernetes-group-version-kind").([]interface{})
	if len(gvk) != 1 || dig(gvk[0], "kind") != "ConfigMap" || dig(gvk[0], "group") != "" || dig(gvk[0], "version") != "v1" {
		t.Errorf("ConfigMap x-kubernetes-group-version-kind = %v", gvk)
	}
	if dig(cm, "properties", "data", "additionalProperties", "type") != "string" {
		t.Errorf("ConfigMap data schema = %v", dig(cm, "properties", "data"))
	}
	// Patch strategies and list types come through from the Go types.
	fin := dig(d, "components", "schemas", "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "properties", "finalizers")
	if dig(fin, "x-kubernetes-patch-strategy") != "merge" || dig(fin, "x-kubernetes-list-type") != "set" {
		t.Errorf("ObjectMeta.finalizers = %v", fin)
	}
	secrets := dig(d, "components", "schemas", "io.k8s.api.core.v1.ServiceAccount", "properties", "secrets")
	if dig(secrets, "x-kubernetes-patch-merge-key") != "name" || dig(secrets, "x-kubernetes-patch-strategy") != "merge" {
		t.Errorf("ServiceAccount.secrets = %v", secrets)
	}

	item, _ := dig(d, "paths", "/api/v1/namespaces/{namespace}/configmaps/{name}").(map[string]interface{})
	if item == nil {
		t.Fatal("no configmap item path")
	}
	patch := dig(item, "patch")
	if id := dig(patch, "operationId"); id != "patchCoreV1NamespacedConfigMap" {
		t.Errorf("operationId = %v", id)
	}
	if a := dig(patch, "x-kubernetes-action"); a != "patch" {
		t.Errorf("x-kubernetes-action = %v", a)
	}
	if k := dig(patch, "x-kubernetes-group-version-kind", "kind"); k != "ConfigMap" {
		t.Errorf("operation x-kubernetes-group-version-kind kind = %v", k)
	}
	// kubectl looks for the query parameters on the PATCH operation itself.
	var opParams []string
	for _, p := range dig(patch, "parameters").([]interface{}) {
		opParams = append(opParams, dig(p, "name").(string))
	}
	if got := strings.Join(opParams, ","); got != "dryRun,fieldManager,fieldValidation,force" {
		t.Errorf("PATCH operation parameters = %s", got)
	}
	if got := strings.Join(paramNames(item, "patch"), ","); got != "dryRun,fieldManager,fieldValidation,force,name,namespace,pretty" {
		t.Errorf("PATCH parameters incl. path level = %s", got)
	}
	var types []string
	for ct := range dig(patch, "requestBody", "content").(map[string]interface{}) {
		types = append(types, ct)
	}
	sort.Strings(types)
	if got := strings.Join(types, ","); got != "application/apply-patch+yaml,application/json-patch+json,application/merge-patch+json,application/strategic-merge-patch+json" {
		t.Errorf("PATCH body content types = %s", got)
	}

	for _, p := range []string{"/api/v1/", "/api/v1/configmaps", "/api/v1/namespaces/{namespace}/configmaps",
		"/api/v1/namespaces", "/api/v1/namespaces/{name}", "/api/v1/namespaces/{name}/status",
		"/api/v1/namespaces/{name}/finalize", "/api/v1/watch/namespaces/{namespace}/configmaps/{name}"} {
		if dig(d, "paths", p) == nil {
			t.Errorf("path %s missing", p)
		}
	}
	if dig(d, "paths", "/api/v1/namespaces", "delete") != nil {
		t.Error("namespaces have no deletecollection verb but the operation is documented")
	}
	if dig(d, "paths", "/api/v1/bindings") != nil {
		t.Error("bindings are not served but documented")
	}
}

func TestLeaseDocument(t *testing.T) {
	f := newFixture(t)
	d := f.doc("apis/coordination.k8s.io/v1")
	lease := dig(d, "components", "schemas", "io.k8s.api.coordination.v1.Lease")
	if k := dig(lease, "x-kubernetes-group-version-kind"); k == nil {
		t.Fatal("Lease schema without x-kubernetes-group-version-kind")
	}
	if dig(d, "components", "schemas", "io.k8s.api.core.v1.ConfigMap") != nil {
		t.Error("coordination.k8s.io/v1 document carries core/v1 schemas")
	}
	patch := dig(d, "paths", "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases/{name}", "patch")
	if id := dig(patch, "operationId"); id != "patchCoordinationV1NamespacedLease" {
		t.Errorf("operationId = %v", id)
	}
	if tags := dig(patch, "tags"); len(tags.([]interface{})) != 1 || tags.([]interface{})[0] != "coordination_v1" {
		t.Errorf("tags = %v", tags)
	}
}

func TestEveryRefResolves(t *testing.T) {
	f := newFixture(t)
	for name := range f.index() {
		d := f.doc(name)
		found := map[string]bool{}
		refs(d, found)
		if len(found) == 0 {
			t.Errorf("%s: no $ref at all", name)
		}
		for r := range found {
			if !strings.HasPrefix(r, "#/components/schemas/") || !resolves(d, r) {
				t.Errorf("%s: $ref %s does not resolve", name, r)
			}
		}
		// Nothing unreachable either: every schema is referenced.
		for s := range dig(d, "components", "schemas").(map[string]interface{}) {
			if !found["#/components/schemas/"+s] {
				t.Errorf("%s: schema %s is not referenced", name, s)
			}
		}
	}

	resp, body := f.get("/openapi/v2", "application/json")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /openapi/v2: %d", resp.StatusCode)
	}
	var v2 map[string]interface{}
	if err := json.Unmarshal(body, &v2); err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	refs(v2, found)
	for r := range found {
		if !resolves(v2, r) {
			t.Errorf("v2: $ref %s does not resolve", r)
		}
	}
}

func TestHashedURLsAndCaching(t *testing.T) {
	f := newFixture(t)
	u := f.index()["apis/coordination.k8s.io/v1"]

	resp, _ := f.get(u, "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "public, immutable" ||
		resp.Header.Get("Expires") == "" || resp.Header.Get("Etag") == "" {
		t.Errorf("hashed GET: %d Cache-Control=%q Expires=%q Etag=%q", resp.StatusCode,
			resp.Header.Get("Cache-Control"), resp.Header.Get("Expires"), resp.Header.Get("Etag"))
	}
	etag := resp.Header.Get("Etag")
	if want := `"` + strings.TrimPrefix(u, "/openapi/v3/apis/coordination.k8s.io/v1?hash=") + `"`; etag != want {
		t.Errorf("Etag %s, want the hash %s", etag, want)
	}

	resp, _ = f.get("/openapi/v3/apis/coordination.k8s.io/v1", "application/json")
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") == "public, immutable" {
		t.Errorf("unhashed GET: %d Cache-Control=%q", resp.StatusCode, resp.Header.Get("Cache-Control"))
	}

	resp, _ = f.get("/openapi/v3/apis/coordination.k8s.io/v1?hash=0000", "application/json")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != u {
		t.Errorf("wrong hash: %d Location=%q, want 301 to %s", resp.StatusCode, resp.Header.Get("Location"), u)
	}

	req, _ := http.NewRequest("GET", f.srv.URL+u, nil)
	req.Header.Set("If-None-Match", etag)
	r2, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match: %d, want 304", r2.StatusCode)
	}

	for _, p := range []string{"/openapi/v3/apis/nonexistent.example.com/v1", "/openapi/v3/apis/coordination.k8s.io/v2", "/openapi/v4"} {
		resp, body := f.get(p, "application/json")
		if resp.StatusCode != http.StatusNotFound || len(body) != 0 {
			t.Errorf("GET %s: %d %q, want an empty 404", p, resp.StatusCode, body)
		}
	}
}

func TestV3Protobuf(t *testing.T) {
	f := newFixture(t)
	u := f.index()["api/v1"]
	resp, body := f.get(u, "application/com.github.proto-openapi.spec.v3@v1.0+protobuf")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d", resp.StatusCode)
	}
	var doc openapi_v3.Document
	if err := proto.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.GetInfo().GetTitle() != "Kubernetes" {
		t.Errorf("title %q", doc.GetInfo().GetTitle())
	}
}

func TestV2Protobuf(t *testing.T) {
	f := newFixture(t)
	resp, body := f.get("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%d", resp.StatusCode)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "application/com.github.proto-openapi.spec.v2.v1.0+protobuf" {
		t.Errorf("Content-Type %q", ct)
	}
	var doc openapi_v2.Document
	if err := proto.Unmarshal(body, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.GetSwagger() != "2.0" || doc.GetInfo().GetTitle() != "Kubernetes" {
		t.Errorf("swagger %q title %q", doc.GetSwagger(), doc.GetInfo().GetTitle())
	}

	defs := map[string]*openapi_v2.Schema{}
	for _, d := range doc.GetDefinitions().GetAdditionalProperties() {
		defs[d.GetName()] = d.GetValue()
	}
	for _, name := range []string{"io.k8s.api.core.v1.ConfigMap", "io.k8s.api.coordination.v1.Lease", "io.k8s.api.events.v1.Event", "io.k8s.api.core.v1.Event"} {
		s := defs[name]
		if s == nil {
			t.Errorf("v2: no definition %s", name)
			continue
		}
		hasGVK := false
		for _, e := range s.GetVendorExtension() {
			hasGVK = hasGVK || e.GetName() == extGVK
		}
		if !hasGVK {
			t.Errorf("v2: %s without %s", name, extGVK)
		}
	}

	var patch *openapi_v2.Operation
	for _, p := range doc.GetPaths().GetPath() {
		if p.GetName() == "/api/v1/namespaces/{namespace}/configmaps/{name}" {
			patch = p.GetValue().GetPatch()
		}
	}
	if patch == nil {
		t.Fatal("v2: no configmap PATCH")
	}
	// Shared parameters are references into the document's parameters.
	shared := map[string]string{}
	for _, p := range doc.GetParameters().GetAdditionalProperties() {
		if np := p.GetValue().GetNonBodyParameter(); np != nil {
			shared["#/parameters/"+p.GetName()] = np.GetQueryParameterSubSchema().GetName()
		}
	}
	var names []string
	for _, p := range patch.GetParameters() {
		switch {
		case p.GetJsonReference() != nil:
			names = append(names, shared[p.GetJsonReference().GetXRef()])
		case p.GetParameter().GetNonBodyParameter() != nil:
			names = append(names, p.GetParameter().GetNonBodyParameter().GetQueryParameterSubSchema().GetName())
		}
	}
	sort.Strings(names)
	if got := strings.Join(names, ","); !strings.Contains(got, "dryRun,fieldManager,fieldValidation,force") {
		t.Errorf("v2 PATCH parameters = %s", got)
	}
}

func TestRebuild(t *testing.T) {
	f := newFixture(t)
	before := f.index()

	f.reg.Add(&schema.Type{
		Version: "v1", Kind: "Node", ListKind: "NodeList", Resource: "nodes", Singular: "node",
		Verbs:   []string{"get", "list", "watch"},
		New:     func() runtime.Object { return &corev1.Node{} },
		NewList: func() runtime.Object { return &corev1.NodeList{} },
	})
	// A Type without a generated definition (a custom resource, until its
	// schema is wired in) is left out instead of failing the build.
	f.reg.Add(&schema.Type{
		Group: "example.com", Version: "v1", Kind: "Widget", ListKind: "WidgetList", Resource: "widgets",
		Namespaced: true, Verbs: []string{"get", "list"},
		New:     func() runtime.Object { return &unstructured.Unstructured{} },
		NewList: func() runtime.Object { return &unstructured.UnstructuredList{} },
	})
	if err := f.svc.Rebuild(); err != nil {
		t.Fatal(err)
	}
	after := f.index()
	if before["api/v1"] == after["api/v1"] {
		t.Error("api/v1 hash unchanged after adding nodes")
	}
	if before["apis/coordination.k8s.io/v1"] != after["apis/coordination.k8s.io/v1"] {
		t.Error("coordination.k8s.io/v1 hash changed although its Types did not")
	}
	d := f.doc("api/v1")
	nodes, _ := dig(d, "paths", "/api/v1/nodes/{name}").(map[string]interface{})
	if nodes == nil || nodes["get"] == nil || nodes["patch"] != nil {
		t.Errorf("nodes item path after Rebuild = %v", nodes)
	}
	if w := f.doc("apis/example.com/v1"); len(dig(w, "paths").(map[string]interface{})) != 1 {
		t.Errorf("example.com/v1 paths = %v", dig(w, "paths"))
	}
	// The old hashed URL now redirects to the new one.
	resp, _ := f.get(before["api/v1"], "application/json")
	if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != after["api/v1"] {
		t.Errorf("stale hash: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, err := url.Parse(after["api/v1"]); err != nil {
		t.Error(err)
	}
}

func TestNames(t *testing.T) {
	for group, want := range map[string]string{
		"": "Core", "coordination.k8s.io": "Coordination", "rbac.authorization.k8s.io": "RbacAuthorization",
		"flowcontrol.apiserver.k8s.io": "FlowcontrolApiserver", "stable.example.com": "StableExampleCom",
		"cluster.x-k8s.io": "ClusterXK8sIo",
	} {
		if got := groupID(group); got != want {
			t.Errorf("groupID(%q) = %q, want %q", group, got, want)
		}
	}
	if got := groupTag("rbac.authorization.k8s.io"); got != "rbacAuthorization" {
		t.Errorf("groupTag = %q", got)
	}
	for kind, want := range map[string]string{"ConfigMap": "a ", "Event": "an ", "Endpoints": "", "Ingress": "an ", "Lease": "a "} {
		if got := article(kind); got != want {
			t.Errorf("article(%q) = %q, want %q", kind, got, want)
		}
	}
	for in, want := range map[string]string{"v1.35.4": "1.35", "v1.32.4+sql": "1.32", "": "unversioned", "dev": "unversioned"} {
		if got := (Info{Version: in}).spec().Version; got != want {
			t.Errorf("Info{Version: %q} → %q, want %q", in, got, want)
		}
	}
}

func TestRebuildWhileServing(t *testing.T) {
	f := newFixture(t)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 0; i < 5; i++ {
			if err := f.svc.Rebuild(); err != nil {
				t.Error(err)
			}
		}
	}()
	for i := 0; i < 5; i++ {
		for _, u := range f.index() {
			if resp, _ := f.get(u, "application/json"); resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusMovedPermanently {
				t.Errorf("GET %s: %d", u, resp.StatusCode)
			}
		}
		f.get("/openapi/v2", "application/com.github.proto-openapi.spec.v2@v1.0+protobuf")
	}
	<-done
}
