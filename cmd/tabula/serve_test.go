package main

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// serve starts tabula serve in-process with args (on an in-memory
// database, a loopback port and quiet logs unless args say otherwise) and
// returns it with an admin clientset; it is closed when the test ends.
func serve(t *testing.T, args ...string) (*Main, *kubernetes.Clientset) {
	t.Helper()
	m := NewMain()
	all := append([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}, args...)
	if err := m.ParseFlags(all); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { m.Close() })
	return m, adminClientset(t, m)
}

// adminClientset is a clientset with the admin kubeconfig m wrote.
func adminClientset(t *testing.T, m *Main) *kubernetes.Clientset {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}
