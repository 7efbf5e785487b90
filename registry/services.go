package registry

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	netutils "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Services allocate as kube-apiserver's Service storage does: a cluster IP
// from --service-cluster-ip-range for every Service but ExternalName and
// headless ones, and node ports from --service-node-port-range for
// NodePort and LoadBalancer Services. A claimed IP is an IPAddress object
// named after it (as kube-apiserver 1.33+ records them), a claimed port a
// record in the store; both are made with the store's create, so two
// replicas can never hand out the same one. One family (the range's) is
// served: a single-stack cluster.

// ServiceRanges are the pools Services allocate from.
type ServiceRanges struct {
	ClusterIPs netip.Prefix
	NodePorts  PortRange
}

// PortRange is a range of ports, Base to Base+Size-1.
type PortRange struct{ Base, Size int }

// String is the range as the flag takes it ("30000-32767").
func (r PortRange) String() string { return fmt.Sprintf("%d-%d", r.Base, r.Base+r.Size-1) }

func (r PortRange) contains(p int32) bool { return int(p) >= r.Base && int(p) < r.Base+r.Size }

// ParsePortRange parses "30000-32767" (or a single port).
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	a, err1 := strconv.Atoi(lo)
	b, err2 := strconv.Atoi(hi)
	if err1 != nil || err2 != nil || a < 1 || b > 65535 || b < a {
		return PortRange{}, fmt.Errorf("invalid port range %q: want <low>-<high> within 1-65535", s)
	}
	return PortRange{Base: a, Size: b - a + 1}, nil
}

// DefaultServiceRanges are kube-apiserver's defaults.
func DefaultServiceRanges() ServiceRanges {
	return ServiceRanges{ClusterIPs: netip.MustParsePrefix("10.96.0.0/12"), NodePorts: PortRange{Base: 30000, Size: 2768}}
}

// FirstServiceIP is the range's first usable address, which the
// kubernetes Service takes.
func (r ServiceRanges) FirstServiceIP() netip.Addr { return r.ClusterIPs.Masked().Addr().Next() }

const (
	// nodePortRecords holds one record per claimed node port.
	nodePortRecords = "tabula.nodeports"
	// Labels kube-apiserver's allocator puts on the IPAddresses it makes.
	labelIPFamily  = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy = "ipaddress.kubernetes.io/managed-by"
	ipAllocator    = "ipallocator.k8s.io"
)

type serviceAllocator struct {
	g      *Registry
	r      ServiceRanges
	family corev1.IPFamily
}

func newServiceAllocator(g *Registry, r ServiceRanges) *serviceAllocator {
	fam := corev1.IPv4Protocol
	if r.ClusterIPs.Addr().Is6() {
		fam = corev1.IPv6Protocol
	}
	return &serviceAllocator{g: g, r: r, family: fam}
}

func (a *serviceAllocator) ipAddresses() *Resource {
	return a.g.MustLookup("networking.k8s.io", "v1", "ipaddresses")
}

// claims are what one write claimed, to give back if it is not stored.
type claims struct {
	a *serviceAllocator
	// svc holds what is claimed and given back: a release leaves a value
	// another Service holds alone.
	svc   *corev1.Service
	ips   []netip.Addr
	ports []int32
	// dryPorts are the node ports a dry run would claim: never stored,
	// so never released, but not handed out twice in one answer.
	dryPorts []int32
	// release are claims of the old object to give back once stored.
	releaseIPs   []string
	releasePorts []int32
}

func (c *claims) finish(ctx context.Context) func(bool) {
	return func(stored bool) {
		ips, ports := c.releaseIPs, c.releasePorts
		if !stored {
			ips, ports = nil, c.ports
			for _, ip := range c.ips {
				ips = append(ips, ip.String())
			}
		}
		// A release that fails leaves a leak for the repair loop.
		for _, ip := range ips {
			c.a.releaseIP(context.WithoutCancel(ctx), ip, c.svc)
		}
		for _, p := range ports {
			c.a.releasePort(context.WithoutCancel(ctx), p, c.svc)
		}
	}
}

