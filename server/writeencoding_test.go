package server_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberuntime "k8s.io/apimachinery/pkg/runtime"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// TestProtobufWriteKeepsEncoding: the Protobuf answer to a create or an
// update is kept as that revision's encoding, so the gets (and lists and
// watch events) of the revision that follow are answered from it without
// decoding the stored JSON again; and those bytes are exactly what a
// server that did not see the write makes from storage, for objects the
// server defaults, allocates for, and that carry times finer than JSON's.
func TestProtobufWriteKeepsEncoding(t *testing.T) {
	store := storetest.Open(t, "sqlite://"+filepath.Join(t.TempDir(), "state.db"))
	writer := servertest.Server(t, server.Config{Store: store, Metrics: prometheus.NewRegistry()})
	info, ok := kuberuntime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
	if !ok {
		t.Fatal("no Protobuf serializer")
	}
	const pb = "application/vnd.kubernetes.protobuf"
	do := func(srv *server.Server, method, path string, obj kuberuntime.Object, want int) []byte {
		t.Helper()
		var body bytes.Buffer
		if obj != nil {
			if err := info.Serializer.Encode(obj, &body); err != nil {
				t.Fatal(err)
			}
		}
		req := httptest.NewRequest(method, path, &body)
		req.Header.Set("Content-Type", pb)
		req.Header.Set("Accept", pb)
		rec := httptest.NewRecorder()
		srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
		}
		return rec.Body.Bytes()
	}

	// Sub-second times: metav1.Time keeps seconds in both encodings,
	// MicroTime microseconds; the server must not keep finer ones.
	renew := metav1.NewMicroTime(time.Date(2026, 11, 29, 1, 2, 3, 123456789, time.UTC))
	one := int32(1)
	paths := map[string]kuberuntime.Object{
		"/api/v1/namespaces/default/configmaps/c": &corev1.ConfigMap{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"b": "2", "a": "1"}},
			Data:       map[string]string{"z": "last", "k": "v"},
		},
		"/apis/coordination.k8s.io/v1/namespaces/default/leases/l": &coordinationv1.Lease{
			TypeMeta:   metav1.TypeMeta{APIVersion: "coordination.k8s.io/v1", Kind: "Lease"},
			ObjectMeta: metav1.ObjectMeta{Name: "l"},
			Spec:       coordinationv1.LeaseSpec{RenewTime: &renew, AcquireTime: &renew},
		},
		"/api/v1/namespaces/default/services/s": &corev1.Service{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
			ObjectMeta: metav1.ObjectMeta{Name: "s"},
			Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}},
		},
		"/apis/apps/v1/namespaces/default/deployments/d": &appsv1.Deployment{
			TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
			ObjectMeta: metav1.ObjectMeta{Name: "d"},
			Spec: appsv1.DeploymentSpec{
				Replicas: &one,
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
				},
			},
		},
	}
	written := map[string][]byte{}
	for objPath, obj := range paths {
		written[objPath] = do(writer, "POST", path.Dir(objPath), obj, http.StatusCreated)
	}
	// An update's answer is kept as well.
	var cm corev1.ConfigMap
	if _, _, err := info.Serializer.Decode(written["/api/v1/namespaces/default/configmaps/c"], nil, &cm); err != nil {
		t.Fatal(err)
	}
	cm.Data["k"] = "updated"
	written["/api/v1/namespaces/default/configmaps/c"] = do(writer, "PUT", "/api/v1/namespaces/default/configmaps/c", &cm, http.StatusOK)

	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	before := encodingCache(t, writer)
	reader := servertest.Server(t, server.Config{Store: store, Metrics: prometheus.NewRegistry()})
	for path := range paths {
		got := do(writer, "GET", path, nil, http.StatusOK)
		if !bytes.Equal(got, written[path]) {
			t.Errorf("GET %s after the write differs from the write's answer", path)
		}
		if cold := do(reader, "GET", path, nil, http.StatusOK); !bytes.Equal(got, cold) {
			t.Errorf("GET %s: the kept encoding differs from the one made from storage:\nkept %q\nmade %q", path, got, cold)
		}
	}
	after := encodingCache(t, writer)
	if after[made] != before[made] || after[hits]-before[hits] < float64(len(paths)) {
		t.Errorf("encoding cache: before the gets %v, after %v; want every get answered from the writes' encodings", before, after)
	}
}
