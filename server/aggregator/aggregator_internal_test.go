package aggregator

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
)

// TestGroupsOrderAndFreshness: Service-backed groups come in
// kube-aggregator's order (group priority, highest first, then name;
// within a group version priority, then kube's version order), and a
// version is Current in aggregated discovery only while its server is
// available and its last read succeeded.
func TestGroupsOrderAndFreshness(t *testing.T) {
	res := []apidiscoveryv2.APIResourceDiscovery{{Resource: "pods"}}
	target := func(group, version string, groupPriority, versionPriority int32, available bool, d *discovered) *Target {
		return &Target{api: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: version + "." + group},
			Spec: apiregistrationv1.APIServiceSpec{Group: group, Version: version, GroupPriorityMinimum: groupPriority, VersionPriority: versionPriority}},
			GroupVersion: runtimeschema.GroupVersion{Group: group, Version: version}, Available: available, resources: d}
	}
	a := &Aggregator{remote: map[runtimeschema.GroupVersion]*Target{}}
	for _, t := range []*Target{
		target("b.example", "v1", 100, 10, true, &discovered{resources: res, current: true}),
		target("a.example", "v1", 100, 10, true, &discovered{resources: res}), // its last read failed
		target("metrics.k8s.io", "v1beta1", 100, 100, false, &discovered{resources: res, current: true}),
		target("metrics.k8s.io", "v1", 100, 100, true, nil),
		target("z.example", "v1alpha1", 2000, 1, true, &discovered{resources: res, current: true}),
	} {
		a.remote[t.GroupVersion] = t
	}
	var names []string
	for _, g := range a.Groups() {
		for _, v := range g.Versions {
			names = append(names, g.Name+"/"+v.Version+" "+string(v.Freshness))
		}
	}
	want := []string{
		"z.example/v1alpha1 Current",
		"a.example/v1 Stale",
		"b.example/v1 Current",
		"metrics.k8s.io/v1 Stale",      // never read
		"metrics.k8s.io/v1beta1 Stale", // unavailable
	}
	if !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}

// TestFailedReadListsNoResources: a read that fails (here, the server is
// unavailable) leaves the version Stale with no resources, as
// kube-aggregator lists it.
func TestFailedReadListsNoResources(t *testing.T) {
	a := &Aggregator{remote: map[runtimeschema.GroupVersion]*Target{}}
	tg := &Target{api: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.a.example"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "a.example", Version: "v1", GroupPriorityMinimum: 100, VersionPriority: 10}},
		GroupVersion: runtimeschema.GroupVersion{Group: "a.example", Version: "v1"},
		resources:    &discovered{resources: []apidiscoveryv2.APIResourceDiscovery{{Resource: "foos"}}, current: true}}
	a.remote[tg.GroupVersion] = tg
	a.refresh(t.Context(), tg)
	g := a.Groups()
	if len(g) != 1 || len(g[0].Versions) != 1 || g[0].Versions[0].Freshness != apidiscoveryv2.DiscoveryFreshnessStale || len(g[0].Versions[0].Resources) != 0 {
		t.Errorf("after a failed read: %+v; want v1 Stale with no resources", g)
	}
}

// fixedResolver sends every Service to one address.
type fixedResolver struct{ u *url.URL }

func (r fixedResolver) ResolveEndpoint(string, string, int32) (*url.URL, error) { return r.u, nil }

