package schema

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func TestDeprecationWarning(t *testing.T) {
	reg := NewBuiltin()
	ep, ok := reg.Lookup("", "v1", "endpoints")
	if !ok {
		t.Fatal("core/v1 endpoints is not served")
	}
	// The text kubectl prints against kube-apiserver v1.33 and later.
	if got, want := ep.DeprecationWarning(), "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"; got != want {
		t.Errorf("warning = %q, want %q", got, want)
	}
	removed := &Type{Group: "example.com", Version: "v1beta1", Kind: "Widget", Deprecation: &Deprecation{In: "1.30", RemovedIn: "1.36"}}
	if got, want := removed.DeprecationWarning(), "example.com/v1beta1 Widget is deprecated in v1.30+, unavailable in v1.36+"; got != want {
		t.Errorf("warning = %q, want %q", got, want)
	}
	cm, _ := reg.Lookup("", "v1", "configmaps")
	if got := cm.DeprecationWarning(); got != "" {
		t.Errorf("configmaps warning = %q, want none", got)
	}
}

func TestEndpointsCell(t *testing.T) {
	addrs := func(ips ...string) []corev1.EndpointAddress {
		var out []corev1.EndpointAddress
		for _, ip := range ips {
			out = append(out, corev1.EndpointAddress{IP: ip})
		}
		return out
	}
	for _, tc := range []struct {
		name    string
		subsets []corev1.EndpointSubset
		want    string
	}{
		{"no subsets", nil, "<none>"},
		{"headless", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2")}}, "10.0.0.1,10.0.0.2"},
		{"ports", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "fd00::1"), Ports: []corev1.EndpointPort{{Port: 80}}}}, "10.0.0.1:80,[fd00::1]:80"},
		{"more", []corev1.EndpointSubset{{Addresses: addrs("10.0.0.1", "10.0.0.2", "10.0.0.3"), Ports: []corev1.EndpointPort{{Name: "a", Port: 80}, {Name: "b", Port: 443}}}}, "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more..."},
		{"only not ready", []corev1.EndpointSubset{{NotReadyAddresses: addrs("10.0.0.1"), Ports: []corev1.EndpointPort{{Port: 80}}}}, ""},
	} {
		if got := endpointsCell(&corev1.Endpoints{Subsets: tc.subsets}); got != tc.want {
			t.Errorf("%s: cell = %q, want %q", tc.name, got, tc.want)
		}
	}
}

// TestValidateEndpoints: Endpoints are validated by kube's own
// functions: its address rules (no loopback or link-local addresses), port
// rules (duplicate names allowed), and an update that leaves the subsets
// as they were is not refused for them.
func TestValidateEndpoints(t *testing.T) {
	meta := metav1.ObjectMeta{Name: "ep", Namespace: "ns"}
	good := &corev1.Endpoints{ObjectMeta: meta, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}},
		Ports:     []corev1.EndpointPort{{Name: "http", Port: 80}, {Name: "http", Port: 443, Protocol: corev1.ProtocolTCP}},
	}}}
	endpointsPrepare(good)
	if errs := validateEndpoints(good, nil); len(errs) != 0 {
		t.Errorf("valid endpoints (a port name twice, as kube allows): %v", errs)
	}
	if p := good.Subsets[0].Ports[0].Protocol; p != corev1.ProtocolTCP {
		t.Errorf("defaulted protocol = %q, want TCP", p)
	}
	bad := &corev1.Endpoints{ObjectMeta: meta, Subsets: []corev1.EndpointSubset{
		{},
		{
			Addresses: []corev1.EndpointAddress{{IP: "not-an-ip"}, {IP: "127.0.0.1"}},
			Ports:     []corev1.EndpointPort{{Port: 0, Protocol: "TCP"}, {Name: "x", Port: 70000, Protocol: "ICMP"}},
		},
	}}
	fields := func(errs field.ErrorList) string {
		var got []string
		for _, e := range errs {
			got = append(got, e.Field+": "+e.Type.String())
		}
		return strings.Join(got, "\n")
	}
	got := fields(validateEndpoints(bad, nil))
	for _, want := range []string{
		"subsets[0]: Required value",
		"subsets[1].addresses[0].ip: Invalid value",
		"subsets[1].addresses[1].ip: Invalid value",
		"subsets[1].ports[0].port: Invalid value",
		"subsets[1].ports[1].port: Invalid value",
		"subsets[1].ports[1].protocol: Unsupported value",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("errors:\n%s\nwant among them: %s", got, want)
		}
	}
	// An update keeping the same (invalid) subsets is not refused for them.
	relabelled := bad.DeepCopy()
	relabelled.Labels = map[string]string{"a": "b"}
	relabelled.ResourceVersion, bad.ResourceVersion = "2", "1"
	if errs := validateEndpoints(relabelled, bad); len(errs) != 0 {
		t.Errorf("an update leaving the subsets as they were: %v", errs)
	}
}
