package schema

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/resourceclaimspec"
	"k8s.io/kubernetes/pkg/apis/resource"
	"k8s.io/kubernetes/pkg/features"
)

// What kube's dynamic resource allocation strategies drop from a write:
// fields of features switched off (in kube 1.35 by default: consumable
// capacity, binding conditions, extended resources) that the object did
// not use before, and a claim's device statuses for devices it no longer
// has allocated. They receive kube's internal objects (old is nil on
// create).

func deviceClassDropDisabled(obj, old runtime.Object) {
	c := obj.(*resource.DeviceClass)
	o, _ := old.(*resource.DeviceClass)
	if !utilfeature.DefaultFeatureGate.Enabled(features.DRAExtendedResource) && (o == nil || o.Spec.ExtendedResourceName == nil) {
		c.Spec.ExtendedResourceName = nil
	}
}

func resourceClaimDropDisabled(obj, old runtime.Object) {
	var was *resource.ResourceClaimSpec
	if o, ok := old.(*resource.ResourceClaim); ok {
		was = &o.Spec
	}
	resourceclaimspec.DropDisabledFields(&obj.(*resource.ResourceClaim).Spec, was)
}

func resourceClaimTemplateDropDisabled(obj, old runtime.Object) {
	var was *resource.ResourceClaimSpec
	if o, ok := old.(*resource.ResourceClaimTemplate); ok {
		was = &o.Spec.Spec
	}
	resourceclaimspec.DropDisabledFields(&obj.(*resource.ResourceClaimTemplate).Spec.Spec, was)
}

// resourceClaimStatusPrepare is a claim's status write: the spec and
// metadata kept (keepSpec), switched-off status fields dropped, then the
// statuses of devices the write deallocated.
func resourceClaimStatusPrepare(obj, old runtime.Object) {
	keepSpec(obj, old)
	c, o := obj.(*resource.ResourceClaim), old.(*resource.ResourceClaim)
	gate := utilfeature.DefaultFeatureGate.Enabled
	results := func(c *resource.ResourceClaim) []resource.DeviceRequestAllocationResult {
		if c.Status.Allocation == nil {
			return nil
		}
		return c.Status.Allocation.Devices.Results
	}
	if !gate(features.DRAConsumableCapacity) && !consumableCapacityInUse(o) {
		for i := range results(c) {
			c.Status.Allocation.Devices.Results[i].ShareID = nil
			c.Status.Allocation.Devices.Results[i].ConsumedCapacity = nil
		}
		for i := range c.Status.Devices {
			c.Status.Devices[i].ShareID = nil
		}
	}
	bindingInUse := false
	for _, r := range results(o) {
		bindingInUse = bindingInUse || r.BindingConditions != nil || r.BindingFailureConditions != nil
	}
	if !gate(features.DRADeviceBindingConditions) && !bindingInUse {
		for i := range results(c) {
			c.Status.Allocation.Devices.Results[i].BindingConditions = nil
			c.Status.Allocation.Devices.Results[i].BindingFailureConditions = nil
		}
	}
	if !gate(features.DRAResourceClaimDeviceStatus) && len(o.Status.Devices) == 0 {
		c.Status.Devices = nil
		return
	}
	// A device (with its share) allocated before and not now has no
	// status left: clients that deallocate need not know of statuses.
	key := func(driver, pool, device string, share *string) string {
		s := ""
		if share != nil {
			s = *share
		}
		return driver + "/" + pool + "/" + device + "/" + s
	}
	resultKey := func(r resource.DeviceRequestAllocationResult) string {
		var share *string
		if r.ShareID != nil {
			s := string(*r.ShareID)
			share = &s
		}
		return key(r.Driver, r.Pool, r.Device, share)
	}
	gone := map[string]bool{}
	for _, r := range results(o) {
		gone[resultKey(r)] = true
	}
	for _, r := range results(c) {
		delete(gone, resultKey(r))
	}
	kept := c.Status.Devices[:0]
	for _, d := range c.Status.Devices {
		if !gone[key(d.Driver, d.Pool, d.Device, d.ShareID)] {
			kept = append(kept, d)
		}
	}
	c.Status.Devices = kept
	if len(c.Status.Devices) == 0 {
		c.Status.Devices = nil
	}
}

