package server_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	clientscheme "k8s.io/client-go/kubernetes/scheme"
)

// TestListAfterUpdate: Protobuf and JSON lists are served from cached
// encodings by revision; an update must show in the next list.
func TestListAfterUpdate(t *testing.T) {
	for _, accept := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		t.Run(accept, func(t *testing.T) { listAfterUpdate(t, accept) })
	}
}

func listAfterUpdate(t *testing.T, accept string) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(`{"metadata":{"name":"pb"},"data":{"v":"one"}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	list := func() string {
		t.Helper()
		r := h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Accept": accept}, nil)
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(r.Body.Bytes(), nil, nil)
		if err != nil {
			t.Fatalf("decode list (%d): %v", r.Code, err)
		}
		for _, cm := range obj.(*corev1.ConfigMapList).Items {
			if cm.Name == "pb" {
				return cm.Data["v"]
			}
		}
		t.Fatal("configmap pb not listed")
		return ""
	}
	if got := list(); got != "one" {
		t.Fatalf("first list: v = %q", got)
	}
	if got := list(); got != "one" { // served from the cache
		t.Fatalf("second list: v = %q", got)
	}
	if r := h.do("PATCH", "/api/v1/namespaces/default/configmaps/pb", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"data":{"v":"two"}}`)); r.Code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	if got := list(); got != "two" {
		t.Fatalf("list after the update: v = %q; want two", got)
	}
}

// TestProtobufObjectResponses: a Protobuf create, get and update answer
// with the bytes the apimachinery serializer writes for the stored object
// (read back as JSON), whether encoded from the request's object, from
// the stored bytes or from the encoding cache.
func TestProtobufObjectResponses(t *testing.T) {
	h := refNewHarness(t)
	pb := map[string]string{"Accept": "application/vnd.kubernetes.protobuf", "Content-Type": "application/json"}
	const path = "/api/v1/namespaces/default/configmaps"
	stored := func() []byte {
		t.Helper()
		r := h.do("GET", path+"/pbo", nil, nil)
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(r.Body.Bytes(), nil, nil)
		if err != nil {
			t.Fatalf("decode JSON get (%d): %v", r.Code, err)
		}
		info, _ := runtime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
		var buf bytes.Buffer
		if err := info.Serializer.Encode(obj, &buf); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	created := h.do("POST", path, pb, []byte(`{"metadata":{"name":"pbo","labels":{"a":"b"},"annotations":{"x":"y"}},"data":{"v":"one"},"binaryData":{"b":"AAE="}}`))
	if created.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", created.Code, created.Body)
	}
	want := stored()
	if !bytes.Equal(created.Body.Bytes(), want) {
		t.Fatalf("create answered\n%x\nwant\n%x", created.Body.Bytes(), want)
	}
	for i := range 2 { // encoded from storage, then from the cache
		if r := h.do("GET", path+"/pbo", pb, nil); !bytes.Equal(r.Body.Bytes(), want) {
			t.Fatalf("get %d answered %d\n%x\nwant\n%x", i, r.Code, r.Body.Bytes(), want)
		}
	}
	updated := h.do("PATCH", path+"/pbo", map[string]string{"Accept": "application/vnd.kubernetes.protobuf", "Content-Type": "application/merge-patch+json"}, []byte(`{"data":{"v":"two"}}`))
	if want := stored(); updated.Code != http.StatusOK || !bytes.Equal(updated.Body.Bytes(), want) {
		t.Fatalf("patch answered %d\n%x\nwant\n%x", updated.Code, updated.Body.Bytes(), want)
	}
}

