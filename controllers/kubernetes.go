package controllers

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The kubernetes Service in default names the API server to in-cluster
// clients: the first address of the Service range, port 443, and an
// Endpoints and EndpointSlice listing every serving replica. Each replica
// renews a Lease of its own in kube-system naming its address, and keeps
// the Endpoints equal to the replicas whose Lease is live, as
// kube-apiserver's lease endpoint reconciler does with its master leases:
// a replica that stops renewing drops out once its Lease expires, one
// that shuts down cleanly removes itself at once.

const (
	kubernetesName = "kubernetes"
	// endpointLeaseLabel marks the Leases that announce a replica.
	endpointLeaseLabel = "tabula.dev/apiserver-endpoint"
	// identityLeaseLabel is kube-apiserver's label of the Leases that
	// name its instances.
	identityLeaseLabel = "apiserver.kubernetes.io/identity"
	// endpointPortAnnotation is the port a replica serves on.
	endpointPortAnnotation = "tabula.dev/apiserver-port"
)

// kubernetesServiceController keeps the kubernetes Service and its
// endpoints until ctx ends, then removes this replica from them.
func (m *Manager) kubernetesServiceController(ctx context.Context) error {
	// Renewed at two thirds of the lease, as kube-apiserver renews its
	// 15 s master leases every 10 s.
	t := time.NewTicker(m.cfg.EndpointLeaseDuration * 2 / 3)
	defer t.Stop()
	for {
		if err := m.reconcileKubernetesService(ctx, true); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			// Leave at once rather than when the Lease expires.
			bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := m.reconcileKubernetesService(bg, false); err != nil {
				m.log.Warn("removing this replica from the kubernetes endpoints", "err", err)
			}
			return nil
		case <-t.C:
		}
	}
}

// reconcileKubernetesService makes the Service, this replica's Lease
// (renewed when serving, removed otherwise) and the endpoints right.
func (m *Manager) reconcileKubernetesService(ctx context.Context, serving bool) error {
	port := int32(m.cfg.Advertise.Port())
	if port == 0 {
		port = 6443
	}
	if err := m.ensureKubernetesService(ctx, port); err != nil {
		return err
	}
	if err := m.ensureDefaultServiceCIDR(ctx); err != nil {
		return err
	}
	if !m.cfg.Advertise.Addr().IsValid() {
		return nil // nothing to announce: no address other clients could reach
	}
	leases := m.api.MustLookup("coordination.k8s.io", "v1", "leases")
	own := "apiserver-" + strings.NewReplacer(".", "-", ":", "-").Replace(m.cfg.Advertise.Addr().String())
	if serving {
		if err := m.renewEndpointLease(ctx, leases, own); err != nil {
			return err
		}
	} else if _, err := leases.Delete(ctx, metav1.NamespaceSystem, own, &metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	live, err := m.liveEndpoints(ctx, leases)
	if err != nil {
		return err
	}
	return m.writeKubernetesEndpoints(ctx, live, port)
}

func (m *Manager) ensureKubernetesService(ctx context.Context, port int32) error {
	svcs := m.api.MustLookup("", "v1", "services")
	ports := []corev1.ServicePort{{Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(port)}}
	cur, _, err := svcs.Get(ctx, metav1.NamespaceDefault, kubernetesName)
	if apierrors.IsNotFound(err) {
		ip := m.cfg.ServiceRanges.FirstServiceIP().String()
		svc := &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"}},
			Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, Ports: ports, SessionAffinity: corev1.ServiceAffinityNone},
		}
		_, err = svcs.Create(ctx, metav1.NamespaceDefault, svc, registry.WriteOptions{Manager: registry.ManagerAPIServer})
		if apierrors.IsAlreadyExists(err) {
			return nil // another replica made it
		}
		return err
	}
	if err != nil {
		return err
	}
	if svc := cur.(*corev1.Service); len(svc.Spec.Ports) == 1 && svc.Spec.Ports[0].TargetPort == ports[0].TargetPort && svc.Spec.Ports[0].Port == 443 {
		return nil
	}
	_, _, err = svcs.Update(ctx, metav1.NamespaceDefault, kubernetesName, func(obj runtime.Object) (runtime.Object, error) {
		svc := obj.(*corev1.Service)
		svc.Spec.Ports, svc.ResourceVersion = ports, ""
		return svc, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	return err
}

// ensureDefaultServiceCIDR keeps the ServiceCIDR "kubernetes" that names
// the Service range, Ready, as kube-apiserver's default ServiceCIDR
// controller does (clients read the range from it): created by the API
// server, its condition applied by kubernetes-service-cidr-controller.
func (m *Manager) ensureDefaultServiceCIDR(ctx context.Context) error {
	cidrs := m.api.MustLookup("networking.k8s.io", "v1", "servicecidrs")
	cur, _, err := cidrs.Get(ctx, "", kubernetesName)
	if apierrors.IsNotFound(err) {
		c := &networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: kubernetesName},
			Spec: networkingv1.ServiceCIDRSpec{CIDRs: []string{m.cfg.ServiceRanges.ClusterIPs.Masked().String()}}}
		res, err := cidrs.Create(ctx, "", c, registry.WriteOptions{Manager: registry.ManagerAPIServer})
		if apierrors.IsAlreadyExists(err) {
			return nil // another replica made it
		}
		if err != nil {
			return err
		}
		cur = res.Obj
	} else if err != nil {
		return err
	}
	for _, c := range cur.(*networkingv1.ServiceCIDR).Status.Conditions {
		if c.Type == networkingv1.ServiceCIDRConditionReady && c.Status == metav1.ConditionTrue {
			return nil
		}
	}
	status := fmt.Sprintf(`{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":%q},"status":{"conditions":[`+
		`{"type":"Ready","status":"True","lastTransitionTime":%q,"reason":"","message":"Kubernetes default Service CIDR is ready"}]}}`,
		kubernetesName, time.Now().UTC().Format(time.RFC3339))
	_, _, err = cidrs.Apply(ctx, "", kubernetesName, []byte(status), registry.ApplyOptions{Subresource: "status", Force: true,
		WriteOptions: registry.WriteOptions{Manager: "kubernetes-service-cidr-controller"}})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// renewEndpointLease creates or renews this replica's Lease.
