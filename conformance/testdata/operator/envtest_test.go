package main

import (
	"context"
	"os"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// TestEnvtest is a controller author's test, unchanged: controller-runtime's
// envtest starts the control plane from KUBEBUILDER_ASSETS — here links to
// tabula named kube-apiserver and etcd — and installs the CRDs in
// GIZMO_CRDS; the operator's reconciler runs against it.
func TestEnvtest(t *testing.T) {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" || os.Getenv("GIZMO_CRDS") == "" {
		t.Fatal("KUBEBUILDER_ASSETS (kube-apiserver and etcd) and GIZMO_CRDS must be set")
	}
	env := &envtest.Environment{CRDDirectoryPaths: []string{os.Getenv("GIZMO_CRDS")}, ErrorIfCRDPathMissing: true}
	start := time.Now()
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("envtest started with CRDs installed in %v", time.Since(start))
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	// Names may repeat when the test runs again in one process (-count).
	skip := true
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
		Controller: config.Controller{SkipNameValidation: &skip}})
	if err != nil {
		t.Fatal(err)
	}
	if err := setupReconciler(mgr); err != nil {
		t.Fatal(err)
	}
	mctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mctx) }()
	t.Cleanup(func() {
		stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})

	c, err := client.New(cfg, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "envtest"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	g := newGizmo()
	g.SetNamespace(ns.Name)
	g.SetName("g1")
	if err := unstructured.SetNestedField(g.Object, "red", "spec", "color"); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, g); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the reconciled ConfigMap and status", func() (bool, string) {
		cm := &corev1.ConfigMap{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: "g1-config"}, cm); err != nil {
			return false, err.Error()
		}
		got := newGizmo()
		if err := c.Get(ctx, client.ObjectKeyFromObject(g), got); err != nil {
			return false, err.Error()
		}
		phase, _, _ := unstructured.NestedString(got.Object, "status", "phase")
		return cm.Data["color"] == "red" && phase == "Ready", "color " + cm.Data["color"] + ", phase " + phase
	})

	// A user envtest adds gets a client certificate of the CA envtest gave
	// the server (--client-ca-file), and only what RBAC grants.
	alice, err := env.AddUser(envtest.User{Name: "alice"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := client.New(alice.Config(), client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := ac.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(ns.Name)); !apierrors.IsForbidden(err) {
		t.Errorf("alice lists ConfigMaps: %v; want Forbidden", err)
	}

	// Service account tokens are signed with the key envtest wrote
	// (--service-account-signing-key-file) and authenticate.
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the namespace's default ServiceAccount", func() (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, ""
	})
	tr, err := cs.CoreV1().ServiceAccounts(ns.Name).CreateToken(ctx, "default", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	saCfg := rest.AnonymousClientConfig(cfg)
	saCfg.BearerToken = tr.Status.Token
	sacs, err := kubernetes.NewForConfig(saCfg)
	if err != nil {
		t.Fatal(err)
	}
	review, err := sacs.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := "system:serviceaccount:envtest:default"; review.Status.UserInfo.Username != want {
		t.Errorf("the token authenticates as %q; want %q", review.Status.UserInfo.Username, want)
	}

	// Namespaces are emptied and removed, as in a cluster (kube-apiserver
	// under envtest, without kube-controller-manager, leaves them
	// Terminating).
	if err := c.Delete(ctx, ns); err != nil {
		t.Fatal(err)
	}
	eventually(t, ctx, "the namespace gone", func() (bool, string) {
		err := c.Get(ctx, client.ObjectKeyFromObject(ns), &corev1.Namespace{})
		return apierrors.IsNotFound(err), "get: " + errString(err)
	})
}

// eventually polls cond until it holds or ctx ends.
func eventually(t *testing.T, ctx context.Context, what string, cond func() (bool, string)) {
	t.Helper()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, detail := cond()
		if ok {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not reached: %s", what, detail)
		case <-tick.C:
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "found"
	}
	return err.Error()
}
