package server_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestPodGracefulDeletion: as kube-apiserver's pod strategy, a delete of
// a Pod a node runs marks it for its grace period (the request's, else
// the Pod's terminationGracePeriodSeconds) and leaves it for the node to
// stop; a later delete may only shorten the period, and one of 0 removes
// it. A Pod no node runs, or that has finished, goes at once. Kinds
// without graceful deletion move their generation on when a finalizer
// holds their delete.
func TestPodGracefulDeletion(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	const pods = "/api/v1/namespaces/default/pods/"
	create := func(name, spec string) {
		t.Helper()
		if r := h.do("POST", "/api/v1/namespaces/default/pods", ct, []byte(`{"metadata":{"name":"`+name+`"},"spec":`+spec+`}`)); r.Code != http.StatusCreated {
			t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
		}
	}
	type meta struct {
		ResourceVersion            string
		Generation                 int64
		DeletionTimestamp          *time.Time
		DeletionGracePeriodSeconds *int64
	}
	get := func(name string) (meta, int) {
		t.Helper()
		r := h.do("GET", pods+name, nil, nil)
		var o struct{ Metadata meta }
		if r.Code == http.StatusOK {
			if err := json.Unmarshal(r.Body.Bytes(), &o); err != nil {
				t.Fatal(err)
			}
		}
		return o.Metadata, r.Code
	}
	del := func(name, query string) {
		t.Helper()
		if r := h.do("DELETE", pods+name+query, nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete %s%s: %d %s", name, query, r.Code, r.Body)
		}
	}
	const onNode = `{"nodeName":"n1","terminationGracePeriodSeconds":60,"containers":[{"name":"c","image":"busybox"}]}`
	create("unscheduled", `{"terminationGracePeriodSeconds":60,"containers":[{"name":"c","image":"busybox"}]}`)
	create("running", onNode)
	create("finished", onNode)
	if r := h.do("PATCH", pods+"finished/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"phase":"Succeeded"}}`)); r.Code != http.StatusOK {
		t.Fatalf("finish: %d %s", r.Code, r.Body)
	}

	for _, name := range []string{"unscheduled", "finished"} {
		del(name, "")
		if _, code := get(name); code != http.StatusNotFound {
			t.Errorf("%s after its delete: %d; want 404 (no grace period)", name, code)
		}
	}

	before, _ := get("running")
	start := time.Now()
	del("running", "")
	m, code := get("running")
	if code != http.StatusOK || m.DeletionTimestamp == nil || m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 60 ||
		m.DeletionTimestamp.Before(start.Add(58*time.Second)) || m.DeletionTimestamp.After(start.Add(62*time.Second)) || m.Generation != before.Generation+1 {
		t.Fatalf("the running pod after its delete: %d %+v; want it marked to go in 60s, generation %d", code, m, before.Generation+1)
	}
	// Its node still reports on it; that does not remove it.
	if r := h.do("PATCH", pods+"running/status", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"status":{"phase":"Running"}}`)); r.Code != http.StatusOK {
		t.Fatalf("status while terminating: %d %s", r.Code, r.Body)
	}
	if _, code := get("running"); code != http.StatusOK {
		t.Fatalf("the terminating pod after a status update: %d; want it kept", code)
	}
	// A delete asking for no shorter period changes nothing.
	marked, _ := get("running")
	del("running", "")
	del("running", "?gracePeriodSeconds=90")
	if m, _ := get("running"); m.ResourceVersion != marked.ResourceVersion {
		t.Errorf("a pending graceful delete was rewritten: %+v, was %+v", m, marked)
	}
	// A shorter one moves the deadline back by the difference.
	del("running", "?gracePeriodSeconds=10")
	m, _ = get("running")
	if m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 10 || !m.DeletionTimestamp.Equal(marked.DeletionTimestamp.Add(-50*time.Second)) {
		t.Errorf("after a shorter delete: %+v; want 10s, the deadline 50s earlier than %v", m, marked.DeletionTimestamp)
	}
	// The node's final delete (grace 0) removes it.
	del("running", "?gracePeriodSeconds=0")
	if _, code := get("running"); code != http.StatusNotFound {
		t.Errorf("after the delete with grace 0: %d; want 404", code)
	}

	// A kind without graceful deletion, held by a finalizer.
	if r := h.do("POST", "/apis/apps/v1/namespaces/default/deployments", ct, []byte(`{"metadata":{"name":"d","finalizers":["example.com/hold"]},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("deployment: %d %s", r.Code, r.Body)
	}
	var d struct{ Metadata meta }
	r := h.do("DELETE", "/apis/apps/v1/namespaces/default/deployments/d", nil, nil)
	if err := json.Unmarshal(r.Body.Bytes(), &d); err != nil || d.Metadata.Generation != 2 || d.Metadata.DeletionTimestamp == nil {
		t.Errorf("the held deployment's delete: %d %s; want generation 2 and a deletionTimestamp", r.Code, r.Body)
	}
}

