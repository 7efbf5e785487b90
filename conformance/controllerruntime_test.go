package conformance

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// The operator in testdata/operator is its own module: controller-runtime
// and the client-go it pins are built as an operator author would build
// them, without touching Tabula's dependencies.
var operatorBin suiteArtifact

func operatorBinary() (string, error) {
	return operatorBin.get(func(dir string) (string, error) {
		src, err := filepath.Abs(filepath.Join("testdata", "operator"))
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, "gizmo-operator")
		if _, err := goOutside(src, nil, "build", "-o", out, "."); err != nil {
			return "", err
		}
		return out, nil
	})
}

// gizmoCRD is the operator's CRD: the gadgets fixture renamed.
func gizmoCRD(t *testing.T) string {
	return strings.NewReplacer("gadgets", "gizmos", "gadget", "gizmo", "Gadget", "Gizmo", "[gdt]", "[gzm]", "conformance.tabula.test", "operator.tabula.test").
		Replace(mustRead(t, crdFixture("gadgets.yaml")))
}

// TestEnvtest runs the operator's own envtest test (testdata/operator,
// TestEnvtest), unchanged controller-runtime envtest as an operator's
// author runs it, with KUBEBUILDER_ASSETS holding links to tabula named
// kube-apiserver and etcd: envtest starts Tabula in kube-apiserver's
// place with kube-apiserver's flags, installs the CRD, and the
// reconciler, users, service account tokens and namespace deletion work
// against it.
func TestEnvtest(t *testing.T) {
	bin, err := tabulaBinary()
	if err != nil {
		t.Fatal(err)
	}
	assets, crds := t.TempDir(), t.TempDir()
	for _, name := range []string{"kube-apiserver", "etcd"} {
		if err := os.Symlink(bin, filepath.Join(assets, name)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(crds, "gizmos.yaml"), []byte(gizmoCRD(t)), 0o600); err != nil {
		t.Fatal(err)
	}
	src, err := filepath.Abs(filepath.Join("testdata", "operator"))
	if err != nil {
		t.Fatal(err)
	}
	out, err := goOutside(src, []string{"KUBEBUILDER_ASSETS=" + assets, "GIZMO_CRDS=" + crds},
		"test", "-run", "^TestEnvtest$", "-count=1", "-v", ".")
	t.Logf("%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "--- PASS: TestEnvtest") {
		t.Fatal("the operator's TestEnvtest did not pass")
	}
}

// TestControllerRuntime runs a controller-runtime manager against each
// target: it wins leader election on a Lease, reconciles a custom
// resource into an owned ConfigMap and writes the resource's status; the
// ConfigMap is garbage-collected with its owner; its controller-runtime
// webhook server defaults and validates Gizmos for the server.
func TestControllerRuntime(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "reconcile a custom resource", func(t *testing.T) {
			bin, err := operatorBinary()
			if err != nil {
				t.Fatal(err)
			}
			ctx := testContext(t, 3*waitDeadline)
			dyn, err := dynamic.NewForConfig(tg.restConfig())
			if err != nil {
				t.Fatal(err)
			}
			cs := tg.clientset(t)
			crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
			var crd map[string]interface{}
			if err := yaml.Unmarshal([]byte(gizmoCRD(t)), &crd); err != nil {
				t.Fatal(err)
			}
			if _, err := dyn.Resource(crdGVR).Create(ctx, &unstructured.Unstructured{Object: crd}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = dyn.Resource(crdGVR).Delete(context.Background(), "gizmos.operator.tabula.test", metav1.DeleteOptions{})
			})
			gvr := schema.GroupVersionResource{Group: "operator.tabula.test", Version: "v1", Resource: "gizmos"}
			ns := newNamespace(t, tg)
			waitFor(t, "gizmos served", waitDeadline, func() (bool, string) {
				_, err := dyn.Resource(gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
				return err == nil, fmt.Sprint(err)
			})

			// The operator also serves admission webhooks for Gizmos with
			// controller-runtime's webhook server.
			certDir := t.TempDir()
			cert, caPEM := selfSignedCert(t, nil, []net.IP{net.ParseIP("127.0.0.1")})
			writeServingCert(t, certDir, cert)
			port, err := freePort()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+tg.Kubeconfig, "WATCH_NAMESPACE="+ns,
				"WEBHOOK_CERT_DIR="+certDir, "WEBHOOK_PORT="+strconv.Itoa(port))
			var logs strings.Builder
			cmd.Stdout, cmd.Stderr = &logs, &logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if t.Failed() {
					t.Logf("operator log:\n%s", logs.String())
				}
			})

			waitFor(t, "the operator's leader Lease", waitDeadline, func() (bool, string) {
				l, err := cs.CoordinationV1().Leases(ns).Get(ctx, "gizmo-operator", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return leaseHeld(l), fmt.Sprint(l.Spec.HolderIdentity)
			})

			g, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, &unstructured.Unstructured{Object: map[string]interface{}{
				"apiVersion": "operator.tabula.test/v1", "kind": "Gizmo",
				"metadata": map[string]interface{}{"name": "g1"}, "spec": map[string]interface{}{"color": "red"},
			}}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			waitFor(t, "status Ready and the owned ConfigMap", waitDeadline, func() (bool, string) {
				cur, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "g1", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				phase, _, _ := unstructured.NestedString(cur.Object, "status", "phase")
				cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "g1-config", metav1.GetOptions{})
				if err != nil {
					return false, "phase " + phase + ", " + err.Error()
				}
				owned := len(cm.OwnerReferences) == 1 && cm.OwnerReferences[0].UID == g.GetUID() && cm.OwnerReferences[0].Controller != nil && *cm.OwnerReferences[0].Controller
				return phase == "Ready" && owned && cm.Data["color"] == "red", fmt.Sprintf("phase %q, owners %v, data %v", phase, cm.OwnerReferences, cm.Data)
			})

			// A spec change is reconciled into the ConfigMap, and the
			// status records the generation seen.
			if _, err := dyn.Resource(gvr).Namespace(ns).Patch(ctx, "g1", "application/merge-patch+json", []byte(`{"spec":{"color":"blue"}}`), metav1.PatchOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the change reconciled", waitDeadline, func() (bool, string) {
				cur, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, "g1", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				seen, _, _ := unstructured.NestedInt64(cur.Object, "status", "observedGeneration")
				cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "g1-config", metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				return seen == cur.GetGeneration() && cm.Data["color"] == "blue", fmt.Sprintf("observedGeneration %d of %d, color %q", seen, cur.GetGeneration(), cm.Data["color"])
			})

			gizmoWebhooks(t, tg, ns, port, caPEM)

			// Deleting the owner collects the ConfigMap.
			if err := dyn.Resource(gvr).Namespace(ns).Delete(ctx, "g1", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the ConfigMap collected", waitDeadline, func() (bool, string) {
				_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "g1-config", metav1.GetOptions{})
				return apierrors.IsNotFound(err), fmt.Sprint(err)
			})
		})
	})
}

