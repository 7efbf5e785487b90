package conformance

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// helmModule is the Helm 3 the suite builds from the Go module proxy: the
// newest 3.x release when it was pinned.
const helmModule = "helm.sh/helm/v3/cmd/helm@v3.22.0"

var helmBin suiteArtifact

// helmBinary builds Helm once per test binary; the Go build cache makes
// later runs a link.
func helmBinary() (string, error) {
	return helmBin.get(func(dir string) (string, error) {
		bin := filepath.Join(dir, "helm-bin")
		if _, err := goOutside(dir, []string{"GOBIN=" + bin}, "install", helmModule); err != nil {
			return "", err
		}
		return filepath.Join(bin, "helm"), nil
	})
}

// helm runs the Helm binary against one target, with configuration,
// cache and data directories of its own.
type helm struct {
	bin, home, kubeconfig string
}

func (h *helm) run(t *testing.T, args ...string) (stdout string, code int, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandDeadline)
	defer cancel()
	cmd := exec.CommandContext(ctx, h.bin, args...)
	cmd.Dir = h.home
	cmd.Env = append(os.Environ(), "HOME="+h.home, "KUBECONFIG="+h.kubeconfig,
		"HELM_CONFIG_HOME="+filepath.Join(h.home, "config"), "HELM_CACHE_HOME="+filepath.Join(h.home, "cache"),
		"HELM_DATA_HOME="+filepath.Join(h.home, "data"))
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("helm %s: no exit within %v\nstderr: %s", strings.Join(args, " "), commandDeadline, errb.String())
	}
	if exit, ok := err.(*exec.ExitError); ok {
		return out.String(), exit.ExitCode(), errb.String()
	} else if err != nil {
		t.Fatalf("running helm %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), 0, errb.String()
}

func (h *helm) ok(t *testing.T, args ...string) string {
	t.Helper()
	out, code, stderr := h.run(t, args...)
	if code != 0 {
		t.Fatalf("helm %s: exit code %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), code, out, stderr)
	}
	return out
}

// TestHelm installs, upgrades, rolls back and uninstalls the chart `helm
// create` makes, with Helm 3 as users run it, on every database: each step
// leaves the objects and the release records Helm expects.
func TestHelm(t *testing.T) {
	bin, err := helmBinary()
	if err != nil {
		t.Fatal(err)
	}
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "install upgrade rollback uninstall", func(t *testing.T) {
			helmLifecycle(t, &helm{bin: bin, home: t.TempDir(), kubeconfig: tg.Kubeconfig}, tg)
		})
	})
}

func helmLifecycle(t *testing.T, h *helm, tg *target) {
	ctx := testContext(t, waitDeadline)
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	h.ok(t, "create", "demo")

	out := h.ok(t, "install", "demo", "./demo", "-n", ns)
	if !strings.Contains(out, "STATUS: deployed") || !strings.Contains(out, "REVISION: 1") {
		t.Errorf("helm install printed:\n%s", out)
	}
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the chart's Deployment: %v", err)
	}
	if *d.Spec.Replicas != 1 || d.Labels["app.kubernetes.io/managed-by"] != "Helm" || d.Annotations["meta.helm.sh/release-name"] != "demo" {
		t.Errorf("installed Deployment: replicas %d labels %v annotations %v", *d.Spec.Replicas, d.Labels, d.Annotations)
	}
	if _, err := cs.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's Service: %v", err)
	}
	if _, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil {
		t.Errorf("the chart's ServiceAccount: %v", err)
	}
	expectReleases(t, tg, ns, map[string]string{"1": "deployed"})

	out = h.ok(t, "upgrade", "demo", "./demo", "-n", ns, "--set", "replicaCount=3", "--set", "ingress.enabled=true")
	if !strings.Contains(out, "has been upgraded") || !strings.Contains(out, "REVISION: 2") {
		t.Errorf("helm upgrade printed:\n%s", out)
	}
	if d, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 3 {
		t.Errorf("upgraded Deployment: %v %v; want 3 replicas", d.Spec.Replicas, err)
	}
	if _, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil {
		t.Errorf("the upgrade's Ingress: %v", err)
	}
	expectReleases(t, tg, ns, map[string]string{"1": "superseded", "2": "deployed"})
	if out := h.ok(t, "history", "demo", "-n", ns); !strings.Contains(out, "Install complete") || !strings.Contains(out, "Upgrade complete") {
		t.Errorf("helm history printed:\n%s", out)
	}

	// Rolling back applies revision 1 again: one replica, and the Ingress
	// it did not have is deleted.
	if out := h.ok(t, "rollback", "demo", "1", "-n", ns); !strings.Contains(out, "Rollback was a success") {
		t.Errorf("helm rollback printed:\n%s", out)
	}
	if d, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo", metav1.GetOptions{}); err != nil || *d.Spec.Replicas != 1 {
		t.Errorf("rolled-back Deployment: %v %v; want 1 replica", d.Spec.Replicas, err)
	}
	if _, err := cs.NetworkingV1().Ingresses(ns).Get(ctx, "demo", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("Ingress after rollback: %v; want NotFound", err)
	}
	expectReleases(t, tg, ns, map[string]string{"1": "superseded", "2": "superseded", "3": "deployed"})
	if out := h.ok(t, "list", "-n", ns); !strings.Contains(out, "demo") || !strings.Contains(out, "deployed") {
		t.Errorf("helm list printed:\n%s", out)
	}

	if out := h.ok(t, "uninstall", "demo", "-n", ns); !strings.Contains(out, `release "demo" uninstalled`) {
		t.Errorf("helm uninstall printed:\n%s", out)
	}
	for what, get := range map[string]func() error{
		"Deployment": func() error { _, err := cs.AppsV1().Deployments(ns).Get(ctx, "demo", metav1.GetOptions{}); return err },
		"Service":    func() error { _, err := cs.CoreV1().Services(ns).Get(ctx, "demo", metav1.GetOptions{}); return err },
		"ServiceAccount": func() error {
			_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "demo", metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("%s after uninstall: %v; want NotFound", what, err)
		}
	}
	expectReleases(t, tg, ns, map[string]string{})
}

// expectReleases checks Helm's release records, Secrets labelled
// owner=helm, by revision and status.
func expectReleases(t *testing.T, tg *target, ns string, want map[string]string) {
	t.Helper()
	list, err := tg.clientset(t).CoreV1().Secrets(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "owner=helm,name=demo"})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, s := range list.Items {
		if s.Type != "helm.sh/release.v1" {
			t.Errorf("release secret %s has type %q", s.Name, s.Type)
		}
		got[s.Labels["version"]] = s.Labels["status"]
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("release records (revision: status) %v; want %v", got, want)
	}
}