// TestDiscoveryReadsTheAggregatedDocument: as kube-aggregator's discovery
// manager, an extension server's resources come from its aggregated
// document (/apis, asked as system:kube-aggregator in system:masters),
// which may differ from its group-version's own list; a server without
// one is asked for that list, as system:kube-aggregator alone.
func TestDiscoveryReadsTheAggregatedDocument(t *testing.T) {
	var aggregated atomic.Bool
	var asked []string
	var mu sync.Mutex
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		asked = append(asked, r.URL.Path+" "+r.Header.Get("X-Remote-User")+" "+strings.Join(r.Header.Values("X-Remote-Group"), ","))
		mu.Unlock()
		switch {
		case r.URL.Path == "/apis" && aggregated.Load() && strings.Contains(r.Header.Get("Accept"), "as=APIGroupDiscoveryList"):
			w.Header().Set("Content-Type", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
			fmt.Fprint(w, `{"kind":"APIGroupDiscoveryList","apiVersion":"apidiscovery.k8s.io/v2","items":[{"metadata":{"name":"foo.example"},
				"versions":[{"version":"v1","resources":[{"resource":"aggonlys","responseKind":{"group":"foo.example","version":"v1","kind":"AggOnly"},
				"scope":"Namespaced","verbs":["get"],"subresources":[{"subresource":"status","verbs":["get"]}]}]}]}]}`)
		case r.URL.Path == "/apis":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"APIGroupList","apiVersion":"v1","groups":[]}`)
		case r.URL.Path == "/apis/foo.example/v1":
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"foo.example/v1","resources":[{"name":"legacyonlys","namespaced":true,"kind":"LegacyOnly","verbs":["get"]}]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer backend.Close()
	u, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	gv := runtimeschema.GroupVersion{Group: "foo.example", Version: "v1"}
	tg := &Target{api: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.foo.example"},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: 100, VersionPriority: 10}},
		GroupVersion: gv, Available: true, transport: backend.Client().Transport}
	a := &Aggregator{remote: map[runtimeschema.GroupVersion]*Target{gv: tg}, resolver: fixedResolver{u},
		cfg: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	read := func() (names []string) {
		t.Helper()
		mu.Lock()
		asked = nil
		mu.Unlock()
		a.refresh(t.Context(), tg)
		for _, g := range a.Groups() {
			for _, v := range g.Versions {
				for _, r := range v.Resources {
					names = append(names, fmt.Sprintf("%s/%s %s %s", g.Name, v.Version, r.Resource, v.Freshness))
					if r.ResponseKind == nil || len(r.Subresources) > 0 && r.Subresources[0].ResponseKind == nil {
						t.Errorf("%s: a resource or subresource without a response kind", r.Resource)
					}
				}
			}
		}
		return names
	}

	aggregated.Store(true)
	if got, want := read(), []string{"foo.example/v1 aggonlys Current"}; !slices.Equal(got, want) {
		t.Errorf("from a server with an aggregated document: %q; want %q", got, want)
	}
	if want := []string{"/apis system:kube-aggregator system:masters", "/openapi/v3 system:aggregator "}; !slices.Equal(asked, want) {
		t.Errorf("asked %q; want %q", asked, want)
	}
	// A version the document leaves out is Current with no resources, as
	// kube-aggregator lists it.
	gv2 := runtimeschema.GroupVersion{Group: "foo.example", Version: "v2"}
	tg2 := &Target{api: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v2.foo.example"},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv2.Group, Version: gv2.Version, GroupPriorityMinimum: 100, VersionPriority: 5}},
		GroupVersion: gv2, Available: true, transport: backend.Client().Transport}
	a.remote[gv2] = tg2
	a.refresh(t.Context(), tg2)
	if st := a.Stale(); len(st) != 0 {
		t.Errorf("Stale with a version the document leaves out: %q; want none", st)
	}
	delete(a.remote, gv2)
	aggregated.Store(false)
	if got, want := read(), []string{"foo.example/v1 legacyonlys Current"}; !slices.Equal(got, want) {
		t.Errorf("from a server without one: %q; want %q", got, want)
	}
	if want := []string{"/apis system:kube-aggregator system:masters", "/apis/foo.example/v1 system:kube-aggregator ", "/openapi/v3 system:aggregator "}; !slices.Equal(asked, want) {
		t.Errorf("asked %q; want %q", asked, want)
	}
}

// TestOpenAPIV3IndexEntry: as kube-aggregator's OpenAPI v3 downloader, an
// extension server's /openapi/v3 index is read as system:aggregator; its
// entry for the APIService's group-version (not the others it lists) is
// offered for the server's index and routes that document's path to it;
// a failed read keeps the entry, and a server without a v3 index (404)
// has none.
func TestOpenAPIV3IndexEntry(t *testing.T) {
	var status atomic.Int32
	status.Store(http.StatusOK)
	var users []string
	var mu sync.Mutex
	backend := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/openapi/v3" {
			http.NotFound(w, r)
			return
		}
		mu.Lock()
		users = append(users, r.Header.Get("X-Remote-User")+" "+strings.Join(r.Header.Values("X-Remote-Group"), ","))
		mu.Unlock()
		if code := int(status.Load()); code != http.StatusOK {
			w.WriteHeader(code)
			return
		}
		fmt.Fprint(w, `{"paths":{"version":{"serverRelativeURL":"/openapi/v3/version?hash=V"},
			"apis/foo.example/v1":{"serverRelativeURL":"/openapi/v3/apis/foo.example/v1?hash=F1"},
			"apis/foo.example/v2":{"serverRelativeURL":"/openapi/v3/apis/foo.example/v2?hash=F2"}}}`)
	}))
	defer backend.Close()
	u, err := url.Parse(backend.URL)
	if err != nil {
		t.Fatal(err)
	}
	gv := runtimeschema.GroupVersion{Group: "foo.example", Version: "v1"}
	tg := &Target{api: &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1.foo.example"},
		Spec: apiregistrationv1.APIServiceSpec{Group: gv.Group, Version: gv.Version, GroupPriorityMinimum: 100, VersionPriority: 10}},
		GroupVersion: gv, Available: true, transport: backend.Client().Transport}
	a := &Aggregator{remote: map[runtimeschema.GroupVersion]*Target{gv: tg}, resolver: fixedResolver{u},
		cfg: Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	entries := func() string {
		var out []string
		for name, e := range a.OpenAPIV3() {
			out = append(out, name+" "+e.ServerRelativeURL)
		}
		slices.Sort(out)
		return strings.Join(out, ";")
	}

	if got := entries(); got != "" {
		t.Errorf("before a read: %q; want none", got)
	}
	a.refresh(t.Context(), tg)
	const want = "apis/foo.example/v1 /openapi/v3/apis/foo.example/v1?hash=F1"
	if got := entries(); got != want {
		t.Errorf("after a read: %q; want %q", got, want)
	}
	if !slices.Equal(users, []string{"system:aggregator "}) {
		t.Errorf("read as %q; want system:aggregator alone", users)
	}
	if a.OpenAPIV3Target("apis/foo.example/v1") != tg || a.OpenAPIV3Target("apis/foo.example/v2") != nil || a.OpenAPIV3Target("version") != nil {
		t.Error("OpenAPIV3Target routes other than apis/foo.example/v1 to the server, or not that one")
	}

	status.Store(http.StatusInternalServerError)
	a.refresh(t.Context(), tg)
	if got := entries(); got != want {
		t.Errorf("after a failed read: %q; want the last one kept, %q", got, want)
	}

	status.Store(http.StatusNotFound)
	a.refresh(t.Context(), tg)
	if got := entries(); got != "" {
		t.Errorf("from a server without a v3 index: %q; want none", got)
	}
}
