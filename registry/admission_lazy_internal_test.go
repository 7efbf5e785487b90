package registry

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore"
)

// TestWebhookPluginsMadeOnFirstUse: kube's webhook plugins are not made
// while no webhook is configured, however many writes pass; once a
// ValidatingWebhookConfiguration is, the next writes (arriving together)
// make the validating plugin once, and it calls the webhook and refuses
// what it refuses. The kubeconfig its configuration names is read at
// start only, as kube reads it (removed after, the plugin is still
// made); the configuration is not sent to the webhook that refuses
// everything. A bad plugin configuration still stops the registry at
// start.
func TestWebhookPluginsMadeOnFirstUse(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	st, err := sqlstore.Open(ctx, "sqlite://"+t.TempDir()+"/w.db", sqlstore.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	dir := t.TempDir()
	kubeconfig := filepath.Join(dir, "webhooks.kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nusers:\n- name: '*.example.com'\n  user:\n    token: t\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	admissionConfig := func(kubeconfig string) string {
		conf := filepath.Join(t.TempDir(), "admission.yaml")
		if err := os.WriteFile(conf, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: AdmissionConfiguration
plugins:
- name: ValidatingAdmissionWebhook
  configuration:
    apiVersion: apiserver.config.k8s.io/v1
    kind: WebhookAdmissionConfiguration
    kubeConfigFile: `+kubeconfig+"\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		return conf
	}
	g := mustNew(Config{Store: st, Types: schema.NewBuiltin(), Admission: AdmissionConfig{ConfigFile: admissionConfig(kubeconfig)}})
	if err := os.Remove(kubeconfig); err != nil {
		t.Fatal(err)
	}
	if len(g.webhooks) != 2 {
		t.Fatalf("%d webhook plugins, want 2", len(g.webhooks))
	}
	made := func() (n int) {
		for _, w := range g.webhooks {
			if w.made() {
				n++
			}
		}
		return n
	}
	if _, err := g.MustLookup("", "v1", "namespaces").Create(ctx, "", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	configmaps := g.MustLookup("", "v1", "configmaps")
	cm := func(name string) error {
		_, err := configmaps.Create(ctx, "default", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, WriteOptions{})
		return err
	}
	for _, name := range []string{"a", "b"} {
		if err := cm(name); err != nil {
			t.Fatal(err)
		}
	}
	if n := made(); n != 0 {
		t.Errorf("%d webhook plugins made with no webhook configured", n)
	}

	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var review admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "not a review", http.StatusBadRequest)
			return
		}
		resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: review.Request.Name != "deny" && review.Request.Resource.Resource == "configmaps"}
		if !resp.Allowed {
			resp.Result = &metav1.Status{Code: http.StatusForbidden, Message: "not this one"}
		}
		review.Request, review.Response = nil, resp
		_ = json.NewEncoder(w).Encode(&review)
	}))
	defer hook.Close()
	// Told once the configuration is in the cache the plugin's idle test
	// reads (handlers run after the cache has stored the object).
	seen := make(chan struct{}, 1)
	g.Cache(admissionregistrationGroup, "v1", "validatingwebhookconfigurations", true, CacheHandler{Set: func(runtime.Object) {
		select {
		case seen <- struct{}{}:
		default:
		}
	}})
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "deny"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "deny.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To(hook.URL),
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			// Every write of everything: configmaps named deny, and
			// whatever is not a configmap, are refused.
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*/*"}}}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}
	if _, err := g.MustLookup(admissionregistrationGroup, "v1", "validatingwebhookconfigurations").Create(ctx, "", cfg, WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-seen:
	case <-time.After(time.Minute):
		t.Fatal("the configuration never reached the cache")
	}
	// Writes arriving at once make the plugin once, and each is admitted.
	errs := make(chan error, 8)
	for i := range cap(errs) {
		go func() { errs <- cm("c" + strconv.Itoa(i)) }()
	}
	for range cap(errs) {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if err := cm("deny"); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "not this one") {
		t.Errorf("a write the webhook refuses: %v", err)
	}
	if n := made(); n != 1 {
		t.Errorf("%d webhook plugins made with a validating webhook configured, want 1", n)
	}
	if _, err := g.MustLookup(admissionregistrationGroup, "v1", "validatingwebhookconfigurations").Delete(ctx, "", "deny", &metav1.DeleteOptions{}); err != nil {
		t.Errorf("deleting the configuration of a webhook that refuses everything: %v", err)
	}

	// A kubeConfigFile that is not an absolute path, or names no file:
	// refused at start, as kube's plugin refuses it when made.
	for path, want := range map[string]string{"relative/kubeconfig": "must be an absolute file path", kubeconfig: "no such file"} {
		if _, err := New(Config{Types: schema.NewBuiltin(), Admission: AdmissionConfig{ConfigFile: admissionConfig(path)}}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("kubeConfigFile %s: %v, want %q", path, err, want)
		}
	}
}
