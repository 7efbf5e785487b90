package main

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// TestReplicasOnPostgres: two replicas on one PostgreSQL.
//   - A namespace deleted through one replica while the other admits an
//     object into it leaves nothing behind: its contents are deleted only
//     once every replica's admission has seen the deletion (kube's 5 s
//     namespace deletion grace), so the late object is refused or deleted
//     with the rest, not kept beyond the namespace.
//   - A replica that shuts down cleanly has left the kubernetes
//     Service's endpoints when Close returns (before the database closes).
func TestReplicasOnPostgres(t *testing.T) {
	db := dbtest.Postgres(t)
	start := func(ip string) (*Main, *kubernetes.Clientset) {
		m := NewMain()
		if err := m.ParseFlags([]string{"--db", db, "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--token", "s3cret",
			"--advertise-address", ip, "--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, cs
	}
	a, csA := start("192.0.2.1")
	t.Cleanup(func() { a.Close() })
	b, csB := start("192.0.2.2")
	closedB := false
	t.Cleanup(func() {
		if !closedB {
			b.Close()
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	endpoints := func() []string {
		ep, err := csA.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			return []string{err.Error()}
		}
		var ips []string
		for _, s := range ep.Subsets {
			for _, a := range s.Addresses {
				ips = append(ips, a.IP)
			}
		}
		slices.Sort(ips)
		return ips
	}
	waitFor := func(what string, ok func() bool) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !ok() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 30s", what)
			}
			<-time.After(50 * time.Millisecond) // polling with a deadline
		}
	}
	waitFor("both replicas in the kubernetes endpoints", func() bool { return slices.Equal(endpoints(), []string{"192.0.2.1", "192.0.2.2"}) })

	// Each trial: the namespace deleted through A, an object created in
	// it through B at once, then the namespace gone.
	const trials = 6
	var wg sync.WaitGroup
	errs := make(chan error, trials)
	for i := range trials {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ns := fmt.Sprintf("race-%d", i)
			if _, err := csA.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				errs <- err
				return
			}
			// B must know the namespace first, as a client writing into
			// it would.
			for {
				if _, err := csB.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "early"}}, metav1.CreateOptions{}); err == nil {
					break
				} else if ctx.Err() != nil {
					errs <- err
					return
				}
				<-time.After(20 * time.Millisecond) // B's namespace cache catching up
			}
			if err := csA.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
				errs <- err
				return
			}
			_, err := csB.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"}}, metav1.CreateOptions{})
			if err != nil && !apierrors.IsForbidden(err) {
				errs <- fmt.Errorf("%s: late create: %v; want 201 or NamespaceLifecycle's 403", ns, err)
				return
			}
			for {
				_, err := csA.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					break
				}
				if ctx.Err() != nil {
					errs <- fmt.Errorf("%s still there: %v", ns, err)
					return
				}
				<-time.After(100 * time.Millisecond) // the namespace controller's grace and passes
			}
			for _, cs := range []*kubernetes.Clientset{csA, csB} {
				l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				if err != nil || len(l.Items) != 0 {
					var names []string
					for _, c := range l.Items {
						names = append(names, c.Name)
					}
					errs <- fmt.Errorf("%s gone, its configmaps %v, %v; want none", ns, names, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	if err := b.Close(); err != nil {
		t.Errorf("close B: %v", err)
	}
	closedB = true
	if got := endpoints(); !slices.Equal(got, []string{"192.0.2.1"}) {
		t.Errorf("kubernetes endpoints once B closed: %v; want A's alone", got)
	}
}
