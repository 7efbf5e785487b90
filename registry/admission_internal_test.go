package registry

import (
	"context"
	"io"
	"log/slog"
	"strings"
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
	g := mustNew(Config{Store: st, Types: schema.NewBuiltin()})
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

// mustNew is New for configurations that cannot fail.
func mustNew(cfg Config) *Registry {
	g, err := New(cfg)
	if err != nil {
		panic(err)
	}
	// Admission waits for the caches (webhook configurations, namespaces);
	// they run until the store closes.
	if cfg.Store != nil {
		g.RunCaches(context.Background(), func(ctx context.Context, _ string, fn func(context.Context) error) {
			go func() { _ = fn(ctx) }()
		})
	}
	return g
}

// TestAdmissionPluginSelection: kube-apiserver's defaults in its order,
// changed by the enable and disable lists, with kube's errors.
func TestAdmissionPluginSelection(t *testing.T) {
	got, err := AdmissionConfig{}.enabled()
	if err != nil {
		t.Fatal(err)
	}
	want := "NamespaceLifecycle,LimitRanger,ServiceAccount,NodeRestriction,TaintNodesByCondition,PodSecurity,Priority," +
		"DefaultTolerationSeconds,DefaultStorageClass,StorageObjectInUseProtection,PersistentVolumeClaimResize,RuntimeClass," +
		"CertificateApproval,CertificateSigning,ClusterTrustBundleAttest,CertificateSubjectRestriction,DefaultIngressClass,PodTopologyLabels," +
		"MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook,ResourceQuota"
	if strings.Join(got, ",") != want {
		t.Errorf("defaults:\n got %s\nwant %s", strings.Join(got, ","), want)
	}
	got, err = AdmissionConfig{Disable: []string{"PodSecurity", "MutatingAdmissionWebhook", "NodeRestriction", "ResourceQuota"}}.enabled()
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range got {
		if n == "PodSecurity" || n == "MutatingAdmissionWebhook" || n == "NodeRestriction" {
			t.Errorf("%s runs though disabled", n)
		}
	}
	for _, c := range []struct {
		cfg  AdmissionConfig
		want string
	}{
		{AdmissionConfig{Enable: []string{"Nope"}}, `enable-admission-plugins plugin "Nope" is unknown`},
		{AdmissionConfig{Disable: []string{"Nope"}}, `disable-admission-plugins plugin "Nope" is unknown`},
		{AdmissionConfig{Enable: []string{"PodSecurity"}, Disable: []string{"PodSecurity"}}, `[PodSecurity] in enable-admission-plugins and disable-admission-plugins overlapped`},
		{AdmissionConfig{Enable: []string{"AlwaysPullImages"}}, `enable-admission-plugins plugin "AlwaysPullImages" is not served by Tabula yet`},
	} {
		if _, err := c.cfg.enabled(); err == nil || err.Error() != c.want {
			t.Errorf("%+v: %v, want %q", c.cfg, err, c.want)
		}
	}
	// A registry built with a plugin disabled leaves it out of its chain.
	g, err := New(Config{Types: schema.NewBuiltin(), Admission: AdmissionConfig{Disable: []string{"NamespaceLifecycle", "LimitRanger"}}})
	if err != nil {
		t.Fatal(err)
	}
	if on := g.admissionOn; on["NamespaceLifecycle"] || on["LimitRanger"] || !on["PodSecurity"] {
		t.Errorf("enabled plugins: %v", on)
	}
}
