package registry

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// RepairServiceAllocations does what kube-apiserver's repair loops do for
// cluster IPs and node ports: a claim whose Service is gone or no longer
// holds it is released (a crash between claim and write, or a release
// that failed), and a Service's value without a claim is claimed again.
// Claims younger than grace are left alone: their write may be in flight.
func (g *Registry) RepairServiceAllocations(ctx context.Context, grace time.Duration) error {
	svcs, ok := g.Lookup("", "v1", "services")
	if !ok || svcs.hooks == nil {
		return nil
	}
	a := svcs.hooks.(*serviceAllocator)
	// What the Services hold, by IP and by port.
	holder := map[string]*corev1.Service{}
	portHolder := map[int32]*corev1.Service{}
	var all []*corev1.Service
	err := g.each(ctx, svcs, func(obj any) error {
		svc := obj.(*corev1.Service)
		all = append(all, svc)
		for _, ip := range allocatedIPs(svc) {
			holder[ip] = svc
		}
		for p := range nodePortsOf(svc) {
			portHolder[p] = svc
		}
		return nil
	})
	if err != nil {
		return err
	}
	now := time.Now()

	claimedIPs := map[string]bool{}
	ips := a.ipAddresses()
	err = g.each(ctx, ips, func(obj any) error {
		ip := obj.(*networkingv1.IPAddress)
		if ip.Labels[labelManagedBy] != ipAllocator || ip.Spec.ParentRef == nil || ip.Spec.ParentRef.Resource != "services" {
			return nil // not ours to manage
		}
		claimedIPs[ip.Name] = true
		if h := holder[ip.Name]; h != nil && h.Namespace == ip.Spec.ParentRef.Namespace && h.Name == ip.Spec.ParentRef.Name {
			return nil
		}
		if now.Sub(ip.CreationTimestamp.Time) < grace {
			return nil
		}
		a.releaseIP(ctx, ip.Name, nil)
		return nil
	})
	if err != nil {
		return err
	}

	claimedPorts := map[int32]bool{}
	err = g.eachRecord(ctx, nodePortRecords, func(rec kv.Record) error {
		n, err := strconv.Atoi(rec.Name)
		if err != nil {
			return nil
		}
		port := int32(n)
		claimedPorts[port] = true
		var r nodePortRecord
		_ = json.Unmarshal(rec.Value, &r)
		if h := portHolder[port]; h != nil && h.Namespace == r.Namespace && h.Name == r.Name {
			return nil
		}
		if now.Sub(r.Claimed) < grace {
			return nil
		}
		a.releasePort(ctx, port, nil)
		return nil
	})
	if err != nil {
		return err
	}

	// Values stored without a claim are claimed again, when still free.
	rs, err := a.ranges(ctx)
	if err != nil {
		return err
	}
	for _, svc := range all {
		for _, ip := range allocatedIPs(svc) {
			addr, ok := parseClusterIP(ip)
			if !ok || claimedIPs[ip] || !inRanges(rs, addr) {
				continue
			}
			if _, err := a.claimIP(ctx, svc, addr); err != nil && !apierrors.IsAlreadyExists(err) {
				return err
			}
		}
		for p := range nodePortsOf(svc) {
			if claimedPorts[p] || !a.r.NodePorts.contains(p) {
				continue
			}
			if _, err := a.recordPort(ctx, svc, p, false); err != nil {
				return err
			}
		}
	}
	return nil
}

// each decodes every live object of x, a page at a time.
func (g *Registry) each(ctx context.Context, x *Resource, fn func(obj any) error) error {
	return g.eachRecord(ctx, x.t.StorageResource, func(rec kv.Record) error {
		obj, err := x.Decode(rec)
		if err != nil {
			return err
		}
		return fn(obj)
	})
}

// eachRecord visits every live record of a storage resource in pages.
func (g *Registry) eachRecord(ctx context.Context, resource string, fn func(kv.Record) error) error {
	opts := kv.ListOptions{Resource: resource, Limit: 500}
	for {
		res, err := g.store.List(ctx, opts)
		if err != nil {
			return err
		}
		for _, rec := range res.Items {
			if err := fn(rec); err != nil {
				return err
			}
		}
		if !res.More {
			return nil
		}
		last := res.Items[len(res.Items)-1]
		opts.AfterNamespace, opts.AfterName = last.Namespace, last.Name
	}
}