func (a *serviceAllocator) beginCreate(ctx context.Context, obj runtime.Object, dryRun bool) (func(bool), error) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return noFinish, nil
	}
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if err := a.initFamilies(svc, nil); err != nil {
		return nil, err
	}
	c := &claims{a: a, svc: svc}
	if err := a.allocate(ctx, svc, nil, c, dryRun); err != nil {
		c.finish(ctx)(false)
		return nil, err
	}
	return c.finish(ctx), nil
}

func (a *serviceAllocator) beginUpdate(ctx context.Context, obj, old runtime.Object, dryRun bool) (func(bool), error) {
	svc, ok := obj.(*corev1.Service)
	oldSvc, ok2 := old.(*corev1.Service)
	if !ok || !ok2 {
		return noFinish, nil
	}
	dropTypeDependent(svc, oldSvc)
	keepAllocated(svc, oldSvc)
	if err := a.initFamilies(svc, oldSvc); err != nil {
		return nil, err
	}
	c := &claims{a: a, svc: svc}
	if err := a.allocate(ctx, svc, oldSvc, c, dryRun); err != nil {
		c.finish(ctx)(false)
		return nil, err
	}
	// What the old Service held and the new one no longer does.
	if needsClusterIP(oldSvc) && !needsClusterIP(svc) {
		c.releaseIPs = allocatedIPs(oldSvc)
	}
	now := nodePortsOf(svc)
	for p := range nodePortsOf(oldSvc) {
		if !now[p] {
			c.releasePorts = append(c.releasePorts, p)
		}
	}
	return c.finish(ctx), nil
}

func (a *serviceAllocator) afterDelete(ctx context.Context, obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok {
		return
	}
	for _, ip := range allocatedIPs(svc) {
		a.releaseIP(ctx, ip, svc)
	}
	for p := range nodePortsOf(svc) {
		a.releasePort(ctx, p, svc)
	}
}

