package conformance

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestAdmissionWebhooks: admission webhooks a test server answers —
// validating (deny, warn, audit annotations), mutating with a JSONPatch,
// reinvoked when a later webhook changes the object, one that hangs past
// its timeout, one that is down (Ignore and Fail), one named by a
// Service — and a CRD whose versions a conversion webhook converts, read
// and written in both, are called by the server as kube-apiserver calls
// them, with its texts.
func TestAdmissionWebhooks(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "admission", func(t *testing.T) { admissionWebhookScenario(t, tg) })
		scenario(t, tg, "conversion", func(t *testing.T) { conversionWebhookScenario(t, tg) })
	})
}

// hookServer is an HTTPS webhook server; its certificate names
// 127.0.0.1, this machine's first other address and the Service DNS name
// it is reached by.
type hookServer struct {
	srv   *httptest.Server
	ca    []byte
	ip    string // a non-loopback address it listens on
	port  int
	mu    sync.Mutex
	calls map[string][]*admissionv1.AdmissionRequest
}

func startHookServer(t *testing.T, serviceDNS string) *hookServer {
	t.Helper()
	ip := hostIP(t)
	cert, caPEM := selfSignedCert(t, []string{serviceDNS}, []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP(ip)})
	h := &hookServer{ca: caPEM, ip: ip, calls: map[string][]*admissionv1.AdmissionRequest{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/deny", h.review(denyForbidden))
	mux.HandleFunc("/mutate", h.review(addLabel("mutated", "yes")))
	mux.HandleFunc("/reinvoke-a", h.review(copyLabel("b", "a")))
	mux.HandleFunc("/deny-big-scale", h.review(func(req *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
		spec, _ := obj["spec"].(map[string]any)
		if n, _ := spec["replicas"].(float64); n > 3 {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "at most 3 replicas"}}
		}
		return &admissionv1.AdmissionResponse{Allowed: true}
	}))
	mux.HandleFunc("/deny-pod-delete", h.review(func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "pods are not deleted here"}}
	}))
	mux.HandleFunc("/deny-exec", h.review(func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "exec is not allowed here"}}
	}))
	mux.HandleFunc("/reinvoke-b", h.review(addLabel("b", "x")))
	mux.HandleFunc("/bad-managed-fields", h.review(func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse {
		p := []byte(`[{"op":"replace","path":"/metadata/managedFields","value":[{"manager":"x","operation":"Bogus"}]}]`)
		return &admissionv1.AdmissionResponse{Allowed: true, Patch: p, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
	}))
	// /hang answers when the caller gives up, or when the test ends.
	stop := make(chan struct{})
	mux.HandleFunc("/hang", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	})
	mux.HandleFunc("/convert", convertColour)
	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	h.srv = &httptest.Server{Listener: ln, Config: &http.Server{Handler: mux}}
	h.srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	h.srv.StartTLS()
	t.Cleanup(h.srv.Close)
	t.Cleanup(func() { close(stop) }) // runs first
	h.port = ln.Addr().(*net.TCPAddr).Port
	return h
}

func (h *hookServer) url(path string) *string {
	return ptr.To(fmt.Sprintf("https://127.0.0.1:%d%s", h.port, path))
}

func (h *hookServer) requests(path string) []*admissionv1.AdmissionRequest {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]*admissionv1.AdmissionRequest(nil), h.calls[path]...)
}

// review answers AdmissionReview v1 with what fn says of the request.
func (h *hookServer) review(fn func(req *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, fmt.Sprintf("not an AdmissionReview: %v", err), http.StatusBadRequest)
			return
		}
		h.mu.Lock()
		h.calls[r.URL.Path] = append(h.calls[r.URL.Path], in.Request)
		h.mu.Unlock()
		var obj map[string]any
		_ = json.Unmarshal(in.Request.Object.Raw, &obj)
		resp := fn(in.Request, obj)
		resp.UID = in.Request.UID
		out := admissionv1.AdmissionReview{TypeMeta: in.TypeMeta, Response: resp}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(out)
	}
}

// denyForbidden refuses an object whose data has the key "forbidden",
// and warns and annotates the audit event on every other.
func denyForbidden(req *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
	if data, _ := obj["data"].(map[string]any); data != nil {
		if _, bad := data["forbidden"]; bad {
			return &admissionv1.AdmissionResponse{Result: &metav1.Status{Code: http.StatusForbidden, Message: "the key forbidden is not allowed"}}
		}
	}
	return &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"checked by the deny webhook"},
		AuditAnnotations: map[string]string{"checked": "yes"}}
}

