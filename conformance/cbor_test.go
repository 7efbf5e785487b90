package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	clientfeatures "k8s.io/client-go/features"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// childCBOR names the helper-process check of TestClientGoCBOR.
const childCBOR = "cbor"

// cborWidgets is a CRD with an integer, a number and a string, so CBOR's
// distinct integers and floats show in the comparison with JSON.
var cborWidgets = runtimeschema.GroupVersionResource{Group: "conformance.tabula.test", Version: "v1", Resource: "cborwidgets"}

const cborWidgetsCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
 "metadata":{"name":"cborwidgets.conformance.tabula.test"},
 "spec":{"group":"conformance.tabula.test","scope":"Namespaced",
  "names":{"plural":"cborwidgets","singular":"cborwidget","kind":"CBORWidget","listKind":"CBORWidgetList"},
  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
   "spec":{"type":"object","properties":{"size":{"type":"integer"},"ratio":{"type":"number"},"name":{"type":"string"}}}}}}}]}}`

// TestClientGoCBOR runs client-go's dynamic client and a dynamic informer
// with KUBE_FEATURE_ClientsAllowCBOR=true and KUBE_FEATURE_ClientsPreferCBOR=true
// (in a helper process: client-go reads its gates once per process) on
// ConfigMaps and on a custom resource: create, get, update, apply, list,
// watch, informer sync and events, delete. Every request must go and come
// back in CBOR (a 415 would make client-go fall back to JSON silently), and
// every object it read must equal, field by field, what a JSON client reads.
func TestClientGoCBOR(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "dynamic client and informer", func(t *testing.T) {
			ns := newNamespace(t, tg)
			ensureCBORWidgets(t, tg)
			report := runCBORChild(t, tg, ns)
			if report.Err != "" {
				t.Fatalf("CBOR client: %s", report.Err)
			}
			if !report.AllowGate || !report.PreferGate {
				t.Fatalf("client-go's CBOR gates in the helper: allow %v, prefer %v", report.AllowGate, report.PreferGate)
			}
			checkCBORRequests(t, report.Requests)
			dyn, err := dynamic.NewForConfig(tg.restConfig())
			if err != nil {
				t.Fatal(err)
			}
			ctx := testContext(t, waitDeadline)
			if len(report.Objects) == 0 {
				t.Fatal("the CBOR client reported no objects")
			}
			for key, got := range report.Objects {
				res, name, _ := strings.Cut(key, "/")
				gvr := runtimeschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
				if res == cborWidgets.Resource {
					gvr = cborWidgets
				}
				obj, err := dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Errorf("JSON get of %s: %v", key, err)
					continue
				}
				want, _ := json.Marshal(obj.Object)
				if !jsonEqual(got, want) {
					t.Errorf("%s read in CBOR differs from JSON:\n cbor %s\n json %s", key, got, want)
				}
			}
		})
	})
}

// jsonEqual compares two JSON documents as data.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return bytes.Equal(ja, jb)
}

func ensureCBORWidgets(t *testing.T, tg *target) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(tg.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	ctx := testContext(t, waitDeadline)
	crd := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(cborWidgetsCRD), &crd.Object); err != nil {
		t.Fatal(err)
	}
	crds := runtimeschema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	if _, err := dyn.Resource(crds).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("creating the CRD: %v", err)
	}
	waitFor(t, "cborwidgets served", waitDeadline, func() (bool, string) {
		_, err := dyn.Resource(cborWidgets).List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})
}

func runCBORChild(t *testing.T, tg *target, ns string) cborReport {
	t.Helper()
	var report cborReport
	runChildProcess(t, tg, ns, childCBOR, &report, "KUBE_FEATURE_ClientsAllowCBOR=true", "KUBE_FEATURE_ClientsPreferCBOR=true")
	return report
}

// checkCBORRequests fails t unless every request to the two resources
// sent its body in CBOR and was answered in CBOR (a CBOR sequence for
// watches), and no request met a 415.
func checkCBORRequests(t *testing.T, reqs []loggedRequest) {
	t.Helper()
	var log strings.Builder
	seen := map[string]bool{}
	for _, r := range reqs {
		fmt.Fprintf(&log, "\n  %s %s [%s] → %s [%s]", r.Method, r.URL, r.ContentType, r.Status, r.RespContentType)
		if !strings.Contains(r.URL, "/configmaps") && !strings.Contains(r.URL, "/cborwidgets") {
			continue
		}
		watching := strings.Contains(r.URL, "watch=true")
		switch {
		case strings.HasPrefix(r.Status, "415"):
			t.Errorf("%s %s: 415, client-go falls back to JSON", r.Method, r.URL)
		case r.Method == http.MethodPost || r.Method == http.MethodPut:
			if r.ContentType != "application/cbor" {
				t.Errorf("%s %s sent %q", r.Method, r.URL, r.ContentType)
			}
		case r.Method == http.MethodPatch:
			if r.ContentType != "application/apply-patch+cbor" {
				t.Errorf("%s %s sent %q", r.Method, r.URL, r.ContentType)
			}
		}
		want := "application/cbor"
		if watching {
			want = "application/cbor-seq"
		}
		if strings.HasPrefix(r.Status, "2") && r.RespContentType != want {
			t.Errorf("%s %s answered %q, want %q", r.Method, r.URL, r.RespContentType, want)
		}
		verb := r.Method
		if watching {
			verb = "WATCH"
		}
		seen[verb] = true
	}
	t.Logf("requests of the CBOR client:%s", log.String())
	for _, verb := range []string{"POST", "GET", "PUT", "PATCH", "DELETE", "WATCH"} {
		if !seen[verb] {
			t.Errorf("no %s request was recorded", verb)
		}
	}
}

// cborReport is what the CBOR client did and read; it crosses the
// process boundary as JSON.
type cborReport struct {
	AllowGate, PreferGate bool
	// Objects are the objects read back (resource/name → their JSON).
	Objects  map[string]json.RawMessage
	Requests []loggedRequest
	Err      string
}

// runCBORCheck is the helper process's side of TestClientGoCBOR.
func runCBORCheck(base *rest.Config, ns string) (report cborReport) {
	report.AllowGate = clientfeatures.FeatureGates().Enabled(clientfeatures.ClientsAllowCBOR)
	report.PreferGate = clientfeatures.FeatureGates().Enabled(clientfeatures.ClientsPreferCBOR)
	report.Objects = map[string]json.RawMessage{}
	log := &statusLog{}
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(log.wrap)
	defer func() { report.Requests = log.all() }()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		report.Err = err.Error()
		return report
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cm := func(name, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"cbor": "yes"}}, "data": map[string]any{"k": v}}}
	}
	widget := func(name, v string) *unstructured.Unstructured {
		return &unstructured.Unstructured{Object: map[string]any{"apiVersion": "conformance.tabula.test/v1", "kind": "CBORWidget",
			"metadata": map[string]any{"name": name, "labels": map[string]any{"cbor": "yes"}}, "spec": map[string]any{"size": int64(3), "ratio": 1.5, "name": v}}}
	}
	for _, r := range []struct {
		gvr    runtimeschema.GroupVersionResource
		newObj func(name, v string) *unstructured.Unstructured
		set    func(u *unstructured.Unstructured, v string)
	}{
		{runtimeschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, cm,
			func(u *unstructured.Unstructured, v string) {
				_ = unstructured.SetNestedField(u.Object, v, "data", "k")
			}},
		{cborWidgets, widget,
			func(u *unstructured.Unstructured, v string) {
				_ = unstructured.SetNestedField(u.Object, v, "spec", "name")
			}},
	} {
		if err := cborLifecycle(ctx, dyn.Resource(r.gvr).Namespace(ns), dyn, r.gvr, ns, r.newObj, r.set, report.Objects); err != nil {
			report.Err = r.gvr.Resource + ": " + err.Error()
			return report
		}
	}
	return report
}

// cborLifecycle drives one resource through every verb and an informer.
func cborLifecycle(ctx context.Context, api dynamic.ResourceInterface, dyn dynamic.Interface, gvr runtimeschema.GroupVersionResource, ns string,
	newObj func(name, v string) *unstructured.Unstructured, set func(*unstructured.Unstructured, string), objects map[string]json.RawMessage) error {
	keep := func(u *unstructured.Unstructured) {
		b, _ := json.Marshal(u.Object)
		objects[gvr.Resource+"/"+u.GetName()] = b
	}
	a, err := api.Create(ctx, newObj("a", "one"), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	if a, err = api.Get(ctx, "a", metav1.GetOptions{}); err != nil {
		return fmt.Errorf("get: %w", err)
	}
	set(a, "two")
	if a, err = api.Update(ctx, a, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("update: %w", err)
	}
	keep(a)
	b, err := api.Apply(ctx, "b", newObj("b", "applied"), metav1.ApplyOptions{FieldManager: "cbor-test"})
	if err != nil {
		return fmt.Errorf("apply: %w", err)
	}
	keep(b)
	// Only what this test made (Tabula puts kube-root-ca.crt in every
	// namespace at once).
	mine := func(o *metav1.ListOptions) { o.LabelSelector = "cbor=yes" }
	opts := metav1.ListOptions{}
	mine(&opts)
	list, err := api.List(ctx, opts)
	if err != nil {
		return fmt.Errorf("list: %w", err)
	}
	var names []string
	for _, it := range list.Items {
		names = append(names, it.GetName())
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "a,b" {
		return fmt.Errorf("list: %v, want a and b", names)
	}
	opts.ResourceVersion = list.GetResourceVersion()
	w, err := api.Watch(ctx, opts)
	if err != nil {
		return fmt.Errorf("watch: %w", err)
	}
	if _, err := api.Create(ctx, newObj("c", "three"), metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create c: %w", err)
	}
	select {
	case ev := <-w.ResultChan():
		u, ok := ev.Object.(*unstructured.Unstructured)
		if ev.Type != watch.Added || !ok || u.GetName() != "c" {
			return fmt.Errorf("watch sent %s %T, want ADDED c", ev.Type, ev.Object)
		}
	case <-ctx.Done():
		return fmt.Errorf("watch: no event for c")
	}
	w.Stop()

	// An informer: its list (or watch-list) and watch in CBOR.
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(dyn, 0, ns, mine)
	inf := factory.ForResource(gvr).Informer()
	deleted := make(chan string, 10)
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		if u, ok := obj.(*unstructured.Unstructured); ok {
			deleted <- u.GetName()
		}
	}}); err != nil {
		return err
	}
	stop := make(chan struct{})
	defer func() {
		close(stop)
		factory.Shutdown()
	}()
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		return fmt.Errorf("informer did not sync")
	}
	if keys := inf.GetStore().ListKeys(); len(keys) != 3 {
		return fmt.Errorf("informer cache holds %v, want a, b and c", keys)
	}
	if err := api.Delete(ctx, "c", metav1.DeleteOptions{}); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	select {
	case name := <-deleted:
		if name != "c" {
			return fmt.Errorf("informer deleted %s, want c", name)
		}
	case <-ctx.Done():
		return fmt.Errorf("informer saw no delete of c")
	}
	return nil
}
