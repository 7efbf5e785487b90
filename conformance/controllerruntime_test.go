package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
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

// TestControllerRuntime runs a controller-runtime manager against each
// target: it wins leader election on a Lease, reconciles a custom
// resource into an owned ConfigMap and writes the resource's status; the
// ConfigMap is garbage-collected with its owner.
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
			if err := yaml.Unmarshal([]byte(strings.NewReplacer("gadgets", "gizmos", "gadget", "gizmo", "Gadget", "Gizmo", "[gdt]", "[gzm]", "conformance.tabula.test", "operator.tabula.test").
				Replace(mustRead(t, crdFixture("gadgets.yaml")))), &crd); err != nil {
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

			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), "KUBECONFIG="+tg.Kubeconfig, "WATCH_NAMESPACE="+ns)
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

func leaseHeld(l *coordinationv1.Lease) bool {
	return l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" && l.Spec.RenewTime != nil
}
