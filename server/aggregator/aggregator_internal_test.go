package aggregator

import (
	"slices"
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
