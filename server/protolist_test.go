package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

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
	waitForRootCA(h, "default")
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
		sameListButRevision(t, path, cold.Body.Bytes(), warm.Body.Bytes())
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
	waitForRootCA(h, "default")
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
			sameListButRevision(t, path+query+" as "+accept, cold.Body.Bytes(), warm.Body.Bytes())
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

// sameListButRevision fails t unless warm is cold's list, byte for byte,
// but for the list's own resourceVersion and the one in its continue
// token: those are the store's revision when each list was read, and any
// write in between (a controller's, anywhere) moves it. A JSON list is
// compared around its metadata, a Protobuf one field by field around its
// ListMeta.
func sameListButRevision(t *testing.T, what string, cold, warm []byte) {
	t.Helper()
	if bytes.HasPrefix(cold, []byte("k8s\x00")) {
		if !bytes.HasPrefix(warm, []byte("k8s\x00")) {
			t.Fatalf("%s: the warm list is not Protobuf", what)
		}
		// A list's ListMeta is its field 1, but in meta.k8s.io/v1beta1's
		// PartialObjectMetadataList, where it is 2.
		metaField := protowire.Number(1)
		sameProtobufFields(t, what, cold[4:], warm[4:], func(num protowire.Number, c, w []byte) bool {
			if num == 1 { // runtime.Unknown's TypeMeta
				var tm runtime.TypeMeta
				if err := tm.Unmarshal(c); err != nil {
					t.Fatalf("%s: TypeMeta: %v", what, err)
				}
				if tm.APIVersion == "meta.k8s.io/v1beta1" {
					metaField = 2
				}
				return false
			}
			if num != 2 { // runtime.Unknown's raw: the list itself
				return false
			}
			sameProtobufFields(t, what, c, w, func(num protowire.Number, c, w []byte) bool {
				if num != metaField {
					return false
				}
				var cm, wm metav1.ListMeta
				if err := cm.Unmarshal(c); err != nil {
					t.Fatalf("%s: cold ListMeta: %v", what, err)
				}
				if err := wm.Unmarshal(w); err != nil {
					t.Fatalf("%s: warm ListMeta: %v", what, err)
				}
				sameListMeta(t, what, cm, wm)
				return true
			})
			return true
		})
		return
	}
	var c, w struct {
		Metadata json.RawMessage `json:"metadata"`
	}
	if err := json.Unmarshal(cold, &c); err != nil {
		t.Fatalf("%s: cold list: %v", what, err)
	}
	if err := json.Unmarshal(warm, &w); err != nil {
		t.Fatalf("%s: warm list: %v", what, err)
	}
	ci, wi := bytes.Index(cold, c.Metadata), bytes.Index(warm, w.Metadata)
	if ci < 0 || wi < 0 || !bytes.Equal(cold[:ci], warm[:wi]) || !bytes.Equal(cold[ci+len(c.Metadata):], warm[wi+len(w.Metadata):]) {
		t.Fatalf("%s: the warm list differs from the cold one:\n%s\n%s", what, cold, warm)
	}
	var cm, wm metav1.ListMeta
	if err := json.Unmarshal(c.Metadata, &cm); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(w.Metadata, &wm); err != nil {
		t.Fatal(err)
	}
	sameListMeta(t, what, cm, wm)
}

// sameProtobufFields fails t unless the messages c and w hold the same
// fields in the same order, each the same bytes unless inner (given the
// field's number and both values) compares it and says so.
func sameProtobufFields(t *testing.T, what string, c, w []byte, inner func(num protowire.Number, c, w []byte) bool) {
	t.Helper()
	for len(c) > 0 || len(w) > 0 {
		cn, ct, cl := protowire.ConsumeTag(c)
		wn, wt, wl := protowire.ConsumeTag(w)
		if cl < 0 || wl < 0 || cn != wn || ct != wt {
			t.Fatalf("%s: the warm list's fields differ from the cold one's (%d, %d)", what, cn, wn)
		}
		cf := protowire.ConsumeFieldValue(cn, ct, c[cl:])
		wf := protowire.ConsumeFieldValue(wn, wt, w[wl:])
		if cf < 0 || wf < 0 {
			t.Fatalf("%s: malformed Protobuf", what)
		}
		cv, wv := c[cl:cl+cf], w[wl:wl+wf]
		compared := false
		if ct == protowire.BytesType {
			cb, _ := protowire.ConsumeBytes(cv)
			wb, _ := protowire.ConsumeBytes(wv)
			compared = inner(cn, cb, wb)
		}
		if !compared && !bytes.Equal(cv, wv) {
			t.Fatalf("%s: field %d of the warm list differs from the cold one's", what, cn)
		}
		c, w = c[cl+cf:], w[wl+wf:]
	}
}

// sameListMeta fails t unless the lists' metadata agree but for their
// revisions.
func sameListMeta(t *testing.T, what string, c, w metav1.ListMeta) {
	t.Helper()
	if c.ResourceVersion == "" || w.ResourceVersion == "" {
		t.Fatalf("%s: a list without its resourceVersion (%q, %q)", what, c.ResourceVersion, w.ResourceVersion)
	}
	c.ResourceVersion, w.ResourceVersion = "", ""
	c.Continue, w.Continue = continueButRevision(t, c.Continue), continueButRevision(t, w.Continue)
	if !reflect.DeepEqual(c, w) {
		t.Fatalf("%s: the warm list's metadata differs from the cold one's: %+v, %+v", what, w, c)
	}
}

// continueButRevision is a continue token's fields without its revision.
func continueButRevision(t *testing.T, token string) string {
	t.Helper()
	if token == "" {
		return ""
	}
	raw, err := base64.RawURLEncoding.DecodeString(token)
	var fields map[string]any
	if err == nil {
		err = json.Unmarshal(raw, &fields)
	}
	if err != nil || fields["rv"] == nil {
		t.Fatalf("continue token %q: %v", token, err)
	}
	delete(fields, "rv")
	b, _ := json.Marshal(fields)
	return string(b)
}

// waitForRootCA waits for the kube-root-ca.crt ConfigMap that the
// in-process publisher writes to namespace on its own, so that it does
// not arrive between two lists that are compared.
func waitForRootCA(h *refHarness, namespace string) {
	h.t.Helper()
	h.waitFor("kube-root-ca.crt in "+namespace, func() bool {
		return h.do("GET", "/api/v1/namespaces/"+namespace+"/configmaps/kube-root-ca.crt", nil, nil).Code == http.StatusOK
	})
}
