package schema

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// Endpoints (core/v1) is served because Helm charts and older controllers
// still write it for selector-less Services. kube deprecated it in 1.33 in
// favour of discovery.k8s.io/v1 EndpointSlice, so every request to it gets
// the deprecation Warning (see Deprecation).

// endpointsPrepare applies kube's defaulting: a port without a protocol is
// TCP.
func endpointsPrepare(obj runtime.Object) {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok || ep == nil {
		return
	}
	for i := range ep.Subsets {
		for j := range ep.Subsets[i].Ports {
			if ep.Subsets[i].Ports[j].Protocol == "" {
				ep.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
			}
		}
	}
}

func endpointsPrepareForUpdate(obj, _ runtime.Object) { endpointsPrepare(obj) }

// validateEndpoints is kube's: ValidateEndpointsCreate and
// ValidateEndpointsUpdate on the internal object (metadata, the subsets —
// skipped on an update that leaves them as they were — and the
// annotations kube reserves), so what kube refuses or lets pass does the
// same here.
func validateEndpoints(obj, old runtime.Object) field.ErrorList {
	in := &core.Endpoints{}
	if err := legacyscheme.Scheme.Convert(obj, in, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	if old == nil {
		return corevalidation.ValidateEndpointsCreate(in)
	}
	oin := &core.Endpoints{}
	if err := legacyscheme.Scheme.Convert(old, oin, nil); err != nil {
		return field.ErrorList{field.InternalError(nil, err)}
	}
	return corevalidation.ValidateEndpointsUpdate(in, oin)
}

// endpointsWarnings are kube's: an address written in a form a later
// release will refuse (leading zeros, IPv4-mapped IPv6), except on what
// the endpoints controller wrote.
func endpointsWarnings(obj, _ runtime.Object) []string {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok || ep.Labels[endpointsManagedBy] == endpointsController {
		return nil
	}
	var warnings []string
	for i, ss := range ep.Subsets {
		p := field.NewPath("subsets").Index(i)
		for j, a := range ss.Addresses {
			warnings = append(warnings, validation.GetWarningsForIP(p.Child("addresses").Index(j).Child("ip"), a.IP)...)
		}
		for j, a := range ss.NotReadyAddresses {
			warnings = append(warnings, validation.GetWarningsForIP(p.Child("notReadyAddresses").Index(j).Child("ip"), a.IP)...)
		}
	}
	return warnings
}

// The label kube's endpoints controller marks its Endpoints with.
const (
	endpointsManagedBy  = "endpoints.kubernetes.io/managed-by"
	endpointsController = "endpoint-controller"
)

// endpointsRow prints up to three "ip:port" pairs (bare IPs for subsets
// without ports), then " + N more...", or "<none>" without subsets — the
// cell kubectl shows.
func endpointsRow(obj runtime.Object) ([]interface{}, error) {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok || ep == nil {
		return nil, wrongType(obj, "*v1.Endpoints")
	}
	return []interface{}{ep.Name, endpointsCell(ep), Since(ep.CreationTimestamp.Time)}, nil
}

func endpointsCell(ep *corev1.Endpoints) string {
	if len(ep.Subsets) == 0 {
		return "<none>"
	}
	const shown = 3
	var list []string
	total := 0
	add := func(s string) {
		total++
		if len(list) < shown {
			list = append(list, s)
		}
	}
	for _, ss := range ep.Subsets {
		if len(ss.Ports) == 0 {
			for _, a := range ss.Addresses {
				add(a.IP)
			}
			continue
		}
		for _, port := range ss.Ports {
			for _, a := range ss.Addresses {
				add(net.JoinHostPort(a.IP, strconv.Itoa(int(port.Port))))
			}
		}
	}
	cell := strings.Join(list, ",")
	if total > shown {
		cell += fmt.Sprintf(" + %d more...", total-shown)
	}
	return cell
}
