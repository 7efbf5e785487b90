package registry_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// allocRegistry is a registry on a fresh SQLite store with the given
// Service ranges and a namespace "ns".
func allocRegistry(t *testing.T, cidr string, ports registry.PortRange) *registry.Registry {
	t.Helper()
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	g := mustNew(registry.Config{Store: st, Types: schema.NewBuiltin(),
		Services: &registry.ServiceRanges{ClusterIPs: netip.MustParsePrefix(cidr), NodePorts: ports}})
	if _, err := g.MustLookup("", "v1", "namespaces").Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return g
}

func service(name, typ, clusterIP string, nodePorts ...int32) *corev1.Service {
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.ServiceSpec{
		Type: corev1.ServiceType(typ), ClusterIP: clusterIP, Selector: map[string]string{"app": name}}}
	if len(nodePorts) == 0 {
		nodePorts = []int32{0}
	}
	for i, np := range nodePorts {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: "p" + string(rune('a'+i)), Port: int32(80 + i), TargetPort: intstr.FromInt32(80), NodePort: np})
	}
	return svc
}

// claimedIPs lists the IPAddress objects by name with their parent.
func claimedIPs(t *testing.T, g *registry.Registry) map[string]string {
	t.Helper()
	x := g.MustLookup("networking.k8s.io", "v1", "ipaddresses")
	res, err := x.List(context.Background(), kv.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, rec := range res.Items {
		obj, err := x.Decode(rec)
		if err != nil {
			t.Fatal(err)
		}
		ip := obj.(*networkingv1.IPAddress)
		if ip.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" || ip.Labels["ipaddress.kubernetes.io/ip-family"] != "IPv4" {
			t.Errorf("IPAddress %s labels %v", ip.Name, ip.Labels)
		}
		out[ip.Name] = ip.Spec.ParentRef.Namespace + "/" + ip.Spec.ParentRef.Name
	}
	return out
}

// updateService changes a Service of "ns" through the registry.
func updateService(ctx context.Context, svcs *registry.Resource, name string, mutate func(*corev1.Service)) (*corev1.Service, error) {
	res, _, err := svcs.Update(ctx, "ns", name, func(cur runtime.Object) (runtime.Object, error) {
		svc := cur.(*corev1.Service)
		mutate(svc)
		return svc, nil
	}, registry.UpdateOptions{})
	if err != nil {
		return nil, err
	}
	return res.Obj.(*corev1.Service), nil
}

func invalidWith(t *testing.T, err error, text string) {
	t.Helper()
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), text) {
		t.Fatalf("got %v; want 422 with %q", err, text)
	}
}

