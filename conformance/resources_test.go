package conformance

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/util/retry"
)

// typicalObjects reads testdata/typical-objects.yaml.
func typicalObjects(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	b, err := os.ReadFile("testdata/typical-objects.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(b), 4096)
	var out []*unstructured.Unstructured
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); errors.Is(err, io.EOF) {
			return out
		} else if err != nil {
			t.Fatal(err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestEveryResource takes a typical object of every resource Tabula
// serves through its life on every database: create, get, list as a
// Table, update, patch (merge, JSON and strategic merge) and delete until
// it is gone. Discovery must not list a creatable resource the suite has
// no typical object for.
func TestEveryResource(t *testing.T) {
	objs := typicalObjects(t)
	forEachTarget(t, func(t *testing.T, tg *target) {
		cfg := tg.restConfig()
		dyn, err := dynamic.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dc, err := discovery.NewDiscoveryClientForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		groups, err := restmapper.GetAPIGroupResources(dc)
		if err != nil {
			t.Fatal(err)
		}
		mapper := restmapper.NewDiscoveryRESTMapper(groups)
		httpc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := newNamespace(t, tg)
		covered := map[schema.GroupVersionResource]bool{}
		for _, obj := range objs {
			gvk := obj.GroupVersionKind()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				t.Errorf("%s: %v", gvk, err)
				continue
			}
			covered[m.Resource] = true
			namespace := ""
			if m.Scope.Name() == "namespace" {
				namespace = ns
				// Events name an object in their own namespace.
				for _, ref := range []string{"involvedObject", "regarding"} {
					if _, ok := obj.Object[ref]; ok {
						_ = unstructured.SetNestedField(obj.Object, ns, ref, "namespace")
					}
				}
			}
			t.Run(m.Resource.Resource+"."+m.Resource.Version+"."+m.Resource.Group, func(t *testing.T) {
				lifecycle(t, dyn.Resource(m.Resource).Namespace(namespace), httpc, cfg.Host, m.Resource, namespace, obj.DeepCopy())
			})
		}
		// Custom resources other tests' CRDs serve are not built-in kinds.
		custom := map[string]bool{}
		crds, err := dyn.Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
			List(testContext(t, waitDeadline), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, crd := range crds.Items {
			custom[crd.GetName()] = true
		}
		for _, g := range groups {
			for version, resources := range g.VersionedResources {
				for _, r := range resources {
					gvr := schema.GroupVersionResource{Group: g.Group.Name, Version: version, Resource: r.Name}
					if custom[r.Name+"."+g.Group.Name] {
						continue
					}
					if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "create") || !slices.Contains(r.Verbs, "get") || covered[gvr] {
						continue
					}
					t.Errorf("discovery lists %s, which testdata/typical-objects.yaml has no object of", gvr)
				}
			}
		}
	})
}

// lifecycle runs one object through every verb.
func lifecycle(t *testing.T, rc dynamic.ResourceInterface, httpc *http.Client, host string, gvr schema.GroupVersionResource, namespace string, obj *unstructured.Unstructured) {
	ctx := testContext(t, waitDeadline)
	name := obj.GetName()
	created, err := rc.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	got, err := rc.Get(ctx, name, metav1.GetOptions{})
	if err != nil || got.GetUID() != created.GetUID() {
		t.Fatalf("get: %v (uid %s, created %s)", err, got.GetUID(), created.GetUID())
	}

	// The server-side Table lists it by name.
	path := "/apis/" + gvr.Group + "/" + gvr.Version
	if gvr.Group == "" {
		path = "/api/" + gvr.Version
	}
	if namespace != "" {
		path += "/namespaces/" + namespace
	}
	req, err := http.NewRequestWithContext(ctx, "GET", host+path+"/"+gvr.Resource, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := httpc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tbl metav1.Table
	err = json.NewDecoder(resp.Body).Decode(&tbl)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusOK || tbl.Kind != "Table" || len(tbl.ColumnDefinitions) == 0 {
		t.Fatalf("list as Table: %d %v %+v", resp.StatusCode, err, tbl.ColumnDefinitions)
	}
	// Rows carry the object's metadata (includeObject=Metadata by default).
	listed := false
	for _, row := range tbl.Rows {
		var m metav1.PartialObjectMetadata
		listed = listed || json.Unmarshal(row.Object.Raw, &m) == nil && m.Name == name
	}
	if !listed {
		t.Errorf("the Table does not list %s: %d rows", name, len(tbl.Rows))
	}

	// Update: a label added through PUT, read again and retried when a
	// controller wrote first (a new CRD's status, say), as clients do.
	var updated *unstructured.Unstructured
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		labels := got.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		labels["typical.example.com/put"] = "yes"
		got.SetLabels(labels)
		var err error
		if updated, err = rc.Update(ctx, got, metav1.UpdateOptions{}); apierrors.IsConflict(err) {
			if cur, gerr := rc.Get(ctx, name, metav1.GetOptions{}); gerr == nil {
				got = cur
			}
		}
		return err
	})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.GetResourceVersion() == got.GetResourceVersion() {
		t.Errorf("update kept resourceVersion %s", got.GetResourceVersion())
	}

	for _, p := range []struct {
		pt    types.PatchType
		patch string
	}{
		{types.MergePatchType, `{"metadata":{"labels":{"typical.example.com/merge":"yes"}}}`},
		{types.JSONPatchType, `[{"op":"add","path":"/metadata/labels/typical.example.com~1json","value":"yes"}]`},
		{types.StrategicMergePatchType, `{"metadata":{"labels":{"typical.example.com/strategic":"yes"}}}`},
	} {
		if _, err := rc.Patch(ctx, name, p.pt, []byte(p.patch), metav1.PatchOptions{}); err != nil {
			t.Fatalf("%s patch: %v", p.pt, err)
		}
	}
	final, err := rc.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []string{"put", "merge", "json", "strategic"} {
		if final.GetLabels()["typical.example.com/"+l] != "yes" {
			t.Errorf("label from the %s write missing: %v", l, final.GetLabels())
		}
	}

	if err := rc.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	waitFor(t, "deleted "+name, waitDeadline, func() (bool, string) {
		o, err := rc.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return false, fmt.Sprintf("still there, finalizers %v", o.GetFinalizers())
	})
}
