package controllers

import "slices"

// The controllers Tabula runs in place of kube-controller-manager's, by
// kube-controller-manager's names for them, so that a cluster running
// kcm's copies can switch Tabula's off with the same --controllers list
// it gives kcm ("*,-garbage-collector-controller", …). The controllers
// that are kube-apiserver's own (bootstrap policy, the kubernetes
// Service, CRD naming, Event expiry, service allocation repair) always
// run.
const (
	GarbageCollectorController           = "garbage-collector-controller"
	NamespaceController                  = "namespace-controller"
	ServiceAccountController             = "serviceaccount-controller"
	RootCACertificatePublisherController = "root-ca-certificate-publisher-controller"
	PVCProtectionController              = "persistentvolumeclaim-protection-controller"
	PVProtectionController               = "persistentvolume-protection-controller"
	ClusterRoleAggregationController     = "clusterrole-aggregation-controller"
	ResourceQuotaController              = "resourcequota-controller"
	VACProtectionController              = "volumeattributesclass-protection-controller"
	// ValidatingAdmissionPolicyStatusController writes policies' type checking.
	ValidatingAdmissionPolicyStatusController = "validatingadmissionpolicy-status-controller"
)

// enabledIn reads a kube-controller-manager --controllers list: a name
// turns a controller on, -name off, and * turns on every controller not
// named (all of Tabula's are on by default). An empty list is "*".
func enabledIn(list []string, name string) bool {
	if len(list) == 0 {
		return true
	}
	switch {
	case slices.Contains(list, "-"+name):
		return false
	case slices.Contains(list, name):
		return true
	}
	return slices.Contains(list, "*")
}

func (m *Manager) enabled(name string) bool { return enabledIn(m.cfg.Controllers, name) }