// keepAllocated carries allocated values into an update that leaves them
// out (a PUT of the manifest without clusterIP or nodePort), as
// kube-apiserver does.
func keepAllocated(svc, old *corev1.Service) {
	// As kube's patchAllocatedValues: "None" is kept like an address.
	if hasClusterIP(old) && hasClusterIP(svc) {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP == old.Spec.ClusterIP {
			svc.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
	}
	// As kube's normalizeClusterIPs on an update: a writer that changed
	// the singular field alone (an old client, a merge patch) meant the
	// plural's first too, so validation judges the address it asked for.
	if svc.Spec.ClusterIP != old.Spec.ClusterIP && slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) && len(old.Spec.ClusterIPs) > 0 {
		if svc.Spec.ClusterIP == "" {
			svc.Spec.ClusterIPs = nil
		} else {
			svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
		}
	}
	if len(svc.Spec.ClusterIPs) == 0 && svc.Spec.ClusterIP != "" {
		svc.Spec.ClusterIPs = []string{svc.Spec.ClusterIP}
	}
	if allocatesNodePorts(old) && allocatesNodePorts(svc) {
		// (kube's needsNodePort: a LoadBalancer that allocates none gets
		// back no port its writer left out, and the port is released.)
		// Ports both still name may not be patched in elsewhere.
		used := map[int32]bool{}
		for p := range nodePortsOf(old) {
			for _, q := range svc.Spec.Ports {
				if q.NodePort == p {
					used[p] = true
				}
			}
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 && !used[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if needsHealthCheckPort(old) && needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort == 0 {
		svc.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

// dropTypeDependent clears what a type change leaves without use, when
// the update kept it as it was, as kube's dropTypeDependentFields does:
// `type: ClusterIP` alone turns a NodePort or LoadBalancer Service back
// (its node ports, traffic policy, load balancer class and status go),
// and a switch to ExternalName drops the cluster IPs and their families.
// What the writer changed as well is left for validation to judge.
func dropTypeDependent(svc, old *corev1.Service) {
	if hasClusterIP(old) && !hasClusterIP(svc) {
		if svc.Spec.ClusterIP == old.Spec.ClusterIP && slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) {
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = "", nil
		}
		if slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) {
			svc.Spec.IPFamilies = nil
		}
		if ptr.Deref(svc.Spec.IPFamilyPolicy, "") == ptr.Deref(old.Spec.IPFamilyPolicy, "") {
			svc.Spec.IPFamilyPolicy = nil
		}
	}
	if holdsNodePorts(old) && !holdsNodePorts(svc) && noNewNodePorts(svc, old) {
		for i := range svc.Spec.Ports {
			svc.Spec.Ports[i].NodePort = 0
		}
	}
	if needsHealthCheckPort(old) && !needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort == old.Spec.HealthCheckNodePort {
		svc.Spec.HealthCheckNodePort = 0
	}
	lb := corev1.ServiceTypeLoadBalancer
	if old.Spec.Type == lb && svc.Spec.Type != lb {
		if a, b := svc.Spec.AllocateLoadBalancerNodePorts, old.Spec.AllocateLoadBalancerNodePorts; a != nil && b != nil && *a == *b {
			svc.Spec.AllocateLoadBalancerNodePorts = nil
		}
		if ptr.Equal(svc.Spec.LoadBalancerClass, old.Spec.LoadBalancerClass) {
			svc.Spec.LoadBalancerClass = nil
		}
	}
	if externallyAccessible(old) && !externallyAccessible(svc) && svc.Spec.ExternalTrafficPolicy == old.Spec.ExternalTrafficPolicy {
		svc.Spec.ExternalTrafficPolicy = ""
	}
}

// noNewNodePorts: svc names no node port old did not (ports may be
// added, removed or changed otherwise).
func noNewNodePorts(svc, old *corev1.Service) bool {
	had := map[int32]bool{}
	for _, p := range old.Spec.Ports {
		had[p.NodePort] = true
	}
	for _, p := range svc.Spec.Ports {
		if p.NodePort != 0 && !had[p.NodePort] {
			return false
		}
	}
	return true
}

// externallyAccessible is kube's: reached from outside the cluster.
func externallyAccessible(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeClusterIP:
		return len(svc.Spec.ExternalIPs) > 0
	}
	return false
}

// initFamilies sets ipFamilyPolicy and ipFamilies as kube-apiserver's
// allocator does (initIPFamilyFields) for a single-stack cluster, with its
// checks in its order: kube's own loose validation of the cluster IP
// fields first, so no address is allocated for a request validation would
// refuse (clusterIPs without clusterIP), then the policy against what was
// asked for, then the families this cluster serves.
func (a *serviceAllocator) initFamilies(svc, old *corev1.Service) error {
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	headlessSelectorless := svc.Spec.ClusterIP == corev1.ClusterIPNone && len(svc.Spec.Selector) == 0
	if svc.Spec.IPFamilyPolicy == nil {
		p := corev1.IPFamilyPolicySingleStack
		switch {
		case old != nil && old.Spec.IPFamilyPolicy != nil:
			p = *old.Spec.IPFamilyPolicy
		case headlessSelectorless:
			p = corev1.IPFamilyPolicyRequireDualStack
		}
		svc.Spec.IPFamilyPolicy = &p
	}
	if errs, err := clusterIPFieldErrors(svc, old); err != nil {
		return apierrors.NewInternalError(err)
	} else if len(errs) > 0 {
		return invalidService(svc, errs...)
	}
	policyPath := field.NewPath("spec", "ipFamilyPolicy")
	single := *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicySingleStack
	var errs field.ErrorList
	if old != nil {
		if single {
			// SingleStack with the rest unchanged means: drop the second.
			if slices.Equal(svc.Spec.ClusterIPs, old.Spec.ClusterIPs) && len(svc.Spec.ClusterIPs) > 1 {
				svc.Spec.ClusterIPs = svc.Spec.ClusterIPs[:1]
			}
			if slices.Equal(svc.Spec.IPFamilies, old.Spec.IPFamilies) && len(svc.Spec.IPFamilies) > 1 {
				svc.Spec.IPFamilies = svc.Spec.IPFamilies[:1]
			}
		} else {
			if len(svc.Spec.ClusterIPs) > 0 && len(svc.Spec.ClusterIPs) < len(old.Spec.ClusterIPs) {
				errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary cluster IP"))
			}
			if len(svc.Spec.IPFamilies) > 0 && len(svc.Spec.IPFamilies) < len(old.Spec.IPFamilies) {
				errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be 'SingleStack' to release the secondary IP family"))
			}
		}
	}
	if single && len(svc.Spec.ClusterIPs) == 2 {
		errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified"))
	}
	if single && len(svc.Spec.IPFamilies) == 2 {
		errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified"))
	}
	for i, ip := range svc.Spec.ClusterIPs {
		if ip == corev1.ClusterIPNone {
			break
		}
		addr, _ := parseClusterIP(ip) // the loose validation read it
		if i < len(svc.Spec.IPFamilies) {
			continue
		}
		if fam := familyOf(addr); fam != a.family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "clusterIPs").Index(i), svc.Spec.ClusterIPs, fmt.Sprintf("%s is not configured on this cluster", fam)))
		} else {
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, fam)
		}
	}
	if len(errs) > 0 {
		return invalidService(svc, errs...)
	}
	if headlessSelectorless {
		// Any family may back it: both are listed unless SingleStack.
		if len(svc.Spec.IPFamilies) == 0 {
			svc.Spec.IPFamilies = []corev1.IPFamily{a.family}
		}
		if len(svc.Spec.IPFamilies) < 2 && !single {
			other := corev1.IPv6Protocol
			if svc.Spec.IPFamilies[0] == corev1.IPv6Protocol {
				other = corev1.IPv4Protocol
			}
			svc.Spec.IPFamilies = append(svc.Spec.IPFamilies, other)
		}
		return nil
	}
	if *svc.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
		errs = append(errs, field.Invalid(policyPath, svc.Spec.IPFamilyPolicy, "this cluster is not configured for dual-stack services"))
	}
	for i, fam := range svc.Spec.IPFamilies {
		if fam != a.family {
			errs = append(errs, field.Invalid(field.NewPath("spec", "ipFamilies").Index(i), fam, "not configured on this cluster"))
		}
	}
	if len(errs) > 0 {
		return invalidService(svc, errs...)
	}
	if len(svc.Spec.IPFamilies) == 0 {
		svc.Spec.IPFamilies = []corev1.IPFamily{a.family}
	}
	return nil
}

