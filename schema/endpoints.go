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

var endpointProtocols = []string{string(corev1.ProtocolSCTP), string(corev1.ProtocolTCP), string(corev1.ProtocolUDP)}

// validateEndpoints checks what kube-apiserver checks of a subset: each has
// an address, addresses are IPs, ports are in range with a known protocol,
// and port names are DNS labels, required and unique when there are several.
func validateEndpoints(obj, _ runtime.Object) field.ErrorList {
	ep, ok := obj.(*corev1.Endpoints)
	if !ok || ep == nil {
		return unexpectedType(obj, "*v1.Endpoints")
	}
	var errs field.ErrorList
	for i, ss := range ep.Subsets {
		p := field.NewPath("subsets").Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j, a := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(a, p.Child("addresses").Index(j))...)
		}
		for j, a := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(a, p.Child("notReadyAddresses").Index(j))...)
		}
		names := map[string]bool{}
		for j, port := range ss.Ports {
			pp := p.Child("ports").Index(j)
			if len(ss.Ports) > 1 && port.Name == "" {
				errs = append(errs, field.Required(pp.Child("name"), ""))
			} else if port.Name != "" {
				for _, msg := range validation.IsDNS1123Label(port.Name) {
					errs = append(errs, field.Invalid(pp.Child("name"), port.Name, msg))
				}
				if names[port.Name] {
					errs = append(errs, field.Duplicate(pp.Child("name"), port.Name))
				}
				names[port.Name] = true
			}
			for _, msg := range validation.IsValidPortNum(int(port.Port)) {
				errs = append(errs, field.Invalid(pp.Child("port"), port.Port, msg))
			}
			switch port.Protocol {
			case "":
				errs = append(errs, field.Required(pp.Child("protocol"), ""))
			case corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP:
			default:
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, endpointProtocols))
			}
		}
	}
	return errs
}

func validateEndpointAddress(a corev1.EndpointAddress, p *field.Path) field.ErrorList {
	if net.ParseIP(a.IP) == nil {
		return field.ErrorList{field.Invalid(p.Child("ip"), a.IP, "must be a valid IP address")}
	}
	return nil
}

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
