package main

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// TestReadsFromStandby: two replicas on one PostgreSQL, each reading from
// its hot standby (--db-standby). What one replica writes, the other
// reads back at once (gets and lists are consistent reads, whatever the
// standby's lag), watches on the other replica deliver it, and the
// standby really answers reads (its counter in /metrics).
func TestReadsFromStandby(t *testing.T) {
	db := dbtest.Postgres(t)
	standby := dbtest.PostgresStandby(t, db)
	start := func() (*Main, *kubernetes.Clientset) {
		m, _ := serve(t, "--db", db, "--db-standby", standby, "--token", "s3cret")
		cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		cfg.QPS, cfg.Burst = 1000, 1000 // client-go's default 5/s would time the limiter
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return m, cs
	}
	_, a := start()
	_, b := start()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w, err := b.CoreV1().ConfigMaps("default").Watch(ctx, metav1.ListOptions{LabelSelector: "test=standby"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const n = 30
	for i := range n {
		name := fmt.Sprintf("cm-%d", i)
		made, err := a.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"test": "standby"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := b.CoreV1().ConfigMaps("default").Get(ctx, name, metav1.GetOptions{})
		if err != nil || got.ResourceVersion != made.ResourceVersion {
			t.Fatalf("get of %s on the other replica right after its create: %v (rv %q, want %q)", name, err, got.ResourceVersion, made.ResourceVersion)
		}
		// (The namespace also holds kube-root-ca.crt.)
		list, err := b.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "test=standby"})
		if err != nil || len(list.Items) != i+1 {
			t.Fatalf("list on the other replica after create %d: %v, %d items", i, err, len(list.Items))
		}
	}
	for i := range n {
		select {
		case ev := <-w.ResultChan():
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Name != fmt.Sprintf("cm-%d", i) {
				t.Fatalf("watch event %d: %s %#v", i, ev.Type, ev.Object)
			}
		case <-ctx.Done():
			t.Fatalf("watch on the other replica: only %d of %d events", i, n)
		}
	}
	// resourceVersion=0 accepts any replayed state: the standby's.
	if _, err := b.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{ResourceVersion: "0"}); err != nil {
		t.Fatal(err)
	}

	metrics, err := b.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	served := 0.0
	for _, m := range regexp.MustCompile(`(?m)^tabula_sql_standby_reads_total\{[^}]*result="served"[^}]*\} (\S+)$`).FindAllSubmatch(metrics, -1) {
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		served += v
	}
	if served == 0 {
		t.Fatalf("the standby answered no read:\n%s", regexp.MustCompile(`(?m)^tabula_sql_standby.*$`).FindAll(metrics, -1))
	}
	t.Logf("reads the standby answered: %v\n%s", served, regexp.MustCompile(`(?m)^tabula_sql_standby.*$`).FindAll(metrics, -1))
}