// clusterIPFieldErrors is kube's loose validation of the cluster IP
// fields, which its allocator runs before it allocates.
func clusterIPFieldErrors(svc, old *corev1.Service) (field.ErrorList, error) {
	in := &api.Service{}
	if err := legacyscheme.Scheme.Convert(svc, in, nil); err != nil {
		return nil, err
	}
	var inOld *api.Service
	if old != nil {
		inOld = &api.Service{}
		if err := legacyscheme.Scheme.Convert(old, inOld, nil); err != nil {
			return nil, err
		}
	}
	return corevalidation.ValidateServiceClusterIPsRelatedFields(in, inOld), nil
}

func familyOf(ip netip.Addr) corev1.IPFamily {
	if ip.Is4() {
		return corev1.IPv4Protocol
	}
	return corev1.IPv6Protocol
}

// allocate claims the cluster IP and node ports svc needs and old (nil
// on create) does not hold yet.
func (a *serviceAllocator) allocate(ctx context.Context, svc, old *corev1.Service, c *claims, dryRun bool) error {
	if needsClusterIP(svc) && (old == nil || !needsClusterIP(old)) {
		if err := a.allocateClusterIP(ctx, svc, c, dryRun); err != nil {
			return err
		}
	}
	held := map[int32]bool{}
	if old != nil {
		held = nodePortsOf(old)
	}
	if holdsNodePorts(svc) {
		// The ports asked for first, so none is handed out before its
		// turn; then one for each service port without, shared by the
		// protocols of one port number, as kube's allocator shares them.
		byPort := map[int32]int32{}
		claimed := map[int32]bool{}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			if p.NodePort == 0 {
				continue
			}
			if !held[p.NodePort] && !claimed[p.NodePort] {
				path := field.NewPath("spec", "ports").Index(i).Child("nodePort")
				if err := a.claimPort(ctx, svc, p.NodePort, path, c, dryRun); err != nil {
					return err
				}
			}
			claimed[p.NodePort] = true
			if byPort[p.Port] == 0 {
				byPort[p.Port] = p.NodePort
			}
		}
		for i := range svc.Spec.Ports {
			p := &svc.Spec.Ports[i]
			// A LoadBalancer that allocates none still holds those asked.
			if p.NodePort != 0 || !allocatesNodePorts(svc) {
				continue
			}
			if np := byPort[p.Port]; np != 0 {
				p.NodePort = np
				continue
			}
			port, err := a.allocatePort(ctx, svc, c, dryRun)
			if err != nil {
				return err
			}
			p.NodePort, byPort[p.Port] = port, port
		}
	}
	// The health check port is claimed when the Service comes to need one
	// (a later change is validation's to refuse), and, as in kube, a
	// refusal is an internal error, not the field's.
	if needsHealthCheckPort(svc) && (old == nil || !needsHealthCheckPort(old)) {
		if svc.Spec.HealthCheckNodePort == 0 {
			port, err := a.allocatePort(ctx, svc, c, dryRun)
			if err != nil {
				return err
			}
			svc.Spec.HealthCheckNodePort = port
		} else if why, err := a.portRefusal(ctx, svc, svc.Spec.HealthCheckNodePort, c, dryRun); err != nil {
			return err
		} else if why != "" {
			return apierrors.NewInternalError(fmt.Errorf("failed to allocate requested HealthCheck NodePort %d: %s", svc.Spec.HealthCheckNodePort, why))
		}
	}
	return nil
}