// TestServiceAllocation: Services get a cluster IP from the range (from
// above its static band unless they ask for one), node ports from the
// port range; requests for taken or foreign values get kube's 422; what
// a refused, dry-run or deleted Service claimed is free again.
func TestServiceAllocation(t *testing.T) {
	ctx := context.Background()
	g := allocRegistry(t, "10.96.0.0/12", registry.PortRange{Base: 30000, Size: 2768})
	svcs := g.MustLookup("", "v1", "services")
	create := func(svc *corev1.Service, dryRun bool) (*corev1.Service, error) {
		res, err := svcs.Create(ctx, "ns", svc, registry.WriteOptions{DryRun: dryRun})
		if err != nil {
			return nil, err
		}
		return res.Obj.(*corev1.Service), nil
	}

	web, err := create(service("web", "", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	ip := netip.MustParseAddr(web.Spec.ClusterIP)
	if !netip.MustParsePrefix("10.96.0.0/12").Contains(ip) || netip.MustParsePrefix("10.96.0.0/24").Contains(ip) ||
		len(web.Spec.ClusterIPs) != 1 || web.Spec.ClusterIPs[0] != web.Spec.ClusterIP ||
		*web.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || web.Spec.IPFamilies[0] != corev1.IPv4Protocol {
		t.Fatalf("allocated %q %v %v %v; want an address above the static band, single-stack IPv4", web.Spec.ClusterIP, web.Spec.ClusterIPs, *web.Spec.IPFamilyPolicy, web.Spec.IPFamilies)
	}
	if got := claimedIPs(t, g); got[web.Spec.ClusterIP] != "ns/web" || len(got) != 1 {
		t.Fatalf("IPAddresses %v; want %s for ns/web", got, web.Spec.ClusterIP)
	}

	if _, err := create(service("static", "", "10.96.0.10"), false); err != nil {
		t.Fatal(err)
	}
	_, err = create(service("again", "", "10.96.0.10"), false)
	invalidWith(t, err, `spec.clusterIPs: Invalid value: ["10.96.0.10"]: failed to allocate IP 10.96.0.10: provided IP is already allocated`)
	_, err = create(service("far", "", "192.168.0.10"), false)
	invalidWith(t, err, "failed to allocate IP 192.168.0.10: the provided network does not match the current range")

	np, err := create(service("np", "NodePort", "", 0, 31000), false)
	if err != nil {
		t.Fatal(err)
	}
	if p := np.Spec.Ports[0].NodePort; p < 30000 || p > 32767 || p == 31000 || np.Spec.Ports[1].NodePort != 31000 {
		t.Fatalf("node ports %d, %d; want one from the range and the requested 31000", p, np.Spec.Ports[1].NodePort)
	}
	_, err = create(service("np2", "NodePort", "", 31000), false)
	invalidWith(t, err, "spec.ports[0].nodePort: Invalid value: 31000: provided port is already allocated")
	_, err = create(service("np3", "NodePort", "", 80), false)
	invalidWith(t, err, "provided port is not in the valid range. The range of valid ports is 30000-32767")

	// A Service refused after allocation (by validation) gives it back.
	before := claimedIPs(t, g)
	bad := service("bad", "NodePort", "10.96.0.20", 31001)
	bad.Spec.Ports[0].Port = 0
	_, err = create(bad, false)
	invalidWith(t, err, "spec.ports[0].port")
	if after := claimedIPs(t, g); len(after) != len(before) {
		t.Fatalf("a refused Service left IPAddresses %v (before %v)", after, before)
	}
	if _, err := create(service("reuse", "NodePort", "10.96.0.20", 31001), false); err != nil {
		t.Fatalf("the refused Service's IP and port are not free again: %v", err)
	}

	// A dry run allocates nothing.
	dry, err := create(service("dry", "NodePort", ""), true)
	if err != nil || dry.Spec.ClusterIP == "" || dry.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("dry run: %v %+v", err, dry)
	}
	if got := claimedIPs(t, g); got[dry.Spec.ClusterIP] != "" {
		t.Fatalf("a dry run claimed %s", dry.Spec.ClusterIP)
	}

	// Headless Services take no IP; without a selector both families are listed.
	hl := service("headless", "", "None")
	hl.Spec.Selector = nil
	h, err := create(hl, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Spec.ClusterIPs[0] != "None" || *h.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || len(h.Spec.IPFamilies) != 2 {
		t.Fatalf("headless: %v %v %v", h.Spec.ClusterIPs, *h.Spec.IPFamilyPolicy, h.Spec.IPFamilies)
	}

	// An update that leaves the allocated values out keeps them; a type
	// change back to ClusterIP drops and frees the node ports.
	update := func(name string, mutate func(*corev1.Service)) (*corev1.Service, error) {
		return updateService(ctx, svcs, name, mutate)
	}
	kept, err := update("np", func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
		for i := range s.Spec.Ports {
			s.Spec.Ports[i].NodePort = 0
		}
		s.ResourceVersion = ""
	})
	if err != nil || kept.Spec.ClusterIP != np.Spec.ClusterIP || kept.Spec.Ports[1].NodePort != 31000 {
		t.Fatalf("update without allocated values: %v, %+v", err, kept)
	}
	back, err := update("np", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP; s.Spec.ExternalTrafficPolicy = "" })
	if err != nil || back.Spec.Ports[1].NodePort != 0 {
		t.Fatalf("NodePort to ClusterIP: %v, %+v", err, back)
	}
	if _, err := create(service("takes31000", "NodePort", "", 31000), false); err != nil {
		t.Fatalf("the port the Service gave up is not free: %v", err)
	}

	// Deleting a Service frees its IP.
	if _, err := svcs.Delete(ctx, "ns", "static", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := create(service("static2", "", "10.96.0.10"), false); err != nil {
		t.Fatalf("the deleted Service's IP is not free: %v", err)
	}
}

// TestServiceAllocationExhaustsASmallRange: concurrent creates in a range
// of six addresses get six distinct ones, and the seventh a 500.
func TestServiceAllocationExhaustsASmallRange(t *testing.T) {
	ctx := context.Background()
	g := allocRegistry(t, "10.0.0.0/29", registry.PortRange{Base: 30000, Size: 10})
	svcs := g.MustLookup("", "v1", "services")
	var wg sync.WaitGroup
	errs := make([]error, 6)
	for i := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = svcs.Create(ctx, "ns", service("s"+string(rune('a'+i)), "", ""), registry.WriteOptions{})
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	got := claimedIPs(t, g)
	if len(got) != 6 {
		t.Fatalf("six Services hold %d addresses: %v", len(got), got)
	}
	for ip := range got {
		if ip == "10.0.0.0" || ip == "10.0.0.7" {
			t.Fatalf("allocated the network or broadcast address %s", ip)
		}
	}
	_, err := svcs.Create(ctx, "ns", service("full", "", ""), registry.WriteOptions{})
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "range is full") {
		t.Fatalf("seventh Service: %v; want 500 range is full", err)
	}
}