// TestListWarmEqualsCold: a Protobuf or JSON list whose items' encodings
// are all cached is read without their stored values (keys and revisions
// only); it must answer the very bytes of the first, cold list, whole and
// in pages.
func TestListWarmEqualsCold(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(`{"metadata":{"name":"`+name+`","labels":{"x":"`+name+`"}},"data":{"v":"`+name+`"}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for _, accept := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		t.Run(accept, func(t *testing.T) { listWarmEqualsCold(t, h, map[string]string{"Accept": accept}) })
	}
}

func listWarmEqualsCold(t *testing.T, h *refHarness, pb map[string]string) {
	for _, query := range []string{"", "?limit=2", "?labelSelector=x%3Dc"} {
		path := "/api/v1/namespaces/default/configmaps" + query
		cold := h.do("GET", path, pb, nil)
		warm := h.do("GET", path, pb, nil)
		if cold.Code != http.StatusOK || warm.Code != http.StatusOK {
			t.Fatalf("%s: %d, %d", path, cold.Code, warm.Code)
		}
		if !bytes.Equal(cold.Body.Bytes(), warm.Body.Bytes()) {
			t.Fatalf("%s: the warm list differs from the cold one", path)
		}
		obj, _, err := clientscheme.Codecs.UniversalDeserializer().Decode(warm.Body.Bytes(), nil, nil)
		if err != nil {
			t.Fatalf("%s: decode: %v", path, err)
		}
		l := obj.(*corev1.ConfigMapList)
		for _, cm := range l.Items {
			if cm.Name == "kube-root-ca.crt" {
				continue
			}
			if cm.Data["v"] != cm.Name || cm.ResourceVersion == "" {
				t.Fatalf("%s: item %s holds %v (rv %q)", path, cm.Name, cm.Data, cm.ResourceVersion)
			}
		}
		if query == "?limit=2" {
			if len(l.Items) != 2 || l.Continue == "" || l.RemainingItemCount == nil || *l.RemainingItemCount != 4 {
				t.Fatalf("page: %d items, continue %q, remaining %v", len(l.Items), l.Continue, l.RemainingItemCount)
			}
		}
	}
}

// TestTableListWarmEqualsCold: a Table's rows keep their metadata by
// revision; a warm Table answers the cold one's bytes, and an update
// shows in the next.
func TestTableListWarmEqualsCold(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	for _, name := range []string{"a", "b", "c"} {
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(`{"metadata":{"name":"`+name+`","labels":{"x":"`+name+`"}},"data":{"v":"`+name+`"}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	const path = "/api/v1/namespaces/default/configmaps"
	tbl := map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}
	rowLabels := func(body []byte) map[string]string {
		t.Helper()
		var got metav1.Table
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("decode Table: %v", err)
		}
		labels := map[string]string{}
		for _, row := range got.Rows {
			var pm metav1.PartialObjectMetadata
			if err := json.Unmarshal(row.Object.Raw, &pm); err != nil || pm.Kind != "PartialObjectMetadata" {
				t.Fatalf("row object %s: %v", row.Object.Raw, err)
			}
			labels[pm.Name] = pm.Labels["x"]
		}
		return labels
	}
	// The rows' objects, not whole bodies: an Age cell may tick between
	// the two.
	objects := func(body []byte) [][]byte {
		t.Helper()
		var got metav1.Table
		if err := json.Unmarshal(body, &got); err != nil {
			t.Fatalf("decode Table: %v", err)
		}
		var objs [][]byte
		for _, row := range got.Rows {
			objs = append(objs, row.Object.Raw)
		}
		return objs
	}
	cold := h.do("GET", path, tbl, nil)
	warm := h.do("GET", path, tbl, nil)
	if cold.Code != http.StatusOK || warm.Code != http.StatusOK {
		t.Fatalf("Tables: %d, %d", cold.Code, warm.Code)
	}
	if c, w := objects(cold.Body.Bytes()), objects(warm.Body.Bytes()); len(c) != len(w) || !bytes.Equal(bytes.Join(c, nil), bytes.Join(w, nil)) {
		t.Fatalf("cold and warm rows' objects differ:\n%s\n%s", cold.Body, warm.Body)
	}
	if got := rowLabels(warm.Body.Bytes()); got["b"] != "b" || len(got) != 4 {
		t.Fatalf("rows' labels: %v", got)
	}
	if r := h.do("PATCH", path+"/b", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"labels":{"x":"changed"}}}`)); r.Code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	if got := rowLabels(h.do("GET", path, tbl, nil).Body.Bytes()); got["b"] != "changed" || got["a"] != "a" {
		t.Fatalf("rows' labels after the update: %v", got)
	}
}

// TestMetadataListsWarmEqualCold: PartialObjectMetadataLists, in JSON
// and Protobuf, v1 and v1beta1, are made from each item's metadata kept by
// revision; a warm list answers the cold one's bytes, its items are the
// objects' metadata, an update shows in the next, and a list of none has
// null items as kube-apiserver writes it.
func TestMetadataListsWarmEqualCold(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	// Enough objects for a batch to be made on several cores.
	const n = 300
	for i := range n {
		body := fmt.Sprintf(`{"metadata":{"name":"cm-%03d","labels":{"n":"%d"}},"data":{"v":"%d"}}`, i, i, i)
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", ct, []byte(body)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	scheme := runtime.NewScheme()
	metav1.AddMetaToScheme(scheme)
	metav1beta1.AddMetaToScheme(scheme)
	decoder := serializer.NewCodecFactory(scheme).UniversalDeserializer()
	// items decodes a metadata list of either version, with its items'
	// names and their label n.
	items := func(accept string, body []byte) map[string]string {
		t.Helper()
		obj, _, err := decoder.Decode(body, nil, nil)
		if err != nil {
			t.Fatalf("%s: decode: %v (%.200q)", accept, err, body)
		}
		var metas []metav1.PartialObjectMetadata
		switch l := obj.(type) {
		case *metav1.PartialObjectMetadataList:
			metas = l.Items
		case *metav1beta1.PartialObjectMetadataList:
			metas = l.Items
		default:
			t.Fatalf("%s: decoded a %T", accept, obj)
		}
		got := map[string]string{}
		for _, m := range metas {
			if m.ResourceVersion == "" || m.UID == "" {
				t.Fatalf("%s: item %s lacks its metadata: %+v", accept, m.Name, m.ObjectMeta)
			}
			got[m.Name] = m.Labels["n"]
		}
		return got
	}
	const path = "/api/v1/namespaces/default/configmaps"
	for _, accept := range []string{
		"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/json;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1beta1;g=meta.k8s.io",
	} {
		hdr := map[string]string{"Accept": accept}
		for _, query := range []string{"", "?limit=7", "?labelSelector=n%3D5"} {
			cold := h.do("GET", path+query, hdr, nil)
			warm := h.do("GET", path+query, hdr, nil)
			if cold.Code != http.StatusOK || warm.Code != http.StatusOK {
				t.Fatalf("%s%s as %s: %d, %d %s", path, query, accept, cold.Code, warm.Code, warm.Body)
			}
			if !bytes.Equal(cold.Body.Bytes(), warm.Body.Bytes()) {
				t.Fatalf("%s%s as %s: the warm list differs from the cold one", path, query, accept)
			}
			got := items(accept, warm.Body.Bytes())
			want := map[string]int{"": n, "?limit=7": 7, "?labelSelector=n%3D5": 1}[query]
			if got["cm-005"] != "5" || len(got) < want || len(got) > want+1 { // +1: kube-root-ca.crt
				t.Fatalf("%s%s as %s: %d items, cm-005 labelled %q", path, query, accept, len(got), got["cm-005"])
			}
		}
		if strings.HasPrefix(accept, "application/json") {
			// Each item says what it is, as kube-apiserver writes them.
			version := strings.TrimSuffix(strings.SplitN(accept, ";v=", 2)[1], ";g=meta.k8s.io")
			var l struct {
				Items []metav1.TypeMeta `json:"items"`
			}
			if err := json.Unmarshal(h.do("GET", path+"?limit=3", hdr, nil).Body.Bytes(), &l); err != nil || len(l.Items) != 3 {
				t.Fatalf("%s: %v, %d items", accept, err, len(l.Items))
			}
			for _, tm := range l.Items {
				if tm.Kind != "PartialObjectMetadata" || tm.APIVersion != "meta.k8s.io/"+version {
					t.Fatalf("%s: an item of %s %s", accept, tm.APIVersion, tm.Kind)
				}
			}
			if r := h.do("GET", "/api/v1/namespaces/default/pods", hdr, nil); !strings.Contains(r.Body.String(), `"items":null`) {
				t.Fatalf("%s: a list of no pods: %d %s", accept, r.Code, r.Body)
			}
		} else if r := h.do("GET", "/api/v1/namespaces/default/pods", hdr, nil); r.Code != http.StatusOK || len(items(accept, r.Body.Bytes())) != 0 {
			t.Fatalf("%s: a list of no pods: %d", accept, r.Code)
		}
	}
	if r := h.do("PATCH", path+"/cm-005", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"labels":{"n":"changed"}}}`)); r.Code != http.StatusOK {
		t.Fatalf("patch: %d %s", r.Code, r.Body)
	}
	for _, accept := range []string{
		"application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
		"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io",
	} {
		r := h.do("GET", path, map[string]string{"Accept": accept}, nil)
		if got := items(accept, r.Body.Bytes()); got["cm-005"] != "changed" || got["cm-006"] != "6" {
			t.Fatalf("%s after the update: cm-005 %q, cm-006 %q", accept, got["cm-005"], got["cm-006"])
		}
	}
}
