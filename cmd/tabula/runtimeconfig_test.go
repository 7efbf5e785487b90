package main

import (
	"context"
	"slices"
	"strings"
	"testing"

	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
)

// TestRuntimeConfig: --runtime-config switches on the optional
// group-versions (by name, or api/beta and api/all) and refuses what
// Tabula cannot switch; admissionregistration.k8s.io/v1beta1 holds the
// MutatingAdmissionPolicy kinds only, served with their feature gate on,
// as on kube-apiserver.
func TestRuntimeConfig(t *testing.T) {
	v1beta1 := runtimeschema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1beta1"}
	for _, gate := range []bool{false, true} {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, genericfeatures.MutatingAdmissionPolicy, gate)
		for _, c := range []struct {
			entries []string
			on      bool
			err     string
		}{
			{entries: nil},
			{entries: []string{"admissionregistration.k8s.io/v1beta1=true"}, on: true},
			{entries: []string{"admissionregistration.k8s.io/v1beta1"}, on: true},
			{entries: []string{"api/beta=true"}, on: true},
			{entries: []string{"api/all=true", "admissionregistration.k8s.io/v1beta1=false"}},
			{entries: []string{"api/ga=true", "api/alpha=true"}},
			{entries: []string{"apps/v1=false"}, err: `"apps/v1" cannot be switched`},
			{entries: []string{"api/ga=false"}, err: `"api/ga" cannot be switched`},
			{entries: []string{"admissionregistration.k8s.io/v1beta1=maybe"}, err: `"maybe" is not a boolean`},
		} {
			got, err := runtimeConfig(c.entries)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("gate %v, %v: err %v, want %q", gate, c.entries, err, c.err)
				}
				continue
			}
			if err != nil {
				t.Errorf("gate %v, %v: %v", gate, c.entries, err)
				continue
			}
			if want := c.on && gate; slices.Contains(got, v1beta1) != want {
				t.Errorf("gate %v, %v: got %v, want v1beta1 served %v", gate, c.entries, got, want)
			}
		}
	}
}

// TestMutatingAdmissionPolicyGateNeedsAPI: the feature gate without its
// API stops start-up, saying what is missing.
func TestMutatingAdmissionPolicyGateNeedsAPI(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, genericfeatures.MutatingAdmissionPolicy, true)
	m := NewMain()
	if err := m.ParseFlags([]string{"--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	err := m.Run(context.Background())
	if err == nil {
		m.Close()
		t.Fatal("started with the MutatingAdmissionPolicy gate and without its API")
	}
	if want := "--runtime-config=admissionregistration.k8s.io/v1beta1=true"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not name %s", err, want)
	}
}