// TestServiceAllocationRepair: a claim nobody holds is released, and a
// Service's address without a claim is claimed again.
func TestServiceAllocationRepair(t *testing.T) {
	ctx := context.Background()
	g := allocRegistry(t, "10.96.0.0/12", registry.PortRange{Base: 30000, Size: 2768})
	svcs := g.MustLookup("", "v1", "services")
	ips := g.MustLookup("networking.k8s.io", "v1", "ipaddresses")
	res, err := svcs.Create(ctx, "ns", service("web", "NodePort", "10.96.0.30", 30100), registry.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A leaked claim (its Service never got written) and a lost one.
	leak := &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.96.0.31", Labels: map[string]string{
		"ipaddress.kubernetes.io/managed-by": "ipallocator.k8s.io", "ipaddress.kubernetes.io/ip-family": "IPv4"}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: "ns", Name: "ghost"}}}
	if _, err := ips.Create(ctx, "", leak, registry.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := ips.Delete(ctx, "", "10.96.0.30", &metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Young claims are left alone.
	if err := g.RepairServiceAllocations(ctx, time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := claimedIPs(t, g); got["10.96.0.31"] != "ns/ghost" || got["10.96.0.30"] != "ns/web" {
		t.Fatalf("after a repair with a long grace: %v; want the young leak kept and the lost claim back", got)
	}
	if err := g.RepairServiceAllocations(ctx, 0); err != nil {
		t.Fatal(err)
	}
	if got := claimedIPs(t, g); got["10.96.0.31"] != "" || got["10.96.0.30"] != "ns/web" {
		t.Fatalf("after repair: %v; want only 10.96.0.30 for ns/web", got)
	}
	_ = res
	if _, err := svcs.Create(ctx, "ns", service("np", "NodePort", "", 30100), registry.WriteOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("the repaired Service's node port was handed out again: %v", err)
	}
}

// TestServiceClaimsAndTypeChangesAsKube: what kube's allocator and
// strategy do that clients rely on. An address written with leading
// zeros is claimed as the address it reads as; a LoadBalancer that
// allocates no node ports still holds those it names, and keeps them when
// it stops allocating; the protocols of one port share a node port; a
// dry run names no port twice. A type change drops what the new type
// cannot have when the writer left it as it was (traffic policy, load
// balancer class and allocation, node ports, a headless Service's
// families on a switch to ExternalName), and a headless Service keeps
// "None" when an update leaves its cluster IP out.
func TestServiceClaimsAndTypeChangesAsKube(t *testing.T) {
	ctx := context.Background()
	g := allocRegistry(t, "10.96.0.0/24", registry.PortRange{Base: 30000, Size: 100})
	svcs := g.MustLookup("", "v1", "services")
	create := func(svc *corev1.Service, dryRun bool) (*corev1.Service, registry.Result, error) {
		res, err := svcs.Create(ctx, "ns", svc, registry.WriteOptions{DryRun: dryRun})
		if err != nil {
			return nil, res, err
		}
		return res.Obj.(*corev1.Service), res, nil
	}
	update := func(name string, mutate func(*corev1.Service)) (*corev1.Service, error) {
		return updateService(ctx, svcs, name, mutate)
	}
	no := false

	// Leading zeros.
	_, res, err := create(service("zeros", "", "010.96.0.9"), false)
	if err != nil {
		t.Fatal(err)
	}
	if got := claimedIPs(t, g)["10.96.0.9"]; got != "ns/zeros" {
		t.Errorf("010.96.0.9 claimed as %q; want 10.96.0.9 held by ns/zeros", got)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "non-standard IP address") {
		t.Errorf("warnings %q; want kube's non-standard IP address warning", w)
	}
	_, _, err = create(service("plain", "", "10.96.0.9"), false)
	invalidWith(t, err, "failed to allocate IP 10.96.0.9: provided IP is already allocated")

	// Changing the singular clusterIP alone (a merge patch) changes the
	// plural's first too, as kube's normalizeClusterIPs reads it, so the
	// refusal names the address asked for.
	_, err = update("zeros", func(svc *corev1.Service) { svc.Spec.ClusterIP = "10.96.0.50" })
	invalidWith(t, err, `spec.clusterIPs[0]: Invalid value: ["10.96.0.50"]: may not change once set`)

	// A LoadBalancer that allocates none holds what it names.
	lb := service("lb-named", "LoadBalancer", "", 30001)
	lb.Spec.AllocateLoadBalancerNodePorts = &no
	if _, _, err := create(lb, false); err != nil {
		t.Fatal(err)
	}
	_, _, err = create(service("np-same", "NodePort", "", 30001), false)
	invalidWith(t, err, "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated")
	lb80 := service("lb-80", "LoadBalancer", "", 80)
	lb80.Spec.AllocateLoadBalancerNodePorts = &no
	_, _, err = create(lb80, false)
	invalidWith(t, err, "provided port is not in the valid range")

	// One that stops allocating keeps what it was given.
	auto, _, err := create(service("lb-auto", "LoadBalancer", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	given := auto.Spec.Ports[0].NodePort
	off, err := update("lb-auto", func(s *corev1.Service) { s.Spec.AllocateLoadBalancerNodePorts = &no })
	if err != nil || off.Spec.Ports[0].NodePort != given {
		t.Fatalf("allocation turned off: %v, node port %d; want %d kept", err, off.Spec.Ports[0].NodePort, given)
	}
	_, _, err = create(service("np-given", "NodePort", "", given), false)
	invalidWith(t, err, "provided port is already allocated")
	// But a write that leaves the port out (a PUT of the manifest) drops
	// it, and it is free again.
	dropped, err := update("lb-auto", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 0 })
	if err != nil || dropped.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("node port left out of a LoadBalancer that allocates none: %v, %d; want it dropped", err, dropped.Spec.Ports[0].NodePort)
	}
	if _, _, err := create(service("np-given", "NodePort", "", given), false); err != nil {
		t.Errorf("the node port dropped is not free: %v", err)
	}

	// kube's allocator checks the cluster IP fields before it allocates,
	// and the policy against what was asked for.
	ipsAlone := service("ips-alone", "", "")
	ipsAlone.Spec.ClusterIPs = []string{"10.96.0.45"}
	_, _, err = create(ipsAlone, false)
	invalidWith(t, err, "spec.clusterIPs: Invalid value: [\"10.96.0.45\"]: must be empty when `clusterIP` is not specified")
	ipsAlone.Spec.ClusterIPs = []string{"None"}
	_, _, err = create(ipsAlone, false)
	invalidWith(t, err, "must be empty when `clusterIP` is not specified")
	twoFamilies := service("two-families", "", "")
	twoFamilies.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	_, _, err = create(twoFamilies, false)
	invalidWith(t, err, "spec.ipFamilyPolicy: Invalid value: \"SingleStack\": must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified")
	twoIPs := service("two-ips", "", "10.96.0.48")
	twoIPs.Spec.ClusterIPs = []string{"10.96.0.48", "fd00::1"}
	_, _, err = create(twoIPs, false)
	invalidWith(t, err, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified")
	v6 := service("v6", "", "10.96.0.49")
	v6.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	_, _, err = create(v6, false)
	invalidWith(t, err, "spec.clusterIPs[0]: Invalid value: \"10.96.0.49\": expected an IPv6 value as indicated by `ipFamilies[0]`")
	for ip, holder := range claimedIPs(t, g) {
		switch holder {
		case "ns/ips-alone", "ns/two-families", "ns/two-ips", "ns/v6":
			t.Errorf("refused Service %s holds %s", holder, ip)
		}
	}

	// TCP and UDP of one port share a node port.
	dns := service("dns", "NodePort", "", 0, 0)
	dns.Spec.Ports[1].Port, dns.Spec.Ports[1].Protocol = dns.Spec.Ports[0].Port, corev1.ProtocolUDP
	d, _, err := create(dns, false)
	if err != nil || d.Spec.Ports[0].NodePort == 0 || d.Spec.Ports[0].NodePort != d.Spec.Ports[1].NodePort {
		t.Fatalf("TCP and UDP on one port: %v, node ports %d and %d; want one shared", err, d.Spec.Ports[0].NodePort, d.Spec.Ports[1].NodePort)
	}

	// A dry run answers as kube's dry-run allocators do, without looking
	// for free values: the range's own address, node ports from 32769.
	small := allocRegistry(t, "10.96.0.0/24", registry.PortRange{Base: 30000, Size: 2})
	res, err = small.MustLookup("", "v1", "services").Create(ctx, "ns", service("two", "NodePort", "", 0, 0), registry.WriteOptions{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if s := res.Obj.(*corev1.Service).Spec; s.ClusterIP != "10.96.0.0" || s.Ports[0].NodePort != 32769 || s.Ports[1].NodePort != 32770 {
		t.Errorf("dry run: cluster IP %s, node ports %d and %d; want 10.96.0.0, 32769 and 32770", s.ClusterIP, s.Ports[0].NodePort, s.Ports[1].NodePort)
	}
	// It checks an address asked for against the range alone, and a node
	// port against the claims of the range alone.
	if _, _, err := create(service("dry-taken", "", "10.96.0.9"), true); err != nil {
		t.Errorf("dry run of a taken address: %v; want it accepted, as kube's dry-run allocator does", err)
	}
	_, _, err = create(service("dry-outside", "", "10.97.0.1"), true)
	invalidWith(t, err, "failed to allocate IP 10.97.0.1: the provided IP (10.97.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/24")
	_, _, err = create(service("dry-port", "NodePort", "", 30001), true)
	invalidWith(t, err, "spec.ports[0].nodePort: Invalid value: 30001: provided port is already allocated")
	if _, _, err := create(service("dry-port", "NodePort", "", 20080), true); err != nil {
		t.Errorf("dry run of a node port outside the range: %v; want it accepted, as kube's dry-run port operation does", err)
	}

	// The health check port: claimed when a Service comes to need one,
	// its refusal kube's internal error.
	local := service("local", "LoadBalancer", "")
	local.Spec.ExternalTrafficPolicy, local.Spec.HealthCheckNodePort = corev1.ServiceExternalTrafficPolicyLocal, 30001
	_, _, err = create(local, false)
	if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "failed to allocate requested HealthCheck NodePort 30001: provided port is already allocated") {
		t.Errorf("health check port taken: %v; want kube's 500", err)
	}
	local.Spec.HealthCheckNodePort = 0
	if _, _, err := create(local, false); err != nil {
		t.Fatal(err)
	}
	_, err = update("local", func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 30001 })
	invalidWith(t, err, "spec.healthCheckNodePort: Forbidden: field is immutable")

	// NodePort back to ClusterIP with only the type changed.
	np, _, err := create(service("np", "NodePort", ""), false)
	if err != nil {
		t.Fatal(err)
	}
	back, err := update("np", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeClusterIP })
	if err != nil || back.Spec.ExternalTrafficPolicy != "" || back.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("NodePort to ClusterIP: %v, %+v; want the traffic policy and node port dropped", err, back)
	}
	if _, _, err := create(service("np-after", "NodePort", "", np.Spec.Ports[0].NodePort), false); err != nil {
		t.Errorf("the node port given up is not free: %v", err)
	}

	// LoadBalancer to NodePort: its class and allocation flag go.
	class := "example.com/lb"
	yes := true
	lbc := service("lb-class", "LoadBalancer", "")
	lbc.Spec.LoadBalancerClass, lbc.Spec.AllocateLoadBalancerNodePorts = &class, &yes
	if _, _, err := create(lbc, false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := svcs.Update(ctx, "ns", "lb-class", func(cur runtime.Object) (runtime.Object, error) {
		svc := cur.(*corev1.Service)
		svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.0.2.1"}}
		return svc, nil
	}, registry.UpdateOptions{Subresource: "status"}); err != nil {
		t.Fatal(err)
	}
	toNP, err := update("lb-class", func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeNodePort })
	if err != nil || toNP.Spec.LoadBalancerClass != nil || toNP.Spec.AllocateLoadBalancerNodePorts != nil || len(toNP.Status.LoadBalancer.Ingress) != 0 {
		t.Fatalf("LoadBalancer to NodePort: %v, %+v; want the class, allocation flag and load balancer status dropped", err, toNP)
	}

	// Headless keeps None; to ExternalName it drops the cluster IPs and
	// families even when the writer cleared the IPs itself.
	if _, _, err := create(service("hl", "", "None"), false); err != nil {
		t.Fatal(err)
	}
	hl, err := update("hl", func(s *corev1.Service) { s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil })
	if err != nil || hl.Spec.ClusterIP != "None" {
		t.Fatalf("headless update without its cluster IP: %v, %q; want None kept", err, hl.Spec.ClusterIP)
	}
	en, err := update("hl", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP, s.Spec.ClusterIPs = corev1.ServiceTypeExternalName, "db.example.com", "", nil
		s.Spec.Selector = nil
	})
	if err != nil || en.Spec.IPFamilies != nil || en.Spec.IPFamilyPolicy != nil || en.Spec.ClusterIP != "" {
		t.Fatalf("headless to ExternalName: %v, %+v", err, en)
	}
}

