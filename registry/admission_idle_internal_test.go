package registry

import (
	"context"
	"io"
	"log/slog"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
)

// TestQuotaPassedOverOnlyWithoutQuotas: ResourceQuota admission is
// passed over in a namespace without quotas, never in one with a quota —
// whether this replica's cache holds it yet or another replica on the
// same database has just written it.
func TestQuotaPassedOverOnlyWithoutQuotas(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := sqlstore.Open(ctx, "sqlite://"+t.TempDir()+"/q.db", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	replica := func() *Registry {
		g := mustNew(Config{Store: st, Types: schema.NewBuiltin()})
		g.RunCaches(ctx, func(ctx context.Context, _ string, fn func(context.Context) error) { go fn(ctx) })
		return g
	}
	a, b := replica(), replica()
	q := newQuotaless(a)
	if err := q.cache.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	attrs := func(ns string) admission.Attributes {
		return admission.NewAttributesRecord(&corev1.ConfigMap{}, nil, corev1.SchemeGroupVersion.WithKind("ConfigMap"), ns, "c",
			runtimeschema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", admission.Create, nil, false, nil)
	}
	for _, ns := range []string{"a", "b", "c"} {
		if _, err := a.MustLookup("", "v1", "namespaces").Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if !q.idle(attrs("a")) || !q.idle(attrs("")) {
		t.Error("a namespace without quotas, or a cluster-scoped write, is not passed over")
	}
	quota := func() *corev1.ResourceQuota {
		return &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"},
			Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"count/configmaps": resource.MustParse("1")}}}
	}
	if _, err := a.MustLookup("", "v1", "resourcequotas").Create(ctx, "b", quota(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if q.idle(attrs("b")) {
		t.Error("a namespace with a quota this replica wrote is passed over")
	}
	if _, err := b.MustLookup("", "v1", "resourcequotas").Create(ctx, "c", quota(), WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if q.idle(attrs("c")) {
		t.Error("a namespace with a quota another replica just wrote is passed over")
	}
}
