package registry

import (
	"fmt"
	"k8s.io/client-go/openapi"
	"slices"
	"strings"
)

// AdmissionConfig chooses the admission plugins as kube-apiserver's flags
// do: kube 1.35's default set, changed by --enable-admission-plugins and
// --disable-admission-plugins, configured by
// --admission-control-config-file.
type AdmissionConfig struct {
	Enable, Disable []string
	// ConfigFile is an AdmissionConfiguration (apiserver.config.k8s.io),
	// read by the plugins it names (the webhooks' kubeConfigFile).
	ConfigFile string
	// ClusterIPRouting calls a webhook Service at its cluster IP rather
	// than at a ready endpoint (ServiceResolver).
	ClusterIPRouting bool
	// OpenAPIV3 are the served OpenAPI documents (MutatingAdmissionPolicy
	// merges ApplyConfigurations with the types they describe).
	OpenAPIV3 openapi.Client
}

// admissionOrder is kube-apiserver 1.35's plugin order (its
// AllOrderedPlugins): whatever is enabled runs in this order, mutation
// before validation.
var admissionOrder = []string{
	"AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists",
	"LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount", "NodeRestriction",
	"TaintNodesByCondition", "AlwaysPullImages", "ImagePolicyWebhook", "PodSecurity",
	"PodNodeSelector", "Priority", "DefaultTolerationSeconds", "PodTolerationRestriction",
	"EventRateLimit", "ExtendedResourceToleration", "DefaultStorageClass",
	"StorageObjectInUseProtection", "OwnerReferencesPermissionEnforcement",
	"PersistentVolumeClaimResize", "RuntimeClass", "CertificateApproval", "CertificateSigning",
	"ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
	"DenyServiceExternalIPs", "PodTopologyLabels", "NodeDeclaredFeatureValidator",
	"MutatingAdmissionPolicy", "MutatingAdmissionWebhook", "ValidatingAdmissionPolicy",
	"ValidatingAdmissionWebhook", "ResourceQuota", "AlwaysDeny",
}

// admissionDefaults are the plugins kube-apiserver 1.35 enables unless
// told otherwise, and NodeRestriction: kube leaves it to the installer
// (kubeadm and every managed cluster turn it on), Tabula, which runs
// with the Node authorizer by default, turns it on itself.
var admissionDefaults = []string{
	"NamespaceLifecycle", "LimitRanger", "ServiceAccount", "NodeRestriction", "DefaultStorageClass",
	"PersistentVolumeClaimResize", "DefaultTolerationSeconds", "MutatingAdmissionWebhook",
	"ValidatingAdmissionWebhook", "ResourceQuota", "StorageObjectInUseProtection", "Priority",
	"TaintNodesByCondition", "RuntimeClass", "CertificateApproval", "CertificateSigning",
	"ClusterTrustBundleAttest", "CertificateSubjectRestriction", "DefaultIngressClass",
	"PodSecurity", "PodTopologyLabels", "MutatingAdmissionPolicy", "ValidatingAdmissionPolicy",
	"NodeDeclaredFeatureValidator",
}

// kubePlugins run as kube's own plugin packages in the chain.
var kubePlugins = map[string]bool{
	"NamespaceLifecycle": true, "ServiceAccount": true, "Priority": true, "DefaultTolerationSeconds": true,
	"LimitRanger": true, "NodeRestriction": true, "TaintNodesByCondition": true, "PodSecurity": true,
	"DefaultStorageClass": true, "StorageObjectInUseProtection": true, "PersistentVolumeClaimResize": true,
	"RuntimeClass": true, "CertificateApproval": true, "CertificateSigning": true, "ClusterTrustBundleAttest": true,
	"CertificateSubjectRestriction": true, "DefaultIngressClass": true, "PodTopologyLabels": true,
	"MutatingAdmissionPolicy": true, "MutatingAdmissionWebhook": true, "ValidatingAdmissionPolicy": true, "ValidatingAdmissionWebhook": true,
	"ResourceQuota": true,
}

// enabled is the plugins that run, in kube's order. A name kube does not
// know is refused with kube-apiserver's words; one kube knows that
// Tabula does not run yet is refused when asked for by name, and left
// out of the defaults (see the README's admission section).
func (c AdmissionConfig) enabled() ([]string, error) {
	var errs []string
	for _, n := range c.Enable {
		if !slices.Contains(admissionOrder, n) {
			errs = append(errs, fmt.Sprintf("enable-admission-plugins plugin %q is unknown", n))
		} else if !kubePlugins[n] {
			errs = append(errs, fmt.Sprintf("enable-admission-plugins plugin %q is not served by Tabula yet", n))
		}
	}
	for _, n := range c.Disable {
		if !slices.Contains(admissionOrder, n) {
			errs = append(errs, fmt.Sprintf("disable-admission-plugins plugin %q is unknown", n))
		}
	}
	var both []string
	for _, n := range c.Enable {
		if slices.Contains(c.Disable, n) && !slices.Contains(both, n) {
			both = append(both, n)
		}
	}
	if len(both) > 0 {
		slices.Sort(both)
		errs = append(errs, fmt.Sprintf("[%s] in enable-admission-plugins and disable-admission-plugins overlapped", strings.Join(both, " ")))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, ", "))
	}
	var out []string
	for _, n := range admissionOrder {
		on := slices.Contains(admissionDefaults, n) || slices.Contains(c.Enable, n)
		if on && !slices.Contains(c.Disable, n) && kubePlugins[n] {
			out = append(out, n)
		}
	}
	return out, nil
}
