package server

import (
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/server/aggregator"
)

// TestWithRemote: aggregated groups merge into the served ones in kube's
// order — by group priority against kube-apiserver's own groups and
// CRD groups (1000), by name on a tie, remote groups keeping their own
// order — and a group served here gains the remote versions.
func TestWithRemote(t *testing.T) {
	remote := func(name string, priority int32, versions ...string) aggregator.Group {
		g := aggregator.Group{APIGroupDiscovery: apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: name}}, Priority: priority}
		for _, v := range versions {
			g.Versions = append(g.Versions, apidiscoveryv2.APIVersionDiscovery{Version: v})
		}
		return g
	}
	local := []string{"apps", "batch", "a.crd.example", "z.crd.example"} // 17800, 17400, 1000, 1000
	got := withRemote(local, []aggregator.Group{
		remote("first.example", 20000, "v1"), remote("middle.example", 17500, "v1"), remote("batch", 17400, "v2"),
		remote("m.crd-tie.example", 1000, "v1"), remote("metrics.k8s.io", 100, "v1beta1"),
	}, func(s string) string { return s },
		func(g aggregator.Group) string { return g.Name },
		func(l *string, g aggregator.Group) { *l += "+" + g.Versions[0].Version })
	want := []string{"first.example", "apps", "middle.example", "batch+v2", "a.crd.example", "m.crd-tie.example", "z.crd.example", "metrics.k8s.io"}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