// gizmoWebhooks registers the operator's webhooks for Gizmos in ns: a
// Gizmo without a color is given blue by the mutating one, a green one is
// refused by the validating one, with kube-apiserver's words.
func gizmoWebhooks(t *testing.T, tg *target, ns string, port int, ca []byte) {
	ctx := context.Background()
	cs := tg.clientset(t)
	url := func(path string) *string { return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", port, path)) }
	rules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"operator.tabula.test"}, APIVersions: []string{"v1"}, Resources: []string{"gizmos"}}}}
	inNS := &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	m := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-gizmo"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{Name: "default.gizmo.tabula.test", Rules: rules, NamespaceSelector: inNS,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/default-gizmo"), CABundle: ca},
			SideEffects:  none, AdmissionReviewVersions: []string{"v1"}}}}
	v := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-gizmo"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "validate.gizmo.tabula.test", Rules: rules, NamespaceSelector: inNS,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: url("/validate-gizmo"), CABundle: ca},
			SideEffects:  none, AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), m.Name, metav1.DeleteOptions{})
	})
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), v.Name, metav1.DeleteOptions{})
	})
	dyn, err := dynamic.NewForConfig(tg.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	gizmos := dyn.Resource(schema.GroupVersionResource{Group: "operator.tabula.test", Version: "v1", Resource: "gizmos"}).Namespace(ns)
	gizmo := func(name string, spec map[string]interface{}) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "operator.tabula.test/v1", "kind": "Gizmo",
			"metadata": map[string]interface{}{"name": name}, "spec": spec}}
	}
	// The webhook server may still be starting: the first creates may
	// fail to reach it (failurePolicy Fail).
	var got *unstructured.Unstructured
	waitFor(t, "a Gizmo admitted by the operator's webhooks", waitDeadline, func() (bool, string) {
		got, err = gizmos.Create(ctx, gizmo("plain", map[string]interface{}{}), metav1.CreateOptions{})
		return err == nil, fmt.Sprint(err)
	})
	if c, _, _ := unstructured.NestedString(got.Object, "spec", "color"); c != "blue" {
		t.Errorf("the defaulting webhook's color: %q, want blue", c)
	}
	_, err = gizmos.Create(ctx, gizmo("green", map[string]interface{}{"color": "green"}), metav1.CreateOptions{})
	if want := `admission webhook "validate.gizmo.tabula.test" denied the request: green gizmos are not allowed`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a green Gizmo: %v, want %q", err, want)
	}
}

// writeServingCert writes cert as tls.crt and tls.key into dir.
func writeServingCert(t *testing.T, dir string, cert tls.Certificate) {
	t.Helper()
	var crt []byte
	for _, der := range cert.Certificate {
		crt = append(crt, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})...)
	}
	der, err := x509.MarshalPKCS8PrivateKey(cert.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.crt"), crt, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tls.key"), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}

func leaseHeld(l *coordinationv1.Lease) bool {
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && l.Spec.RenewTime != nil
}
