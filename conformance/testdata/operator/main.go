// Command operator is a small controller-runtime operator the conformance
// suite runs against Tabula: it elects a leader on a Lease, reconciles
// Gizmos (a custom resource, read unstructured) into an owned ConfigMap,
// and writes each Gizmo's status through the status subresource.
//
// With WEBHOOK_CERT_DIR (tls.crt, tls.key) and WEBHOOK_PORT it also
// serves admission webhooks for Gizmos through controller-runtime's
// webhook server: /default-gizmo gives a Gizmo without a color "blue",
// /validate-gizmo refuses a green one.
//
// Flags come from the environment: KUBECONFIG, and WATCH_NAMESPACE, the
// one namespace it watches and holds its Lease in.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"

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
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
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
	opts := ctrl.Options{
		LeaderElection:          true,
		LeaderElectionID:        "gizmo-operator",
		LeaderElectionNamespace: ns,
		Cache:                   cache.Options{DefaultNamespaces: map[string]cache.Config{ns: {}}},
		Metrics:                 metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:  "0",
	}
	if dir := os.Getenv("WEBHOOK_CERT_DIR"); dir != "" {
		port, err := strconv.Atoi(os.Getenv("WEBHOOK_PORT"))
		if err != nil {
			fmt.Fprintln(os.Stderr, "WEBHOOK_PORT:", err)
			os.Exit(1)
		}
		opts.WebhookServer = webhook.NewServer(webhook.Options{Host: "127.0.0.1", Port: port, CertDir: dir})
	}
	mgr, err := ctrl.NewManager(ctrl.GetConfigOrDie(), opts)
	if err != nil {
		fmt.Fprintln(os.Stderr, "manager:", err)
		os.Exit(1)
	}
	if err := setupReconciler(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "controller:", err)
		os.Exit(1)
	}
	if os.Getenv("WEBHOOK_CERT_DIR") != "" {
		srv := mgr.GetWebhookServer()
		srv.Register("/default-gizmo", &webhook.Admission{Handler: admission.HandlerFunc(defaultGizmo)})
		srv.Register("/validate-gizmo", &webhook.Admission{Handler: admission.HandlerFunc(validateGizmo)})
	}
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		fmt.Fprintln(os.Stderr, "manager stopped:", err)
		os.Exit(1)
	}
}

// setupReconciler registers the Gizmo controller with mgr: each Gizmo gets
// a ConfigMap it owns with its color, and status.phase Ready.
func setupReconciler(mgr ctrl.Manager) error {
	c := mgr.GetClient()
	return ctrl.NewControllerManagedBy(mgr).
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
}

// defaultGizmo answers with the patch that gives a Gizmo without a color
// the color blue.
func defaultGizmo(_ context.Context, req admission.Request) admission.Response {
	g := newGizmo()
	if err := json.Unmarshal(req.Object.Raw, &g.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if c, _, _ := unstructured.NestedString(g.Object, "spec", "color"); c != "" {
		return admission.Allowed("has a color")
	}
	if err := unstructured.SetNestedField(g.Object, "blue", "spec", "color"); err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	out, err := json.Marshal(g.Object)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	return admission.PatchResponseFromRaw(req.Object.Raw, out)
}

// validateGizmo refuses green Gizmos.
func validateGizmo(_ context.Context, req admission.Request) admission.Response {
	g := newGizmo()
	if err := json.Unmarshal(req.Object.Raw, &g.Object); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	if c, _, _ := unstructured.NestedString(g.Object, "spec", "color"); c == "green" {
		return admission.Denied("green gizmos are not allowed")
	}
	return admission.Allowed("")
}