// needsClusterIP: svc holds an allocated cluster IP.
func needsClusterIP(svc *corev1.Service) bool {
	return hasClusterIP(svc) && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// hasClusterIP: svc's type has a cluster IP, "None" included (kube's
// needsClusterIP).
func hasClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName
}

// holdsNodePorts: svc's type holds the node ports it names (kube's
// needsNodePort).
func holdsNodePorts(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeNodePort || svc.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// allocatesNodePorts: svc is given node ports it does not name.
func allocatesNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// parseClusterIP reads a cluster IP as kube's allocator does, with
// ParseIPSloppy: an IPv4 address with leading zeros is read as decimal,
// so "010.96.0.9" holds 10.96.0.9.
func parseClusterIP(s string) (netip.Addr, bool) {
	ip := netutils.ParseIPSloppy(s)
	if ip == nil {
		return netip.Addr{}, false
	}
	addr, ok := netip.AddrFromSlice(ip)
	return addr.Unmap(), ok
}

func needsHealthCheckPort(svc *corev1.Service) bool {
	return svc.Spec.Type == corev1.ServiceTypeLoadBalancer && svc.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal
}

// allocatedIPs are the cluster IPs a stored Service holds, written as
// their IPAddresses are named.
func allocatedIPs(svc *corev1.Service) []string {
	if !needsClusterIP(svc) {
		return nil
	}
	var out []string
	for _, ip := range svc.Spec.ClusterIPs {
		if addr, ok := parseClusterIP(ip); ok {
			out = append(out, addr.String())
		}
	}
	return out
}

// nodePortsOf are the node ports (and health check port) svc holds.
func nodePortsOf(svc *corev1.Service) map[int32]bool {
	out := map[int32]bool{}
	if holdsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				out[p.NodePort] = true
			}
		}
	}
	if needsHealthCheckPort(svc) && svc.Spec.HealthCheckNodePort != 0 {
		out[svc.Spec.HealthCheckNodePort] = true
	}
	return out
}

// allocateClusterIP claims the requested cluster IP or a free one.
func (a *serviceAllocator) allocateClusterIP(ctx context.Context, svc *corev1.Service, c *claims, dryRun bool) error {
	path := field.NewPath("spec", "clusterIPs")
	if dryRun {
		// kube's dry-run allocator (its range's) neither reads nor writes
		// claims: an address asked for is only checked against the range,
		// and none asked for is answered with the range's own address.
		if svc.Spec.ClusterIP == "" {
			ip := a.r.ClusterIPs.Masked().Addr().String()
			svc.Spec.ClusterIP, svc.Spec.ClusterIPs = ip, []string{ip}
			return nil
		}
		ip, ok := parseClusterIP(svc.Spec.ClusterIP)
		if ok && !(ipRange{a.r.ClusterIPs}).inRange(ip) {
			return invalidService(svc, field.Invalid(path, svc.Spec.ClusterIPs, fmt.Sprintf("failed to allocate IP %s: the provided IP (%s) is not in the valid range. The range of valid IPs is %s",
				svc.Spec.ClusterIP, ip, a.r.ClusterIPs.Masked())))
		}
		return nil
	}
	if svc.Spec.ClusterIP != "" {
		ip, ok := parseClusterIP(svc.Spec.ClusterIP)
		if !ok {
			return nil // validation reports it
		}
		in := (ipRange{a.r.ClusterIPs}).inRange(ip)
		if !in {
			// Only then are the ServiceCIDRs read.
			rs, err := a.ranges(ctx)
			if err != nil {
				return err
			}
			in = inRanges(rs, ip)
		}
		if !in {
			return invalidService(svc, field.Invalid(path, svc.Spec.ClusterIPs,
				fmt.Sprintf("failed to allocate IP %s: the provided network does not match the current range", ip)))
		}
		ok, err := a.claimIP(ctx, svc, ip)
		if err != nil {
			return err
		}
		if !ok {
			return invalidService(svc, field.Invalid(path, svc.Spec.ClusterIPs,
				fmt.Sprintf("failed to allocate IP %s: provided IP is already allocated", ip)))
		}
		c.ips = append(c.ips, ip)
		return nil
	}
	ip, err := a.freeIP(ctx, svc)
	if err != nil {
		return err
	}
	c.ips = append(c.ips, ip)
	svc.Spec.ClusterIP = ip.String()
	svc.Spec.ClusterIPs = []string{ip.String()}
	return nil
}

