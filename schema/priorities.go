package schema

import "k8s.io/apimachinery/pkg/runtime/schema"

// Priority orders a group-version in discovery and is the spec of its
// local APIService: groups by Group (highest first, ties by name),
// versions within a group by Version (highest first, the preferred one).
type Priority struct {
	Group, Version int32
}

// priorities are kube-apiserver 1.35's, for the group-versions Tabula
// serves or will serve. A group-version without an entry sorts after
// these and gets no local APIService, as on kube-apiserver.
var priorities = map[schema.GroupVersion]Priority{
	{Group: "", Version: "v1"}:                                  {18000, 1},
	{Group: "apiregistration.k8s.io", Version: "v1"}:            {20001, 0},
	{Group: "apps", Version: "v1"}:                              {17800, 15},
	{Group: "events.k8s.io", Version: "v1"}:                     {17750, 15},
	{Group: "authentication.k8s.io", Version: "v1"}:             {17700, 15},
	{Group: "authorization.k8s.io", Version: "v1"}:              {17600, 15},
	{Group: "autoscaling", Version: "v1"}:                       {17500, 15},
	{Group: "autoscaling", Version: "v2"}:                       {17500, 30},
	{Group: "batch", Version: "v1"}:                             {17400, 15},
	{Group: "certificates.k8s.io", Version: "v1"}:               {17300, 15},
	{Group: "networking.k8s.io", Version: "v1"}:                 {17200, 15},
	{Group: "policy", Version: "v1"}:                            {17100, 15},
	{Group: "rbac.authorization.k8s.io", Version: "v1"}:         {17000, 15},
	{Group: "storage.k8s.io", Version: "v1"}:                    {16800, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1"}:      {16700, 15},
	{Group: "admissionregistration.k8s.io", Version: "v1beta1"}: {16700, 12},
	{Group: "apiextensions.k8s.io", Version: "v1"}:              {16700, 15},
	{Group: "scheduling.k8s.io", Version: "v1"}:                 {16600, 15},
	{Group: "coordination.k8s.io", Version: "v1"}:               {16500, 15},
	{Group: "node.k8s.io", Version: "v1"}:                       {16300, 15},
	{Group: "discovery.k8s.io", Version: "v1"}:                  {16200, 15},
	{Group: "resource.k8s.io", Version: "v1"}:                   {16200, 21},
	{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"}:      {16100, 21},
}

// PriorityOf returns gv's discovery priority; ok is false for a
// group-version kube-apiserver has no entry for.
func PriorityOf(gv schema.GroupVersion) (p Priority, ok bool) {
	p, ok = priorities[gv]
	return p, ok
}

// CRDGroupPriority is the group priority kube's crdregistration
// controller gives a CRD's group (its APIServices' GroupPriorityMinimum).
const CRDGroupPriority = 1000

// CRDVersionPriority is the version priority it gives each of a CRD's
// versions (their APIServices' VersionPriority).
const CRDVersionPriority = 100

// VersionPriorityOf is gv's version priority as its APIService has it:
// kube-apiserver's for a built-in group-version, a CRD's otherwise.
func VersionPriorityOf(gv schema.GroupVersion) int32 {
	if p, ok := priorities[gv]; ok {
		return p.Version
	}
	return CRDVersionPriority
}

// GroupPriorityOf is a group's discovery priority (that of any of its
// versions kube-apiserver has an entry for).
func GroupPriorityOf(group string) (int32, bool) {
	for gv, p := range priorities {
		if gv.Group == group {
			return p.Group, true
		}
	}
	return 0, false
}
