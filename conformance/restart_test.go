package conformance

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestRestart stops Tabula with SIGTERM and starts it again on the same
// database and data directory: it must exit 0 promptly, and come back with
// the same objects (uid and resourceVersion unchanged), the same CA and
// credentials (the old kubeconfig still works), and an event log that
// continues where it stopped.
//
// It needs servers of its own, so against an external kubeconfig it has
// nothing to restart and records n/a.
func TestRestart(t *testing.T) {
	if !ownServerOnly(t, "the suite does not own that server, so it cannot restart it") {
		return
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			recordOutcome(t, scenarioRow(t, ""), b.name)
			testRestart(t, b)
		})
	}
}

// objectID is what must survive a restart unchanged.
type objectID struct {
	UID             types.UID
	ResourceVersion string
}

func testRestart(t *testing.T, b backend) {
	dir := t.TempDir()
	db := b.database(t, dir)
	opts := serveOptions{DB: db, DataDir: filepath.Join(dir, "data")}
	first, err := startTabula(t, opts)
	if err != nil {
		t.Fatal(err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = first.Stop(stopDeadline)
		}
	})
	kubeconfig, err := os.ReadFile(first.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	// Keep a copy of the first kubeconfig where the server does not write.
	oldKubeconfig := filepath.Join(dir, "kubeconfig.before-restart")
	if err := os.WriteFile(oldKubeconfig, kubeconfig, 0o600); err != nil {
		t.Fatal(err)
	}
	tg, err := loadTarget(b.name+"-restart", oldKubeconfig, first)
	if err != nil {
		t.Fatal(err)
	}
	cs := tg.clientset(t)
	ctx := testContext(t, 3*time.Minute)

	const ns = "restart"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Data: map[string][]byte{"pw": []byte("x")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoordinationV1().Leases(ns).Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: stringPtr("me")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := snapshotObjects(t, ctx, cs, ns)
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listRV := list.ResourceVersion
	if rss, err := first.RSS(); err == nil {
		t.Logf("RSS before the restart: %s", formatBytes(rss))
	}

	began := time.Now()
	stopped = true
	if err := first.Stop(stopDeadline); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	t.Logf("exited 0 %v after SIGTERM", time.Since(began).Round(time.Millisecond))

	// Same port, so that the kubeconfig written before is valid as is.
	opts.Listen = first.Options.Listen
	second, err := startTabula(t, opts)
	if err != nil {
		t.Fatalf("restarting: %v", err)
	}
	t.Cleanup(func() {
		if err := second.Stop(stopDeadline); err != nil {
			t.Errorf("stopping the restarted server: %v", err)
		}
	})
	t.Logf("restarted and ready in %v", second.StartupTime.Round(time.Millisecond))

	rewritten, err := os.ReadFile(second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	oldCfg, err := clientcmd.Load(kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	newCfg, err := clientcmd.Load(rewritten)
	if err != nil {
		t.Fatal(err)
	}
	for name, cluster := range oldCfg.Clusters {
		if nc, ok := newCfg.Clusters[name]; !ok || !bytes.Equal(nc.CertificateAuthorityData, cluster.CertificateAuthorityData) {
			t.Errorf("cluster %q: the restarted server's kubeconfig has another CA (or none); want the CA reused", name)
		}
	}

	// The old kubeconfig, untouched, must reach the restarted server.
	cs = tg.clientset(t)
	after := snapshotObjects(t, ctx, cs, ns)
	for key, was := range before {
		if now, ok := after[key]; !ok {
			t.Errorf("%s is gone after the restart", key)
		} else if now != was {
			t.Errorf("%s: uid, resourceVersion = %s, %s after the restart; want %s, %s", key, now.UID, now.ResourceVersion, was.UID, was.ResourceVersion)
		}
	}

	// The event log continues: a new write gets a larger resourceVersion,
	// and a watch from a resourceVersion listed before the restart sees it.
	created, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "after-restart"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create after the restart: %v", err)
	}
	newRV, err1 := strconv.ParseUint(created.ResourceVersion, 10, 64)
	oldRV, err2 := strconv.ParseUint(listRV, 10, 64)
	if err1 != nil || err2 != nil || newRV <= oldRV {
		t.Errorf("resourceVersion after the restart = %q, list before it = %q; want a larger integer", created.ResourceVersion, listRV)
	}
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		ResourceVersion: listRV,
		// kube-root-ca.crt may be created after the list; it is not the point.
		FieldSelector: "metadata.name=after-restart",
	})
	if err != nil {
		t.Fatalf("watch from resourceVersion %s (listed before the restart): %v", listRV, err)
	}
	defer w.Stop()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("the watch closed without an event")
		}
		cm, isCM := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Added || !isCM || cm.Name != "after-restart" {
			t.Errorf("first event from the pre-restart resourceVersion: %s %v, want ADDED after-restart", ev.Type, ev.Object)
		}
	case <-time.After(waitDeadline):
		t.Errorf("no event within %v from a watch at the pre-restart resourceVersion", waitDeadline)
	}
}

func snapshotObjects(t *testing.T, ctx context.Context, cs *kubernetes.Clientset, ns string) map[string]objectID {
	t.Helper()
	out := map[string]objectID{}
	nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("namespace %s: %v", ns, err)
	}
	out["namespace/"+ns] = objectID{nsObj.UID, nsObj.ResourceVersion}
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "cm", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("configmap: %v", err)
	}
	out["configmap/cm"] = objectID{cm.UID, cm.ResourceVersion}
	s, err := cs.CoreV1().Secrets(ns).Get(ctx, "s", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("secret: %v", err)
	}
	out["secret/s"] = objectID{s.UID, s.ResourceVersion}
	l, err := cs.CoordinationV1().Leases(ns).Get(ctx, "l", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("lease: %v", err)
	}
	out["lease/l"] = objectID{l.UID, l.ResourceVersion}
	return out
}