func invalidService(svc *corev1.Service, errs ...*field.Error) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, errs)
}

// ipRange is one range cluster IPs are allocated from: the server's own
// (--service-cluster-ip-range) or another Ready ServiceCIDR's.
type ipRange struct{ prefix netip.Prefix }

// inRange: ip is a usable address of the range (neither its network nor,
// for IPv4, its broadcast address).
func (r ipRange) inRange(ip netip.Addr) bool {
	off, ok := r.offsetOf(ip)
	return ok && off >= 1 && off <= r.lastOffset()
}

// size is the number of addresses in the range, capped at 2^32.
func (r ipRange) size() uint64 {
	host := r.prefix.Addr().BitLen() - r.prefix.Bits()
	if host >= 32 {
		return 1 << 32
	}
	return 1 << host
}

// lastOffset is the highest usable offset.
func (r ipRange) lastOffset() uint64 {
	if r.prefix.Addr().Is4() {
		return r.size() - 2 // the broadcast address is not used
	}
	return r.size() - 1
}

func (r ipRange) offsetOf(ip netip.Addr) (uint64, bool) {
	base := r.prefix.Masked().Addr()
	if ip.BitLen() != base.BitLen() || !r.prefix.Contains(ip) {
		return 0, false
	}
	b, i := base.As16(), ip.As16()
	return binary.BigEndian.Uint64(i[8:]) - binary.BigEndian.Uint64(b[8:]), true
}

func (r ipRange) addrAt(off uint64) netip.Addr {
	b := r.prefix.Masked().Addr().As16()
	binary.BigEndian.PutUint64(b[8:], binary.BigEndian.Uint64(b[8:])+off)
	ip := netip.AddrFrom16(b)
	if r.prefix.Addr().Is4() {
		ip = ip.Unmap()
	}
	return ip
}

// staticBand is how many low addresses kube-apiserver keeps for Services
// that ask for a specific IP: dynamic allocation takes them last.
func (r ipRange) staticBand() uint64 {
	n := r.lastOffset() / 16
	return min(max(n, 16), 256, r.lastOffset())
}

// ranges are the ranges cluster IPs may come from, the server's own
// first: with kube 1.33's MultiCIDRServiceAllocator (GA, always on in
// 1.35) any ServiceCIDR of the server's family that is Ready (or has no
// Ready condition yet) and is not being deleted adds its CIDRs.
func (a *serviceAllocator) ranges(ctx context.Context) ([]ipRange, error) {
	out := []ipRange{{a.r.ClusterIPs}}
	x, ok := a.g.Lookup("networking.k8s.io", "v1", "servicecidrs")
	if !ok {
		return out, nil
	}
	res, err := x.List(ctx, kv.ListOptions{})
	if err != nil {
		return nil, err
	}
	for _, rec := range res.Items {
		obj, err := x.Decode(rec)
		if err != nil {
			return nil, err
		}
		sc := obj.(*networkingv1.ServiceCIDR)
		if sc.DeletionTimestamp != nil || !serviceCIDRReady(sc) {
			continue
		}
		for _, c := range sc.Spec.CIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil || familyOf(p.Addr()) != a.family || p.Masked() == a.r.ClusterIPs.Masked() {
				continue
			}
			out = append(out, ipRange{p.Masked()})
		}
	}
	return out, nil
}

