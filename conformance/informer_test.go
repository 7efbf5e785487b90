package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

// The test binary runs as a helper process when childEnv names a check.
// client-go reads KUBE_FEATURE_* variables once per process, on the first
// feature-gate lookup, so a gate set with t.Setenv after any client has
// run takes effect only in a new process.
const (
	childEnv           = "TABULA_CONFORMANCE_CHILD"
	childKubeconfigEnv = "TABULA_CONFORMANCE_CHILD_KUBECONFIG"
	childNamespaceEnv  = "TABULA_CONFORMANCE_CHILD_NAMESPACE"
	childInformer      = "informer"
	watchListEnv       = "KUBE_FEATURE_" + string(clientfeatures.WatchListClient)
)

// runChild runs the helper check kind and returns the exit code.
func runChild(kind string) int {
	switch kind {
	case childCBOR:
		return childReport(func(cfg *rest.Config, ns string) cborReport { return runCBORCheck(cfg, ns) },
			func(r *cborReport, err string) { r.Err = err })
	case childInformer:
		return childReport(func(cfg *rest.Config, ns string) informerReport { return runInformerCheck(cfg, ns) },
			func(r *informerReport, err string) { r.Err = err })
	}
	fmt.Fprintf(os.Stderr, "%s=%q names no check\n", childEnv, kind)
	return 2
}

// childReport runs check in the helper process against the kubeconfig and
// namespace it was given and prints its report as JSON.
func childReport[R any](check func(*rest.Config, string) R, setErr func(*R, string)) int {
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv(childKubeconfigEnv))
	var report R
	if err != nil {
		setErr(&report, err.Error())
	} else {
		report = check(cfg, os.Getenv(childNamespaceEnv))
	}
	if err := json.NewEncoder(os.Stdout).Encode(report); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// informerReport is what an informer saw; it crosses the process boundary
// as JSON.
type informerReport struct {
	WatchListGate bool
	Synced        bool
	// CacheAtSync are the store's keys when WaitForCacheSync returned.
	CacheAtSync []string
	// Events are the handler calls, "add NAME", "update NAME", "delete NAME".
	Events []string
	// Requests are the configmaps requests the informer sent.
	Requests []loggedRequest
	Err      string
}

// runInformerCheck runs a SharedInformerFactory's ConfigMap informer in
// namespace ns: an object made before it starts must be in the synced
// cache, and an object created, updated and deleted afterwards must reach
// the handler as add, update and delete.
func runInformerCheck(base *rest.Config, ns string) (report informerReport) {
	report.WatchListGate = clientfeatures.FeatureGates().Enabled(clientfeatures.WatchListClient)
	log := &statusLog{}
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.ContentType = protobufContentType
	cfg.AcceptContentTypes = protobufContentType + ",application/json"
	cfg.Wrap(log.wrap)
	defer func() {
		for _, r := range log.all() {
			if strings.Contains(r.URL, "/configmaps") {
				report.Requests = append(report.Requests, r)
			}
		}
	}()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		report.Err = err.Error()
		return report
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	api := cs.CoreV1().ConfigMaps(ns)
	if _, err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pre"}}, metav1.CreateOptions{}); err != nil {
		report.Err = "creating pre: " + err.Error()
		return report
	}

	var mu sync.Mutex
	events := make(chan string, 1000)
	record := func(e string) {
		mu.Lock()
		defer mu.Unlock()
		report.Events = append(report.Events, e)
		events <- e
	}
	name := func(obj any) string {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		if m, err := metaOf(obj); err == nil {
			return m.GetName()
		}
		return fmt.Sprintf("%T", obj)
	}
	factory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { record("add " + name(obj)) },
		UpdateFunc: func(_, obj any) { record("update " + name(obj)) },
		DeleteFunc: func(obj any) { record("delete " + name(obj)) },
	}); err != nil {
		report.Err = err.Error()
		return report
	}
	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	factory.Start(stop)
	syncCtx, syncCancel := context.WithTimeout(ctx, waitDeadline)
	report.Synced = cache.WaitForCacheSync(syncCtx.Done(), inf.HasSynced)
	syncCancel()
	if !report.Synced {
		report.Err = fmt.Sprintf("WaitForCacheSync did not return true within %v", waitDeadline)
		return report
	}
	report.CacheAtSync = inf.GetStore().ListKeys()
	slices.Sort(report.CacheAtSync)

	await := func(want string) bool {
		timeout := time.After(waitDeadline)
		for {
			select {
			case e := <-events:
				if e == want {
					return true
				}
			case <-timeout:
				report.Err = fmt.Sprintf("the handler saw no %q within %v", want, waitDeadline)
				return false
			}
		}
	}
	live, err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "live"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		report.Err = "creating live: " + err.Error()
		return report
	}
	if !await("add live") {
		return report
	}
	live.Data["v"] = "2"
	if _, err := api.Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		report.Err = "updating live: " + err.Error()
		return report
	}
	if !await("update live") {
		return report
	}
	if err := api.Delete(ctx, "live", metav1.DeleteOptions{}); err != nil {
		report.Err = "deleting live: " + err.Error()
		return report
	}
	await("delete live")
	return report
}

// statusLog records requests with the status of their responses.
type statusLog struct {
	mu   sync.Mutex
	reqs []loggedRequest
}