// TestServiceCIDRsExtendTheRange: as with kube 1.35's ServiceCIDR
// allocator, a Ready ServiceCIDR (or one no controller has judged yet)
// adds its range: an address in it may be asked for, and automatic
// allocation goes on in it once the server's own range is full; one whose
// Ready condition is False adds nothing.
func TestServiceCIDRsExtendTheRange(t *testing.T) {
	ctx := context.Background()
	g := allocRegistry(t, "10.96.0.0/29", registry.PortRange{Base: 30000, Size: 100})
	svcs := g.MustLookup("", "v1", "services")
	cidrs := g.MustLookup("networking.k8s.io", "v1", "servicecidrs")
	create := func(name, ip string) (*corev1.Service, error) {
		res, err := svcs.Create(ctx, "ns", service(name, "", ip), registry.WriteOptions{})
		if err != nil {
			return nil, err
		}
		return res.Obj.(*corev1.Service), nil
	}
	for _, c := range []struct{ name, cidr string }{{"extra", "10.100.0.0/29"}, {"unready", "10.200.0.0/29"}} {
		if _, err := cidrs.Create(ctx, "", &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: c.name},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{c.cidr}}}, registry.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := cidrs.Update(ctx, "", "unready", func(cur runtime.Object) (runtime.Object, error) {
		sc := cur.(*networkingv1.ServiceCIDR)
		sc.Status.Conditions = []metav1.Condition{{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionFalse,
			Reason: "Terminating", LastTransitionTime: metav1.Now()}}
		return sc, nil
	}, registry.UpdateOptions{Subresource: "status"}); err != nil {
		t.Fatal(err)
	}

	if _, err := create("asked", "10.100.0.3"); err != nil {
		t.Fatalf("an address of the extra ServiceCIDR: %v", err)
	}
	if got := claimedIPs(t, g)["10.100.0.3"]; got != "ns/asked" {
		t.Errorf("10.100.0.3 held by %q; want ns/asked", got)
	}
	_, err := create("unready", "10.200.0.3")
	invalidWith(t, err, "failed to allocate IP 10.200.0.3: the provided network does not match the current range")

	own, extra := netip.MustParsePrefix("10.96.0.0/29"), netip.MustParsePrefix("10.100.0.0/29")
	for i := range 6 { // the server's own range: six usable addresses
		s, err := create(fmt.Sprintf("own%d", i), "")
		if err != nil || !own.Contains(netip.MustParseAddr(s.Spec.ClusterIP)) {
			t.Fatalf("service %d: %v, %v; want an address of %s first", i, err, s, own)
		}
	}
	s, err := create("spill", "")
	if err != nil || !extra.Contains(netip.MustParseAddr(s.Spec.ClusterIP)) || s.Spec.ClusterIP == "10.100.0.3" {
		t.Fatalf("with the own range full: %v, %v; want a free address of %s", err, s, extra)
	}
}