// TestDeleteSwitchesPropagation: a delete of an object already held by a
// finalizer may change how its dependents go, as kube's
// deletionFinalizersForGarbageCollection lets it: the orphan and
// foregroundDeletion finalizers follow the latest delete's policy, and a
// delete that names none changes nothing.
func TestDeleteSwitchesPropagation(t *testing.T) {
	h := refNewHarness(t)
	const d = "/apis/apps/v1/namespaces/default/deployments/held"
	if r := h.do("POST", "/apis/apps/v1/namespaces/default/deployments", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"held","finalizers":["example.com/hold"]},"spec":{"selector":{"matchLabels":{"a":"b"}},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	type view struct {
		Metadata struct {
			ResourceVersion string
			Finalizers      []string
		}
	}
	del := func(body string) view {
		t.Helper()
		r := h.do("DELETE", d, map[string]string{"Content-Type": "application/json"}, []byte(body))
		var v view
		if err := json.Unmarshal(r.Body.Bytes(), &v); err != nil || r.Code != http.StatusOK {
			t.Fatalf("delete %s: %d %s", body, r.Code, r.Body)
		}
		return v
	}
	for _, c := range []struct{ body, want string }{
		{`{"propagationPolicy":"Orphan"}`, "example.com/hold,orphan"},
		{`{"propagationPolicy":"Foreground"}`, "example.com/hold,foregroundDeletion"},
		{`{"propagationPolicy":"Background"}`, "example.com/hold"},
		{`{"orphanDependents":true}`, "example.com/hold,orphan"},
	} {
		if got := strings.Join(del(c.body).Metadata.Finalizers, ","); got != c.want {
			t.Errorf("after a delete with %s: finalizers %s; want %s", c.body, got, c.want)
		}
	}
	// (Without the orphan finalizer, which the garbage collector takes
	// off once it has orphaned the dependents, at its own pace.)
	before := del(`{"propagationPolicy":"Background"}`)
	if after := del(`{}`); after.Metadata.ResourceVersion != before.Metadata.ResourceVersion {
		t.Errorf("a delete naming no policy rewrote the object: %+v, was %+v", after, before)
	}
}

// TestPodDeleteEventsAsKube: a Pod deleted with no grace period left is
// first written with its deletionTimestamp and a zero
// deletionGracePeriodSeconds, then removed, as kube's store does it
// (updateForGracefulDeletionAndFinalizers): watchers see MODIFIED, then
// DELETED. The same for a Pod no node runs and for a node's final delete
// of a Pod in its grace period; a kind without graceful deletion goes in
// one DELETED.
func TestPodDeleteEventsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL})
	pods := cs.CoreV1().Pods("default")
	zero := int64(0)
	mk := func(name, node string) *corev1.Pod {
		t.Helper()
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	expect := func(w watch.Interface, want ...watch.EventType) []*corev1.Pod {
		t.Helper()
		var got []*corev1.Pod
		for _, typ := range want {
			ev := <-w.ResultChan()
			p, ok := ev.Object.(*corev1.Pod)
			if ev.Type != typ || !ok {
				t.Fatalf("event %d: %s %T; want %s", len(got), ev.Type, ev.Object, typ)
			}
			got = append(got, p)
		}
		return got
	}
	zeroMarked := func(how string, p *corev1.Pod) {
		t.Helper()
		if p.DeletionTimestamp == nil || p.DeletionGracePeriodSeconds == nil || *p.DeletionGracePeriodSeconds != 0 {
			t.Errorf("%s: MODIFIED with deletionTimestamp %v, grace %v; want both set, grace 0", how, p.DeletionTimestamp, p.DeletionGracePeriodSeconds)
		}
	}

	p := mk("unscheduled", "")
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: p.ResourceVersion, FieldSelector: "metadata.name=unscheduled"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop() // before the server's Close, which waits for it
	if err := pods.Delete(ctx, "unscheduled", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	evs := expect(w, watch.Modified, watch.Deleted)
	w.Stop()
	zeroMarked("unscheduled pod", evs[0])
	if evs[1].ResourceVersion == evs[0].ResourceVersion {
		t.Errorf("DELETED at %s, the MODIFIED's revision; want a later one", evs[1].ResourceVersion)
	}

	p = mk("running", "n1")
	w, err = pods.Watch(ctx, metav1.ListOptions{ResourceVersion: p.ResourceVersion, FieldSelector: "metadata.name=running"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := pods.Delete(ctx, "running", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if evs := expect(w, watch.Modified); *evs[0].DeletionGracePeriodSeconds != 30 {
		t.Errorf("graceful delete: grace %d; want the default 30", *evs[0].DeletionGracePeriodSeconds)
	}
	if err := pods.Delete(ctx, "running", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	zeroMarked("the node's final delete", expect(w, watch.Modified, watch.Deleted)[0])

	cms := cs.CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "plain"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cw, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=plain"})
	if err != nil {
		t.Fatal(err)
	}
	defer cw.Stop()
	if err := cms.Delete(ctx, "plain", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	if ev := <-cw.ResultChan(); ev.Type != watch.Deleted {
		t.Errorf("ConfigMap delete: first event %s; want DELETED", ev.Type)
	}
}

// TestFinalizerRemovalEventsAsKube: the update that takes the last
// finalizer off an object being deleted removes it; the writer is
// answered with the object as it wrote it, and watchers get DELETED with
// the object as it was last stored, finalizer and all, as kube's store
// deletes it (deleteWithoutFinalizers) and its watch shows etcd's
// previous value.
func TestFinalizerRemovalEventsAsKube(t *testing.T) {
	h := refNewHarness(t)
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	ctx := context.Background()
	cms := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL}).CoreV1().ConfigMaps("default")
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "held", Finalizers: []string{"example.com/hold"}},
		Data: map[string]string{"k": "v"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, FieldSelector: "metadata.name=held"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := cms.Delete(ctx, "held", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	marked := <-w.ResultChan()
	if marked.Type != watch.Modified {
		t.Fatalf("after the delete: %s; want MODIFIED", marked.Type)
	}
	got, err := cms.Patch(ctx, "held", types.MergePatchType, []byte(`{"metadata":{"finalizers":null},"data":{"k":"w"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 0 || got.Data["k"] != "w" {
		t.Errorf("the patch's answer: finalizers %v, data %v; want none and k=w", got.Finalizers, got.Data)
	}
	ev := <-w.ResultChan()
	gone, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != watch.Deleted || !ok {
		t.Fatalf("after the finalizer's removal: %s %T; want DELETED", ev.Type, ev.Object)
	}
	if strings.Join(gone.Finalizers, ",") != "example.com/hold" || gone.Data["k"] != "v" || gone.DeletionTimestamp == nil {
		t.Errorf("DELETED object: finalizers %v, data %v, deletionTimestamp %v; want it as last stored (the finalizer, k=v, marked)",
			gone.Finalizers, gone.Data, gone.DeletionTimestamp)
	}
	if gone.ResourceVersion == marked.Object.(*corev1.ConfigMap).ResourceVersion {
		t.Errorf("DELETED at the MODIFIED's revision %s; want the deletion's", gone.ResourceVersion)
	}
	if _, err := cms.Get(ctx, "held", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("after the finalizer's removal: %v; want NotFound", err)
	}
}
