package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestBackupAndRestore: tabula backup copies a serving SQLite database
// under a write load; restored, it starts and serves every write
// acknowledged before the backup began, and resourceVersions the lost
// history issued answer 410 Gone instead of meaning other states.
func TestBackupAndRestore(t *testing.T) {
	dir := t.TempDir()
	serve := func() (*Main, *kubernetes.Clientset) {
		m := NewMain()
		if err := m.ParseFlags([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = -1, 0
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, cs
	}
	m, cs := serve()
	ctx := context.Background()

	// A write load: acknowledged creates are recorded in order.
	var mu sync.Mutex
	var acked []string
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("w%d-%d", w, i)
				if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"i": strconv.Itoa(i)}}, metav1.CreateOptions{}); err == nil {
					mu.Lock()
					acked = append(acked, name)
					mu.Unlock()
				}
			}
		}()
	}
	waitAcked := func(n int) {
		deadline := time.Now().Add(30 * time.Second)
		for {
			mu.Lock()
			got := len(acked)
			mu.Unlock()
			if got >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("only %d writes acknowledged", got)
			}
			<-time.After(10 * time.Millisecond)
		}
	}
	waitAcked(50)
	mu.Lock()
	before := append([]string(nil), acked...)
	mu.Unlock()
	backup := filepath.Join(t.TempDir(), "backup.db")
	var out strings.Builder
	if code := runBackup([]string{"--data-dir", dir, backup}, &out, &out); code != 0 {
		t.Fatalf("tabula backup exited %d: %s", code, out.String())
	}
	waitAcked(len(before) + 50) // writes go on after the backup
	close(stop)
	wg.Wait()
	latest, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	out.Reset()
	if code := runRestore([]string{"--data-dir", dir, "--from", backup}, &out, &out); code != 0 {
		t.Fatalf("tabula restore exited %d: %s", code, out.String())
	}
	m, cs = serve()
	defer m.Close()
	list, err := cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, cm := range list.Items {
		have[cm.Name] = true
	}
	for _, name := range before {
		if !have[name] {
			t.Errorf("%s, acknowledged before the backup began, is missing after the restore", name)
		}
	}
	// The list before the restore named a revision the restored database
	// never reached in this history: lists and watches from it get 410.
	_, err = cs.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: latest.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list at a pre-restore revision: %v; want 410", err)
	}
	w, err := cs.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{ResourceVersion: latest.ResourceVersion})
	if err == nil {
		ev := <-w.ResultChan()
		w.Stop()
		if st, ok := ev.Object.(*metav1.Status); !ok || st.Code != 410 {
			t.Errorf("watch from a pre-restore revision: %s %v; want a 410 ERROR event", ev.Type, ev.Object)
		}
	} else if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("watch from a pre-restore revision: %v; want 410", err)
	}
}