// serviceCIDRReady is kube's: the Ready condition's status, or ready when
// no controller has set one yet.
func serviceCIDRReady(sc *networkingv1.ServiceCIDR) bool {
	for _, c := range sc.Status.Conditions {
		if c.Type == networkingv1.ServiceCIDRConditionReady {
			return c.Status == metav1.ConditionTrue
		}
	}
	return true
}

// inRanges: ip is a usable address of one of the ranges.
func inRanges(rs []ipRange, ip netip.Addr) bool {
	return slices.ContainsFunc(rs, func(r ipRange) bool { return r.inRange(ip) })
}

// freeIP claims a random free address of the first range with one, the
// server's own first (the ServiceCIDRs are read only once it is full),
// preferring each range's dynamic band.
func (a *serviceAllocator) freeIP(ctx context.Context, svc *corev1.Service) (netip.Addr, error) {
	var taken map[netip.Addr]bool
	rs := []ipRange{{a.r.ClusterIPs}}
	for i := 0; i < len(rs); i++ {
		r := rs[i]
		last, static := r.lastOffset(), r.staticBand()
		if last > static {
			for range 16 {
				ip := r.addrAt(static + 1 + rand.Uint64N(last-static))
				ok, err := a.claimIP(ctx, svc, ip)
				if err != nil || ok {
					return ip, err
				}
			}
		}
		// Crowded: look at what is taken and walk the free addresses.
		if taken == nil {
			taken = map[netip.Addr]bool{}
			res, err := a.ipAddresses().List(ctx, kv.ListOptions{})
			if err != nil {
				return netip.Addr{}, err
			}
			for _, rec := range res.Items {
				if ip, err := netip.ParseAddr(rec.Name); err == nil {
					taken[ip] = true
				}
			}
		}
		for _, band := range [][2]uint64{{static + 1, last}, {1, static}} {
			for off := band[0]; off <= band[1]; off++ {
				ip := r.addrAt(off)
				if taken[ip] {
					continue
				}
				ok, err := a.claimIP(ctx, svc, ip)
				if err != nil || ok {
					return ip, err
				}
			}
		}
		if i == 0 {
			// The server's own range is full: the others, after it.
			all, err := a.ranges(ctx)
			if err != nil {
				return netip.Addr{}, err
			}
			rs = all
		}
	}
	return netip.Addr{}, apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: range is full"))
}

// claimIP creates the IPAddress that records ip as svc's; false when it
// is taken.
func (a *serviceAllocator) claimIP(ctx context.Context, svc *corev1.Service, ip netip.Addr) (bool, error) {
	x := a.ipAddresses()
	obj := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{Name: ip.String(), Labels: map[string]string{
			labelIPFamily: string(familyOf(ip)), labelManagedBy: ipAllocator,
		}},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{
			Group: "", Resource: "services", Namespace: svc.Namespace, Name: svc.Name,
		}},
	}
	_, err := x.Create(ctx, "", obj, WriteOptions{Manager: ManagerAPIServer})
	if apierrors.IsAlreadyExists(err) {
		return false, nil
	}
	return err == nil, err
}

// releaseIP gives ip back: the IPAddress naming it goes, when owner
// (nil: whoever) holds it. Values stored by an older Tabula may be named
// by two Services; the one that does not hold the claim gives nothing
// back.
func (a *serviceAllocator) releaseIP(ctx context.Context, ip string, owner *corev1.Service) {
	x := a.ipAddresses()
	opts := &metav1.DeleteOptions{}
	if owner != nil {
		obj, _, err := x.Get(ctx, "", ip)
		if err != nil {
			return
		}
		addr := obj.(*networkingv1.IPAddress)
		if ref := addr.Spec.ParentRef; ref == nil || ref.Resource != "services" || ref.Namespace != owner.Namespace || ref.Name != owner.Name {
			return
		}
		opts.Preconditions = &metav1.Preconditions{UID: &addr.UID}
	}
	_, _ = x.Delete(ctx, "", ip, opts)
}