func labelsOf(obj map[string]any) map[string]any {
	md, _ := obj["metadata"].(map[string]any)
	l, _ := md["labels"].(map[string]any)
	return l
}

// patched allows with a JSONPatch setting one label.
func patched(obj map[string]any, key, value string) *admissionv1.AdmissionResponse {
	var ops []map[string]any
	if labelsOf(obj) == nil {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels", "value": map[string]string{key: value}})
	} else {
		ops = append(ops, map[string]any{"op": "add", "path": "/metadata/labels/" + key, "value": value})
	}
	p, _ := json.Marshal(ops)
	return &admissionv1.AdmissionResponse{Allowed: true, Patch: p, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch)}
}

func addLabel(key, value string) func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse {
	return func(_ *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
		if labelsOf(obj)[key] == value {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return patched(obj, key, value)
	}
}

// copyLabel sets label to to label from's value, once from is there.
func copyLabel(from, to string) func(*admissionv1.AdmissionRequest, map[string]any) *admissionv1.AdmissionResponse {
	return func(_ *admissionv1.AdmissionRequest, obj map[string]any) *admissionv1.AdmissionResponse {
		v, ok := labelsOf(obj)[from].(string)
		if !ok || labelsOf(obj)[to] == v {
			return &admissionv1.AdmissionResponse{Allowed: true}
		}
		return patched(obj, to, v)
	}
}

// convertColour converts widgets between v1 (spec.color) and v2
// (spec.colour), answering ConversionReview v1.
func convertColour(w http.ResponseWriter, r *http.Request) {
	var in apiextensionsv1.ConversionReview
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: in.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	to := in.Request.DesiredAPIVersion
	for _, raw := range in.Request.Objects {
		var obj map[string]any
		if err := json.Unmarshal(raw.Raw, &obj); err != nil {
			resp.Result = metav1.Status{Status: metav1.StatusFailure, Message: err.Error()}
			break
		}
		spec, _ := obj["spec"].(map[string]any)
		if spec != nil {
			if strings.HasSuffix(to, "/v2") {
				if c, ok := spec["color"]; ok {
					spec["colour"] = c
					delete(spec, "color")
				}
			} else if c, ok := spec["colour"]; ok {
				spec["color"] = c
				delete(spec, "colour")
			}
		}
		obj["apiVersion"] = to
		b, _ := json.Marshal(obj)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: b})
	}
	out := apiextensionsv1.ConversionReview{TypeMeta: in.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(out)
}

func admissionWebhookScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	nsObj, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	nsObj.Labels["webhook-test"] = ns
	if _, err := cs.CoreV1().Namespaces().Update(ctx, nsObj, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The root CA publisher creates kube-root-ca.crt in every new
	// namespace on its own time; made after the webhooks, it would reach
	// them among the test's requests (a flake seen once on PostgreSQL:
	// the last /deny call was not the test's).
	waitFor(t, "kube-root-ca.crt in "+ns, time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	h := startHookServer(t, "hooks."+ns+".svc")
	inNS := &metav1.LabelSelector{MatchLabels: map[string]string{"webhook-test": ns}}
	labelled := func(k, v string) *metav1.LabelSelector {
		return &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
	cmRules := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	none := ptr.To(admissionregistrationv1.SideEffectClassNone)
	fail, ignore := ptr.To(admissionregistrationv1.Fail), ptr.To(admissionregistrationv1.Ignore)
	mutating := func(name, path string, sel *metav1.LabelSelector, reinvoke bool) admissionregistrationv1.MutatingWebhook {
		wh := admissionregistrationv1.MutatingWebhook{Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: h.url(path), CABundle: h.ca},
			Rules: cmRules, NamespaceSelector: inNS, ObjectSelector: sel, SideEffects: none, FailurePolicy: fail, AdmissionReviewVersions: []string{"v1"}}
		if reinvoke {
			wh.ReinvocationPolicy = ptr.To(admissionregistrationv1.IfNeededReinvocationPolicy)
		}
		return wh
	}
	validating := func(name string, cc admissionregistrationv1.WebhookClientConfig, sel *metav1.LabelSelector, policy *admissionregistrationv1.FailurePolicyType) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{Name: name, ClientConfig: cc, Rules: cmRules, NamespaceSelector: inNS, ObjectSelector: sel,
			SideEffects: none, FailurePolicy: policy, AdmissionReviewVersions: []string{"v1"}, TimeoutSeconds: ptr.To(int32(1))}
	}
	byURL := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{URL: h.url(path), CABundle: h.ca}
	}
	// A port nothing listens on.
	down := admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://127.0.0.1:%d/down", closedPort(t))), CABundle: h.ca}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-mutate"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{
			mutating("mutate.tabula.dev", "/mutate", nil, false),
			mutating("reinvoke-a.tabula.dev", "/reinvoke-a", labelled("reinvoke", "yes"), true),
			mutating("reinvoke-b.tabula.dev", "/reinvoke-b", labelled("reinvoke", "yes"), false),
			mutating("bad-managed-fields.tabula.dev", "/bad-managed-fields", labelled("badmf", "yes"), false),
		}}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-validate"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			validating("deny.tabula.dev", byURL("/deny"), nil, fail),
			validating("hang.tabula.dev", byURL("/hang"), labelled("hang", "yes"), fail),
			validating("down-ignore.tabula.dev", down, labelled("down", "ignore"), ignore),
			validating("down-fail.tabula.dev", down, labelled("down", "fail"), fail),
		}}
	if _, err := cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, mwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Delete(context.Background(), mwc.Name, metav1.DeleteOptions{})
	})
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})
	k := newKubectl(t, tg)
	cm := func(name string, labels map[string]string, data map[string]string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: data}
	}

	// Mutation, with the validating webhook's warning to the client.
	warnings := &warningCollector{}
	cfg := tg.restConfig()
	cfg.WarningHandler = warnings
	wcs := kubernetes.NewForConfigOrDie(cfg)
	got, err := wcs.CoreV1().ConfigMaps(ns).Create(ctx, cm("plain", nil, map[string]string{"k": "v"}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["mutated"] != "yes" {
		t.Errorf("the mutating webhook's patch is missing: labels %v", got.Labels)
	}
	if w := warnings.all(); len(w) != 1 || w[0] != "checked by the deny webhook" {
		t.Errorf("warnings %q, want the webhook's", w)
	}
	reqs := h.requests("/deny")
	if len(reqs) == 0 || reqs[len(reqs)-1].Name != "plain" || reqs[len(reqs)-1].Operation != admissionv1.Create ||
		reqs[len(reqs)-1].Namespace != ns || !strings.Contains(string(reqs[len(reqs)-1].Object.Raw), `"mutated":"yes"`) {
		t.Errorf("the validating webhook was not shown the mutated object: %d calls", len(reqs))
	}

	// The webhook's audit annotation is in the request's audit event.
	if tg.Proc != nil {
		var found bool
		for _, e := range auditEvents(t, tg, ns) {
			if e.ObjectRef.Name == "plain" && e.Verb == "create" && e.Annotations["deny.tabula.dev/checked"] == "yes" {
				found = true
			}
		}
		if !found {
			t.Errorf("the audit log lacks the deny webhook's annotation on the create of plain")
		}
	}

	// managedFields a webhook leaves invalid are put back, with kube's
	// warning, and the write goes on.
	mfWarnings := &warningCollector{}
	mfCfg := tg.restConfig()
	mfCfg.WarningHandler = mfWarnings
	if _, err := kubernetes.NewForConfigOrDie(mfCfg).CoreV1().ConfigMaps(ns).Create(ctx, cm("badmf", map[string]string{"badmf": "yes"}, nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("create through a webhook breaking managedFields: %v", err)
	} else if w := strings.Join(mfWarnings.all(), "\n"); !strings.Contains(w, ".metadata.managedFields was in an invalid state after admission; this could be caused by an outdated mutating admission controller; please fix your requests") {
		t.Errorf("warnings %q, want kube's for managedFields reset after admission", w)
	}

	// Denial, with kube-apiserver's words; a dry run is denied too and the
	// webhook (sideEffects None) is told it is one.
	r := k.fails(t, runOpts{}, "create", "configmap", "bad", "-n", ns, "--from-literal=forbidden=1")
	if want := `admission webhook "deny.tabula.dev" denied the request: the key forbidden is not allowed`; !strings.Contains(r.stderr, want) {
		t.Errorf("denial:\n%s\nwant %q", r, want)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("bad", nil, map[string]string{"forbidden": "1"}), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Warn"})
	if err == nil || !strings.Contains(err.Error(), "denied the request") {
		t.Errorf("dry-run create: %v, want the denial", err)
	}
	if reqs := h.requests("/deny"); len(reqs) == 0 || reqs[len(reqs)-1].DryRun == nil || !*reqs[len(reqs)-1].DryRun {
		t.Errorf("the webhook was not told of the dry run")
	} else if opts := string(reqs[len(reqs)-1].Options.Raw); !strings.Contains(opts, `"kind":"CreateOptions"`) ||
		!strings.Contains(opts, `"apiVersion":"meta.k8s.io/v1"`) || !strings.Contains(opts, `"dryRun":["All"]`) ||
		!strings.Contains(opts, `"fieldValidation":"Warn"`) || strings.Contains(opts, `"fieldManager"`) {
		// As sent: no fieldManager (the User-Agent names the managedFields
		// entry, not the options), the fieldValidation asked.
		t.Errorf("the webhook was shown options %s, want the request's CreateOptions as sent, with dryRun and fieldValidation", opts)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "bad", metav1.GetOptions{}); err == nil {
		t.Errorf("a denied ConfigMap was stored")
	}
	// An update is admitted too.
	got.Data = map[string]string{"forbidden": "now"}
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, got, metav1.UpdateOptions{}); err == nil || !strings.Contains(err.Error(), "denied the request") {
		t.Errorf("update: %v, want the denial", err)
	}

	// Reinvocation: b is set after a ran; a runs again and copies it.
	got, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("reinvoked", map[string]string{"reinvoke": "yes"}, nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["a"] != "x" || got.Labels["b"] != "x" {
		t.Errorf("reinvocation: labels %v, want a=x and b=x", got.Labels)
	}

	// A webhook past its timeout, and one that is down.
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("hangs", map[string]string{"hang": "yes"}, nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "hang.tabula.dev"`) || !strings.Contains(err.Error(), "context deadline exceeded") {
		t.Errorf("a hanging webhook: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("ignored", map[string]string{"down": "ignore"}, nil), metav1.CreateOptions{}); err != nil {
		t.Errorf("a webhook that is down with failurePolicy Ignore: %v", err)
	}
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm("refused", map[string]string{"down": "fail"}, nil), metav1.CreateOptions{})
	if err == nil || !strings.Contains(err.Error(), `failed calling webhook "down-fail.tabula.dev"`) || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("a webhook that is down with failurePolicy Fail: %v", err)
	}

	// CONNECT is admitted: a webhook refusing pods/exec stops an exec
	// before any stream opens, and is shown the PodExecOptions.
	execHook := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-exec"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "no-exec.tabula.dev", ClientConfig: byURL("/deny-exec"),
			Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Connect},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/exec"}}}},
			NamespaceSelector: inNS, SideEffects: none, AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, execHook, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), execHook.Name, metav1.DeleteOptions{})
	})
	err = cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("pods").Name("some-pod").SubResource("exec").
		Param("command", "ls").Param("stdout", "true").Param("container", "c").Do(ctx).Error()
	if want := `admission webhook "no-exec.tabula.dev" denied the request: exec is not allowed here`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("exec: %v, want %q", err, want)
	}
	if reqs := h.requests("/deny-exec"); len(reqs) != 1 || reqs[0].Operation != admissionv1.Connect || reqs[0].Kind.Kind != "PodExecOptions" ||
		reqs[0].SubResource != "exec" || !strings.Contains(string(reqs[0].Object.Raw), `"command":["ls"]`) {
		t.Errorf("the exec webhook's requests: %+v", reqs)
	}

	// Subresources as kube-apiserver shows them: a scale is admitted as
	// deployments/scale with the Scale; an eviction deletes its Pod
	// without the Pod's DELETE admission.
	sub := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-subresources"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{
			{Name: "scale.tabula.dev", ClientConfig: byURL("/deny-big-scale"), NamespaceSelector: inNS, SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale"}}}}},
			{Name: "pod-delete.tabula.dev", ClientConfig: byURL("/deny-pod-delete"), NamespaceSelector: inNS, SideEffects: none, AdmissionReviewVersions: []string{"v1"},
				Rules: []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Delete},
					Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}}},
		}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, sub, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), sub.Name, metav1.DeleteOptions{})
	})
	k.ok(t, "create", "deployment", "web", "--image=registry.k8s.io/pause:3.10", "-n", ns)
	k.ok(t, "scale", "deployment", "web", "--replicas=2", "-n", ns)
	r = k.fails(t, runOpts{}, "scale", "deployment", "web", "--replicas=5", "-n", ns)
	if want := `admission webhook "scale.tabula.dev" denied the request: at most 3 replicas`; !strings.Contains(r.stderr, want) {
		t.Errorf("scale to 5:\n%s\nwant %q", r, want)
	}
	// (An update may be admitted again when it is retried, as inside
	// kube-apiserver's optimistic update loop.)
	if reqs := h.requests("/deny-big-scale"); len(reqs) < 2 || reqs[len(reqs)-1].Kind.Kind != "Scale" || reqs[len(reqs)-1].SubResource != "scale" ||
		reqs[len(reqs)-1].Resource.Resource != "deployments" || reqs[len(reqs)-1].OldObject.Raw == nil {
		t.Errorf("the scale webhook's requests: %d", len(reqs))
	}
	for _, name := range []string{"evictee", "kept"} {
		if _, err := cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	err = cs.CoreV1().Pods(ns).Delete(ctx, "kept", metav1.DeleteOptions{})
	if want := `admission webhook "pod-delete.tabula.dev" denied the request: pods are not deleted here`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("pod delete: %v, want %q", err, want)
	}
	if err := cs.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "evictee", Namespace: ns}}); err != nil {
		t.Errorf("eviction: %v", err)
	}

	// A webhook named by a Service, called at its ready endpoint.
	if os.Getenv(kubeconfigEnv) == "" {
		serviceWebhook(t, cs, ns, h, inNS, cmRules)
	}
}

// serviceWebhook: the deny webhook named by a Service whose EndpointSlice
// lists the hook server's address.
func serviceWebhook(t *testing.T, cs kubernetes.Interface, ns string, h *hookServer, inNS *metav1.LabelSelector, rules []admissionregistrationv1.RuleWithOperations) {
	ctx := context.Background()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Spec: corev1.ServiceSpec{
		Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(h.port))}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "hooks-1", Labels: map[string]string{discoveryv1.LabelServiceName: "hooks"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{h.ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(h.port)), Protocol: ptr.To(corev1.ProtocolTCP)}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: ns + "-service"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "svc-deny.tabula.dev",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: h.ca,
				Service: &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "hooks", Path: ptr.To("/deny"), Port: ptr.To(int32(443))}},
			Rules: rules, NamespaceSelector: inNS, ObjectSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"via": "service"}},
			SideEffects: ptr.To(admissionregistrationv1.SideEffectClassNone), AdmissionReviewVersions: []string{"v1"}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, vwc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(context.Background(), vwc.Name, metav1.DeleteOptions{})
	})
	// Both the deny webhook (by URL) and this one (by Service) are shown
	// the object.
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "via-service", Labels: map[string]string{"via": "service"}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, r := range h.requests("/deny") {
		if r.Name == "via-service" {
			calls++
		}
	}
	if calls != 2 {
		t.Errorf("the deny path was called %d times for via-service, want 2 (by URL and through the Service)", calls)
	}
}

func conversionWebhookScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	ns := newNamespace(t, tg)
	h := startHookServer(t, "hooks."+ns+".svc")
	group := ns + ".tabula.dev"
	ext := apiextensionsclient.NewForConfigOrDie(tg.restConfig())
	schemaWith := func(field string) *apiextensionsv1.CustomResourceValidation {
		return &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object",
				Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}}}}}}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{ObjectMeta: metav1.ObjectMeta{Name: "widgets." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: group, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schemaWith("color")},
				{Name: "v2", Served: true, Schema: schemaWith("colour")},
			},
			Conversion: &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter,
				Webhook: &apiextensionsv1.WebhookConversion{ConversionReviewVersions: []string{"v1"},
					ClientConfig: &apiextensionsv1.WebhookClientConfig{URL: h.url("/convert"), CABundle: h.ca}}}}}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = ext.ApiextensionsV1().CustomResourceDefinitions().Delete(context.Background(), crd.Name, metav1.DeleteOptions{})
	})
	dyn, err := dynamic.NewForConfig(tg.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	v1 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}).Namespace(ns)
	v2 := dyn.Resource(schema.GroupVersionResource{Group: group, Version: "v2", Resource: "widgets"}).Namespace(ns)
	waitFor(t, "the CRD served in v2", 30*time.Second, func() (bool, string) {
		_, err := v2.List(ctx, metav1.ListOptions{})
		return err == nil, fmt.Sprint(err)
	})

	// Written in v2 (stored in v1 through the webhook), read in both.
	w := &unstructured.Unstructured{Object: map[string]any{"apiVersion": group + "/v2", "kind": "Widget",
		"metadata": map[string]any{"name": "w1"}, "spec": map[string]any{"colour": "red"}}}
	if _, err := v2.Create(ctx, w, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create in v2: %v", err)
	}
	read := func(c dynamic.ResourceInterface, field string) string {
		t.Helper()
		got, err := c.Get(ctx, "w1", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		s, _, _ := unstructured.NestedString(got.Object, "spec", field)
		return s
	}
	if got := read(v1, "color"); got != "red" {
		t.Errorf("v1 spec.color = %q, want red", got)
	}
	if got := read(v2, "colour"); got != "red" {
		t.Errorf("v2 spec.colour = %q, want red", got)
	}
	// Updated in v1, listed in v2.
	obj, err := v1.Get(ctx, "w1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = unstructured.SetNestedField(obj.Object, "blue", "spec", "color")
	if _, err := v1.Update(ctx, obj, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("update in v1: %v", err)
	}
	list, err := v2.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list in v2: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != group+"/v2" {
		t.Fatalf("list in v2: %v", list.Items)
	}
	if c, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "colour"); c != "blue" {
		t.Errorf("listed in v2: spec.colour = %q, want blue", c)
	}
	// The storage version moves to v2. w1, stored in v1, is read from the
	// version it was stored in, converted: whole in both versions (it was
	// read as if stored in v2, and pruned to nothing).
	hash := func() string {
		rl, err := tg.clientset(t).Discovery().ServerResourcesForGroupVersion(group + "/v1")
		if err != nil {
			return ""
		}
		for _, r := range rl.APIResources {
			if r.Name == "widgets" {
				return r.StorageVersionHash
			}
		}
		return ""
	}
	before := hash()
	cur, err := ext.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Versions[0].Storage, cur.Spec.Versions[1].Storage = false, true
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("storage version to v2: %v", err)
	}
	waitFor(t, "v2 the storage version in discovery", 30*time.Second, func() (bool, string) {
		h := hash()
		return h != "" && h != before, h
	})
	if got := read(v1, "color"); got != "blue" {
		t.Errorf("after the storage version moved: v1 spec.color = %q, want blue", got)
	}
	if got := read(v2, "colour"); got != "blue" {
		t.Errorf("after the storage version moved: v2 spec.colour = %q, want blue", got)
	}
	// kubectl reads the preferred version.
	k := newKubectl(t, tg)
	if out := k.ok(t, "get", "widgets."+group, "w1", "-n", ns, "-o", "jsonpath={.apiVersion} {.spec}"); !strings.Contains(out, group+"/v") || !strings.Contains(out, "blue") {
		t.Errorf("kubectl get: %q", out)
	}
}

// warningCollector keeps the warnings a client was sent.
type warningCollector struct {
	mu sync.Mutex
	w  []string
}

func (c *warningCollector) HandleWarningHeader(code int, agent, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.w = append(c.w, text)
}

func (c *warningCollector) all() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.w...)
}

var _ rest.WarningHandler = (*warningCollector)(nil)

// hostIP is an IPv4 address of this machine other than loopback (an
// EndpointSlice may not list a loopback address).
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address on this machine for a webhook Service's endpoint")
	return ""
}

// closedPort is a port nothing listens on.
func closedPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	return p
}

// selfSignedCert is a serving certificate that is its own CA.
func selfSignedCert(t *testing.T, dns []string, ips []net.IP) (tls.Certificate, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: "tabula webhook test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage:    x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, DNSNames: dns, IPAddresses: ips}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	certPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(certPEM, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}))
	if err != nil {
		t.Fatal(err)
	}
	return cert, certPEM
}
