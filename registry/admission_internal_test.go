package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
)

// BenchmarkAdmit is the admission step's cost on one write: a user the
// chain does not limit (every write but a kubelet's), and a kubelet
// updating its own pod's status (NodeRestriction reads the pod and sees
// the internal objects).
func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	st, err := sqlstore.Open(ctx, "sqlite://:memory:", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	g := New(Config{Store: st, Types: schema.NewBuiltin()})
	pods := g.MustLookup("", "v1", "pods")
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	for _, c := range []struct {
		name string
		who  user.Info
	}{
		{"user", &user.DefaultInfo{Name: "alice", Groups: []string{user.AllAuthenticated}}},
		{"node", &user.DefaultInfo{Name: "system:node:n1", Groups: []string{user.NodesGroup, user.AllAuthenticated}}},
	} {
		b.Run(c.name, func(b *testing.B) {
			ctx := genericapirequest.WithUser(ctx, c.who)
			b.ReportAllocs()
			for b.Loop() {
				obj := pod.DeepCopy()
				if err := pods.admit(ctx, admissionWrite{op: admission.Update, obj: obj, old: pod, namespace: "default", name: "p", subresource: "status"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