// nodePortRecord is what a claimed node port's record holds.
type nodePortRecord struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	Claimed   time.Time `json:"claimed"`
}

func nodePortKey(port int32) kv.Key {
	return kv.Key{Resource: nodePortRecords, Name: strconv.Itoa(int(port))}
}

// claimPort claims a requested node port.
func (a *serviceAllocator) claimPort(ctx context.Context, svc *corev1.Service, port int32, path *field.Path, c *claims, dryRun bool) error {
	why, err := a.portRefusal(ctx, svc, port, c, dryRun)
	if err != nil {
		return err
	}
	if why != "" {
		return invalidService(svc, field.Invalid(path, port, why))
	}
	return nil
}

// portRefusal claims port, or says why it cannot be. A dry run is kube's
// dry-run port operation: it refuses a port of the range that is taken,
// and takes one outside it as it is.
func (a *serviceAllocator) portRefusal(ctx context.Context, svc *corev1.Service, port int32, c *claims, dryRun bool) (string, error) {
	in := a.r.NodePorts.contains(port)
	if !in && !dryRun {
		return fmt.Sprintf("provided port is not in the valid range. The range of valid ports is %s", a.r.NodePorts), nil
	}
	if dryRun && slices.Contains(c.dryPorts, port) {
		return "provided port is already allocated", nil
	}
	if in {
		ok, err := a.recordPort(ctx, svc, port, dryRun)
		if err != nil {
			return "", err
		}
		if !ok {
			return "provided port is already allocated", nil
		}
	}
	if dryRun {
		c.dryPorts = append(c.dryPorts, port)
	} else {
		c.ports = append(c.ports, port)
	}
	return "", nil
}

// allocatePort claims a free node port.
func (a *serviceAllocator) allocatePort(ctx context.Context, svc *corev1.Service, c *claims, dryRun bool) (int32, error) {
	if dryRun {
		// kube's dry-run operation does not look for a free port: it
		// answers one past the highest it handed out, from 32769.
		last := int32(32768)
		if len(c.dryPorts) > 0 {
			last = slices.Max(c.dryPorts)
		}
		c.dryPorts = append(c.dryPorts, last+1)
		return last + 1, nil
	}
	r := a.r.NodePorts
	try := func(port int32) (bool, error) {
		if slices.Contains(c.ports, port) { // claimed earlier by this write
			return false, nil
		}
		ok, err := a.recordPort(ctx, svc, port, false)
		if ok {
			c.ports = append(c.ports, port)
		}
		return ok, err
	}
	start := rand.IntN(r.Size)
	for i := range r.Size {
		port := int32(r.Base + (start+i)%r.Size)
		ok, err := try(port)
		if err != nil {
			return 0, err
		}
		if ok {
			return port, nil
		}
	}
	return 0, apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: range is full"))
}

// recordPort writes the record of a claimed port; false when it is taken.
func (a *serviceAllocator) recordPort(ctx context.Context, svc *corev1.Service, port int32, dryRun bool) (bool, error) {
	if dryRun {
		_, err := a.g.store.Get(ctx, nodePortKey(port))
		return err != nil && isNotFound(err), ignoreNotFound(err)
	}
	b, err := json.Marshal(nodePortRecord{Namespace: svc.Namespace, Name: svc.Name, Claimed: time.Now().UTC()})
	if err != nil {
		return false, err
	}
	_, err = a.g.store.Create(ctx, nodePortKey(port), func(int64) (kv.Entry, error) { return kv.Entry{Value: b}, nil })
	if isExists(err) {
		return false, nil
	}
	return err == nil, err
}

// releasePort gives port back when owner (nil: whoever) holds it.
func (a *serviceAllocator) releasePort(ctx context.Context, port int32, owner *corev1.Service) {
	rec, err := a.g.store.Get(ctx, nodePortKey(port))
	if err != nil {
		return
	}
	if owner != nil {
		var r nodePortRecord
		if json.Unmarshal(rec.Value, &r) != nil || r.Namespace != owner.Namespace || r.Name != owner.Name {
			return
		}
	}
	_, _ = a.g.store.Delete(ctx, rec.Key, rec.Rev, func(int64) (kv.Entry, error) { return kv.Entry{Value: rec.Value}, nil })
}