func (l *statusLog) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(r)
		lr := loggedRequest{Method: r.Method, URL: r.URL.String(), ContentType: r.Header.Get("Content-Type"), Accept: r.Header.Get("Accept")}
		if err != nil {
			lr.Status = "error: " + err.Error()
		} else {
			lr.Status = resp.Status
			lr.RespContentType = resp.Header.Get("Content-Type")
		}
		l.mu.Lock()
		l.reqs = append(l.reqs, lr)
		l.mu.Unlock()
		return resp, err
	})
}

func (l *statusLog) all() []loggedRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]loggedRequest(nil), l.reqs...)
}

// TestInformer runs a ConfigMap informer with client-go's default feature
// gates (watch-list on: the informer opens a sendInitialEvents watch) and
// again in a helper process with KUBE_FEATURE_WatchListClient=false (a
// plain list, then a watch).
func TestInformer(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "default gates", func(t *testing.T) {
			ns := newNamespace(t, tg)
			report := runInformerCheck(tg.restConfig(), ns)
			checkInformerReport(t, ns, report, true)
		})
		scenario(t, tg, "WatchListClient=false", func(t *testing.T) {
			ns := newNamespace(t, tg)
			t.Setenv(watchListEnv, "false")
			report := runInformerChild(t, tg, ns)
			checkInformerReport(t, ns, report, false)
		})
	})
}

// runInformerChild runs runInformerCheck in a new process of this test
// binary, which inherits the environment (and so t.Setenv's gates).
func runInformerChild(t *testing.T, tg *target, ns string) informerReport {
	t.Helper()
	var report informerReport
	if stderr := runChildProcess(t, tg, ns, childInformer, &report); report.Err != "" && stderr != "" {
		t.Logf("helper process stderr:\n%s", stderr)
	}
	return report
}

// runChildProcess runs the helper check kind in a new process of this
// test binary (with the environment and extraEnv), decodes its report and
// returns its stderr.
func runChildProcess(t *testing.T, tg *target, ns, kind string, report any, extraEnv ...string) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, exe)
	cmd.Env = append(append(os.Environ(), childEnv+"="+kind, childKubeconfigEnv+"="+tg.Kubeconfig, childNamespaceEnv+"="+ns), extraEnv...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("helper process: %v\nstderr:\n%s", err, stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), report); err != nil {
		t.Fatalf("helper process printed %q: %v\nstderr:\n%s", stdout.String(), err, stderr.String())
	}
	return stderr.String()
}

func checkInformerReport(t *testing.T, ns string, r informerReport, watchList bool) {
	t.Helper()
	var reqs strings.Builder
	for _, q := range r.Requests {
		fmt.Fprintf(&reqs, "\n  %s %s → %s", q.Method, q.URL, q.Status)
	}
	t.Logf("informer requests:%s", reqs.String())
	if r.WatchListGate != watchList {
		t.Fatalf("client-go's WatchListClient gate is %v in the informer's process, want %v", r.WatchListGate, watchList)
	}
	if r.Err != "" {
		t.Errorf("informer: %s (events seen: %q)", r.Err, r.Events)
	}
	if !r.Synced {
		return
	}
	if !slices.Contains(r.CacheAtSync, ns+"/pre") {
		t.Errorf("cache at sync = %q, want it to hold %s/pre", r.CacheAtSync, ns)
	}
	var live []string
	for _, e := range r.Events {
		if strings.HasSuffix(e, " live") {
			live = append(live, e)
		}
	}
	if want := []string{"add live", "update live", "delete live"}; !slices.Equal(live, want) {
		t.Errorf("handler calls for live = %q, want %q", live, want)
	}
	if !slices.Contains(r.Events, "add pre") {
		t.Errorf("handler calls = %q, want an add for pre", r.Events)
	}

	var first *loggedRequest
	lists, watchLists := 0, 0
	for i, q := range r.Requests {
		if q.Method != http.MethodGet {
			continue
		}
		if first == nil {
			first = &r.Requests[i]
		}
		u, err := url.Parse(q.URL)
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case u.Query().Get("sendInitialEvents") == "true":
			watchLists++
		case u.Query().Get("watch") != "true":
			lists++
		}
	}
	switch {
	case first == nil:
		t.Errorf("the informer sent no GET for configmaps")
	case watchList:
		// kube-apiserver serves the watch-list stream, or rejects it and
		// the reflector falls back to list and watch; both sync.
		if watchLists == 0 || !strings.Contains(first.URL, "sendInitialEvents=true") {
			t.Errorf("with WatchListClient on, the first request should be a sendInitialEvents watch; got %s %s", first.Method, first.URL)
		} else if lists == 0 {
			t.Logf("watch-list served: the informer synced from the sendInitialEvents stream")
		} else {
			t.Logf("watch-list rejected (%s); the informer fell back to list and watch", first.Status)
		}
	default:
		if watchLists != 0 || lists == 0 {
			t.Errorf("with WatchListClient off, want a plain list and no sendInitialEvents watch; got %d lists, %d watch-list requests", lists, watchLists)
		}
	}
}

// metaOf returns the object metadata of an informer's object.
func metaOf(obj any) (metav1.Object, error) {
	if m, ok := obj.(metav1.Object); ok {
		return m, nil
	}
	return nil, fmt.Errorf("%T has no object metadata", obj)
}