// consumableCapacityInUse: the claim asked for or was given capacity
// shares.
func consumableCapacityInUse(c *resource.ResourceClaim) bool {
	if resourceclaimspec.DRAConsumableCapacityFeatureInUse(&c.Spec) {
		return true
	}
	if c.Status.Allocation != nil {
		for _, r := range c.Status.Allocation.Devices.Results {
			if r.ShareID != nil || r.ConsumedCapacity != nil {
				return true
			}
		}
	}
	for _, d := range c.Status.Devices {
		if d.ShareID != nil {
			return true
		}
	}
	return false
}

// resourceSliceDropDisabled drops a slice's fields of switched-off
// features it did not use before: device taints, partitionable devices
// (shared counters, per-device node selection), binding conditions,
// consumable capacity.
func resourceSliceDropDisabled(obj, old runtime.Object) {
	s := obj.(*resource.ResourceSlice)
	o, _ := old.(*resource.ResourceSlice)
	var was []resource.Device
	if o != nil {
		was = o.Spec.Devices
	}
	anyDevice := func(f func(d resource.Device) bool) bool {
		for _, d := range was {
			if f(d) {
				return true
			}
		}
		return false
	}
	gate := utilfeature.DefaultFeatureGate.Enabled
	if !gate(features.DRADeviceTaints) && !anyDevice(func(d resource.Device) bool { return len(d.Taints) > 0 }) {
		for i := range s.Spec.Devices {
			s.Spec.Devices[i].Taints = nil
		}
	}
	partitioned := o != nil && (len(o.Spec.SharedCounters) > 0 || o.Spec.PerDeviceNodeSelection != nil) ||
		anyDevice(func(d resource.Device) bool {
			return len(d.ConsumesCounters) > 0 || d.NodeName != nil || d.NodeSelector != nil || d.AllNodes != nil
		})
	if !gate(features.DRAPartitionableDevices) && !partitioned {
		s.Spec.SharedCounters, s.Spec.PerDeviceNodeSelection = nil, nil
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			d.ConsumesCounters, d.NodeName, d.NodeSelector, d.AllNodes = nil, nil, nil, nil
		}
	}
	binding := anyDevice(func(d resource.Device) bool {
		return len(d.BindingConditions) > 0 || len(d.BindingFailureConditions) > 0 || d.BindsToNode != nil
	})
	if !(gate(features.DRADeviceBindingConditions) && gate(features.DRAResourceClaimDeviceStatus)) && !binding {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			d.BindingConditions, d.BindingFailureConditions, d.BindsToNode = nil, nil, nil
		}
	}
	consumable := anyDevice(func(d resource.Device) bool {
		if d.AllowMultipleAllocations != nil {
			return true
		}
		for _, c := range d.Capacity {
			if c.RequestPolicy != nil {
				return true
			}
		}
		return false
	})
	if !gate(features.DRAConsumableCapacity) && !consumable {
		for i := range s.Spec.Devices {
			d := &s.Spec.Devices[i]
			d.AllowMultipleAllocations = nil
			for name, c := range d.Capacity {
				c.RequestPolicy = nil
				d.Capacity[name] = c
			}
		}
	}
}

// resourceSliceWarnings are kube's on a slice's create and update.
func resourceSliceWarnings(obj, _ runtime.Object) []string {
	s := obj.(*resource.ResourceSlice)
	if strings.ToLower(s.Spec.Driver) != s.Spec.Driver {
		return []string{fmt.Sprintf("spec.driver: driver names should be lowercase; %q contains uppercase characters", s.Spec.Driver)}
	}
	return nil
}