func (m *Manager) renewEndpointLease(ctx context.Context, leases *registry.Resource, name string) error {
	now := metav1.NewMicroTime(time.Now())
	seconds := int32(m.cfg.EndpointLeaseDuration.Seconds())
	if seconds < 1 {
		seconds = 1
	}
	holder := m.cfg.Advertise.Addr().String()
	_, _, err := leases.Update(ctx, metav1.NamespaceSystem, name, func(obj runtime.Object) (runtime.Object, error) {
		l, _ := obj.(*coordinationv1.Lease)
		if l == nil {
			l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
		// kube-apiserver's identity labels too, by which clients count
		// the API servers (kubectl get leases -n kube-system -l
		// apiserver.kubernetes.io/identity=kube-apiserver).
		l.Labels = map[string]string{endpointLeaseLabel: "true", identityLeaseLabel: "kube-apiserver"}
		// Only a hostname a label may hold: a Lease that fails validation
		// would drop this replica from the endpoints.
		if host, err := os.Hostname(); err == nil && len(validation.IsValidLabelValue(host)) == 0 {
			l.Labels[corev1.LabelHostname] = host
		}
		l.Annotations = map[string]string{endpointPortAnnotation: strconv.Itoa(int(m.cfg.Advertise.Port()))}
		l.Spec.HolderIdentity, l.Spec.LeaseDurationSeconds, l.Spec.RenewTime = &holder, &seconds, &now
		l.ResourceVersion = ""
		return l, nil
	}, registry.UpdateOptions{CreateMissing: true, WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	return err
}

// liveEndpoints are the addresses of the replicas whose Lease is live;
// expired Leases are removed on the way.
func (m *Manager) liveEndpoints(ctx context.Context, leases *registry.Resource) ([]string, error) {
	sel := labels.SelectorFromSet(labels.Set{endpointLeaseLabel: "true"})
	res, err := leases.List(ctx, kv.ListOptions{Namespace: metav1.NamespaceSystem, Pred: kv.Predicate{Label: sel}})
	if err != nil {
		return nil, err
	}
	var live []string
	for _, rec := range res.Items {
		obj, err := leases.Decode(rec)
		if err != nil {
			return nil, err
		}
		l := obj.(*coordinationv1.Lease)
		if l.Spec.HolderIdentity == nil || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
			continue
		}
		if time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
			if _, err := leases.Remove(ctx, rec); err != nil {
				return nil, err
			}
			continue
		}
		if ip, err := netip.ParseAddr(*l.Spec.HolderIdentity); err == nil {
			live = append(live, ip.String())
		}
	}
	slices.Sort(live)
	return slices.Compact(live), nil
}

// writeKubernetesEndpoints makes the Endpoints and EndpointSlice list
// exactly the live replicas.
func (m *Manager) writeKubernetesEndpoints(ctx context.Context, ips []string, port int32) error {
	var subsets []corev1.EndpointSubset
	if len(ips) > 0 {
		ss := corev1.EndpointSubset{Ports: []corev1.EndpointPort{{Name: "https", Port: port, Protocol: corev1.ProtocolTCP}}}
		for _, ip := range ips {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
		}
		subsets = []corev1.EndpointSubset{ss}
	}
	eps := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Namespace: metav1.NamespaceDefault, Labels: map[string]string{"endpointslice.kubernetes.io/skip-mirror": "true"}},
		Subsets:    subsets,
	}
	if err := m.putIfChanged(ctx, m.api.MustLookup("", "v1", "endpoints"), eps, func(cur runtime.Object) bool {
		c := cur.(*corev1.Endpoints)
		return fmt.Sprint(c.Subsets) == fmt.Sprint(eps.Subsets) && c.Labels["endpointslice.kubernetes.io/skip-mirror"] == "true"
	}); err != nil {
		return err
	}
	ready := true
	https, tcp := "https", corev1.ProtocolTCP
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: kubernetesName, Namespace: metav1.NamespaceDefault, Labels: map[string]string{discoveryv1.LabelServiceName: kubernetesName}},
		Ports:      []discoveryv1.EndpointPort{{Name: &https, Port: &port, Protocol: &tcp}},
	}
	slice.AddressType = discoveryv1.AddressTypeIPv4
	if m.cfg.ServiceRanges.ClusterIPs.Addr().Is6() {
		slice.AddressType = discoveryv1.AddressTypeIPv6
	}
	for _, ip := range ips {
		slice.Endpoints = append(slice.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	return m.putIfChanged(ctx, m.api.MustLookup("discovery.k8s.io", "v1", "endpointslices"), slice, func(cur runtime.Object) bool {
		c := cur.(*discoveryv1.EndpointSlice)
		return fmt.Sprint(endpointAddresses(c)) == fmt.Sprint(ips) && len(c.Ports) == 1 && c.Ports[0].Port != nil && *c.Ports[0].Port == port
	})
}

func endpointAddresses(s *discoveryv1.EndpointSlice) []string {
	var out []string
	for _, e := range s.Endpoints {
		out = append(out, e.Addresses...)
	}
	return out
}

// putIfChanged creates obj in its namespace, or replaces the stored one
// unless same says it already matches.
func (m *Manager) putIfChanged(ctx context.Context, x *registry.Resource, obj runtime.Object, same func(cur runtime.Object) bool) error {
	name, ns := obj.(metav1.Object).GetName(), obj.(metav1.Object).GetNamespace()
	if _, err := x.GetRecord(ctx, ns, name); apierrors.IsNotFound(err) {
		_, err = x.Create(ctx, ns, obj.DeepCopyObject(), registry.WriteOptions{Manager: registry.ManagerAPIServer})
		if !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	_, _, err := x.Update(ctx, ns, name, func(cur runtime.Object) (runtime.Object, error) {
		if cur != nil && same(cur) {
			return nil, registry.ErrNoChange
		}
		next := obj.DeepCopyObject()
		if cur != nil {
			// Keep the stored metadata (uid, creation time); replace the rest.
			m := next.(metav1.Object)
			c := cur.(metav1.Object)
			m.SetUID(c.GetUID())
			m.SetResourceVersion("")
		}
		return next, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	return err
}
