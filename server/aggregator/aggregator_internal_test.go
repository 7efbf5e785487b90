package aggregator

import (
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
)

// TestGroupsOrderAndFreshness: Service-backed groups come in
// kube-aggregator's order (group priority, highest first, then name;
// within a group version priority, then kube's version order), and a
// version is Current in aggregated discovery only when its server is
// available and was read since it last changed.
func TestGroupsOrderAndFreshness(t *testing.T) {
	gv := func(g, v string) runtimeschema.GroupVersion { return runtimeschema.GroupVersion{Group: g, Version: v} }
	res := []apidiscoveryv2.APIResourceDiscovery{{Resource: "pods"}}
	a := &Aggregator{remote: map[runtimeschema.GroupVersion]*Target{}}
	for _, t := range []*Target{
		{GroupVersion: gv("b.example", "v1"), GroupPriority: 100, VersionPriority: 10, Available: true, resources: &discovered{resources: res, current: true}},
		{GroupVersion: gv("a.example", "v1"), GroupPriority: 100, VersionPriority: 10, Available: true, resources: &discovered{resources: res}},
		{GroupVersion: gv("metrics.k8s.io", "v1beta1"), GroupPriority: 100, VersionPriority: 100, Available: false, resources: &discovered{resources: res, current: true}},
		{GroupVersion: gv("metrics.k8s.io", "v1"), GroupPriority: 100, VersionPriority: 100, Available: true},
		{GroupVersion: gv("z.example", "v1alpha1"), GroupPriority: 2000, VersionPriority: 1, Available: true, resources: &discovered{resources: res, current: true}},
	} {
		a.remote[t.GroupVersion] = t
	}
	var names []string
	for _, g := range a.Groups() {
		for i, v := range g.Versions {
			av := g.Aggregated.Versions[i]
			names = append(names, v.String()+" "+string(av.Freshness))
		}
	}
	want := []string{
		"z.example/v1alpha1 Current",
		"a.example/v1 Stale", // read before it changed
		"b.example/v1 Current",
		"metrics.k8s.io/v1 Stale",      // never read
		"metrics.k8s.io/v1beta1 Stale", // unavailable
	}
	if !slices.Equal(names, want) {
		t.Errorf("got %q, want %q", names, want)
	}
}
