package main

import (
	"context"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
)

// TestLocalAPIServicesPutBackAtStart: as kube-aggregator's autoregister
// controller at each start, the APIServices labelled automanaged=onstart
// that exist are put back as the server wants them: an edited local one
// gets its spec back, one for a group-version no longer served is
// deleted; an APIService without the label is left alone.
func TestLocalAPIServicesPutBackAtStart(t *testing.T) {
	dir := t.TempDir()
	start := func() (*Main, *kubernetes.Clientset) {
		m := NewMain()
		if err := m.ParseFlags([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		return m, adminClientset(t, m)
	}
	const apiservices = "/apis/apiregistration.k8s.io/v1/apiservices"
	get := func(cs *kubernetes.Clientset, name string) (string, error) {
		b, err := cs.RESTClient().Get().AbsPath(apiservices, name).DoRaw(context.Background())
		return string(b), err
	}
	m, cs := start()
	ctx := context.Background()
	// The bootstrap objects are made once the server runs.
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		_, err := get(cs, "v1.apps")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("v1.apps never created: %v", err)
	}
	if _, err := cs.RESTClient().Patch(types.MergePatchType).AbsPath(apiservices, "v1.apps").
		Body([]byte(`{"spec":{"groupPriorityMinimum":100}}`)).DoRaw(ctx); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{
		`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.stale.example","labels":{"kube-aggregator.kubernetes.io/automanaged":"onstart"}},"spec":{"group":"stale.example","version":"v1","groupPriorityMinimum":100,"versionPriority":10}}`,
		`{"apiVersion":"apiregistration.k8s.io/v1","kind":"APIService","metadata":{"name":"v1.mine.example"},"spec":{"group":"mine.example","version":"v1","groupPriorityMinimum":100,"versionPriority":10}}`,
	} {
		if _, err := cs.RESTClient().Post().AbsPath(apiservices).Body([]byte(s)).DoRaw(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if b, err := get(cs, "v1.apps"); err != nil || !strings.Contains(b, `"groupPriorityMinimum":100`) {
		t.Fatalf("v1.apps edited: %v %s", err, b)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}

	m, cs = start()
	defer m.Close()
	var apps, stale, mine string
	var staleErr, mineErr error
	if err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		apps, _ = get(cs, "v1.apps")
		stale, staleErr = get(cs, "v1.stale.example")
		mine, mineErr = get(cs, "v1.mine.example")
		return strings.Contains(apps, `"groupPriorityMinimum":17800`) && apierrors.IsNotFound(staleErr), nil
	}); err != nil {
		t.Errorf("after a restart: v1.apps %s; v1.stale.example %s %v; want v1.apps's spec back (groupPriorityMinimum 17800) and v1.stale.example deleted", apps, stale, staleErr)
	}
	if mineErr != nil || !strings.Contains(mine, `"groupPriorityMinimum":100`) {
		t.Errorf("v1.mine.example after a restart: %v %s; want it kept as it was", mineErr, mine)
	}
}
