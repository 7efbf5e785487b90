// Command operator is a small controller-runtime operator the conformance
// suite runs against Tabula: it elects a leader on a Lease, reconciles
// Gizmos (a custom resource, read unstructured) into an owned ConfigMap,
// and writes each Gizmo's status through the status subresource.
//
// Flags come from the environment: KUBECONFIG, and WATCH_NAMESPACE, the
// one namespace it watches and holds its Lease in.
package main

import (
	"context"
	"fmt"
	"os"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

var gizmoKind = schema.GroupVersionKind{Group: "operator.tabula.test", Version: "v1", Kind: "Gizmo"}

func newGizmo() *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gizmoKind)
	return u
}

func main() {
	ctrl.SetLogger(zap.New())
	ns := os.Getenv("WATCH_NAMESPACE")
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        "gizmo-operator",
		LeaderElectionNamespace: ns,
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
	c := mgr.GetClient()
	err = ctrl.NewControllerManagedBy(mgr).
		For(newGizmo()).
		Owns(&corev1.ConfigMap{}).
		Complete(reconcile.Func(func(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
			g := newGizmo()
			if err := c.Get(ctx, req.NamespacedName, g); err != nil {
				return reconcile.Result{}, client.IgnoreNotFound(err)
			}
			color, _, _ := unstructured.NestedString(g.Object, "spec", "color")
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: req.Name + "-config", Namespace: req.Namespace}}
			if _, err := controllerutil.CreateOrUpdate(ctx, c, cm, func() error {
				cm.Data = map[string]string{"color": color}
				return controllerutil.SetControllerReference(g, cm, mgr.GetScheme())
			}); err != nil {
				return reconcile.Result{}, err
			}
			before := g.DeepCopy()
			if err := unstructured.SetNestedField(g.Object, "Ready", "status", "phase"); err != nil {
				return reconcile.Result{}, err
			}
			if err := unstructured.SetNestedField(g.Object, g.GetGeneration(), "status", "observedGeneration"); err != nil {
				return reconcile.Result{}, err
			}
			return reconcile.Result{}, c.Status().Patch(ctx, g, client.MergeFrom(before))
		}))
	if err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "manager stopped:", err)
		os.Exit(1)
	}
}
