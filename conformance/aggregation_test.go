package conformance

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	aggregatorclient "k8s.io/kube-aggregator/pkg/client/clientset_generated/clientset"
	"k8s.io/utils/ptr"
)

// metrics-server, the extension API server `kubectl top` reads, built
// from the module proxy.
const metricsServerModule = "sigs.k8s.io/metrics-server/cmd/metrics-server@v0.8.0"

var metricsServerBin suiteArtifact

func metricsServerBinary() (string, error) {
	return metricsServerBin.get(func(dir string) (string, error) {
		out := filepath.Join(dir, "metrics-server-bin")
		if _, err := goOutside(dir, []string{"GOBIN=" + out}, "install", metricsServerModule); err != nil {
			return "", err
		}
		return filepath.Join(out, "metrics-server"), nil
	})
}

// TestAggregatedAPIs: an unmodified metrics-server registered by an
// APIService backed by a Service answers through the server as it does
// through kube-apiserver's aggregator: the APIService turns Available
// once its discovery answers, its group joins legacy and aggregated
// discovery, its OpenAPI v3 document joins the server's index (read from
// metrics-server; `kubectl explain` describes its kinds), `kubectl top`
// reads pod and node metrics (metrics-server
// trusting the server's front-proxy certificate from
// extension-apiserver-authentication and asking it, by
// SubjectAccessReview, about the user the proxy names), a user RBAC
// does not allow is refused before the proxy, and an APIService whose
// Service is missing is unavailable with kube's reason and answers 503.
func TestAggregatedAPIs(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "metrics-server", func(t *testing.T) { metricsServerScenario(t, tg) })
	})
}

func metricsServerScenario(t *testing.T, tg *target) {
	bin, err := metricsServerBinary()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cs := tg.clientset(t)
	agg, err := aggregatorclient.NewForConfig(tg.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	k := newKubectl(t, tg)
	ns := newNamespace(t, tg)

	// A kubelet's resource metrics endpoint for one node and one pod:
	// a quarter core and 32 MiB for the container, half a core and
	// 1 GiB for the node.
	node, pod := uniqueName("metrics-node"), "busy"
	kubelet := startResourceMetrics(t, ns, pod)
	createMetricsNode(t, cs, node, kubelet)
	createRunningPod(t, cs, ns, pod, node)

	// metrics-server on this machine's address with a certificate for its
	// Service's name, reached through a selectorless Service and its
	// EndpointSlice.
	ip := hostIP(t)
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cert, caPEM := selfSignedCert(t, []string{"metrics-server." + ns + ".svc"}, nil)
	writeServingCert(t, dir, cert)
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	startMember(t, dir, "metrics-server", bin, nil,
		"--kubeconfig", tg.Kubeconfig, "--authentication-kubeconfig", tg.Kubeconfig, "--authorization-kubeconfig", tg.Kubeconfig,
		"--bind-address", ip, "--secure-port", strconv.Itoa(port), "--tls-cert-file", certFile, "--tls-private-key-file", keyFile,
		"--kubelet-insecure-tls", "--kubelet-use-node-status-port", "--kubelet-preferred-address-types", "InternalIP",
		"--kubelet-request-timeout", "2s", "--metric-resolution", "10s")
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 443, TargetPort: intstr.FromInt32(int32(port))}}}}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "metrics-server-1", Labels: map[string]string{discoveryv1.LabelServiceName: "metrics-server"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port))}}}
	if _, err := cs.DiscoveryV1().EndpointSlices(ns).Create(ctx, slice, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// As metrics-server's own manifest registers it (its CA bundle given
	// instead of insecureSkipTLSVerify).
	apiService := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1beta1.metrics.k8s.io"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "metrics.k8s.io", Version: "v1beta1", CABundle: caPEM,
			Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: "metrics-server", Port: ptr.To(int32(443))},
			GroupPriorityMinimum: 100, VersionPriority: 100}}
	registerAPIService(t, agg, apiService)
	waitAvailable(t, agg, apiService.Name, apiregistrationv1.ConditionTrue, "Passed", "all checks passed")
	if out := k.ok(t, "get", "apiservice", apiService.Name); !strings.Contains(out, ns+"/metrics-server") || !strings.Contains(out, "True") {
		t.Errorf("kubectl get apiservice:\n%s", out)
	}

	// Discovery: the group in /apis (legacy and aggregated, with the
	// server's resources) and its resources listed by kubectl.
	raw := k.ok(t, "get", "--raw", "/apis")
	var groups metav1.APIGroupList
	if err := json.Unmarshal([]byte(raw), &groups); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, g := range groups.Groups {
		if g.Name == "metrics.k8s.io" {
			found = g.PreferredVersion.GroupVersion == "metrics.k8s.io/v1beta1"
		}
	}
	if !found {
		t.Errorf("/apis lacks metrics.k8s.io with v1beta1 preferred:\n%s", raw)
	}
	waitFor(t, "metrics.k8s.io in aggregated discovery", time.Minute, func() (bool, string) {
		v, err := aggregatedVersion(tg, "metrics.k8s.io", "v1beta1")
		if err != nil {
			return false, err.Error()
		}
		var names []string
		for _, r := range v.Resources {
			names = append(names, r.Resource)
		}
		return v.Freshness == apidiscoveryv2.DiscoveryFreshnessCurrent && strings.Join(names, ",") == "nodes,pods",
			fmt.Sprintf("%s %v", v.Freshness, names)
	})
	if out := k.ok(t, "api-resources", "--api-group", "metrics.k8s.io", "-o", "name"); out != "nodes.metrics.k8s.io\npods.metrics.k8s.io\n" {
		t.Errorf("kubectl api-resources --api-group metrics.k8s.io:\n%s", out)
	}

	// OpenAPI v3: the index lists metrics-server's document for the
	// group-version, read from metrics-server through the server, and
	// kubectl explain describes its kinds from it.
	var entry string
	waitFor(t, "metrics.k8s.io/v1beta1 in the OpenAPI v3 index", 3*time.Minute, func() (bool, string) {
		raw := k.ok(t, "get", "--raw", "/openapi/v3")
		var index struct {
			Paths map[string]struct {
				ServerRelativeURL string `json:"serverRelativeURL"`
			} `json:"paths"`
		}
		if err := json.Unmarshal([]byte(raw), &index); err != nil {
			return false, err.Error()
		}
		entry = index.Paths["apis/metrics.k8s.io/v1beta1"].ServerRelativeURL
		return entry != "" && index.Paths["api/v1"].ServerRelativeURL != "", raw
	})
	if doc := k.ok(t, "get", "--raw", entry); !strings.Contains(doc, `"io.k8s.metrics.pkg.apis.metrics.v1beta1.PodMetrics"`) || !strings.Contains(doc, `"/apis/metrics.k8s.io/v1beta1/namespaces/{namespace}/pods"`) {
		t.Errorf("%s: no PodMetrics schema or pods path in\n%.2000s", entry, doc)
	}
	if out := k.ok(t, "explain", "pods.containers", "--api-version", "metrics.k8s.io/v1beta1"); !strings.Contains(out, "PodMetrics") || !strings.Contains(out, "usage") {
		t.Errorf("kubectl explain pods.containers --api-version metrics.k8s.io/v1beta1:\n%s", out)
	}

	// kubectl top, once metrics-server has scraped twice.
	var top string
	waitFor(t, "kubectl top pod to show the pod's usage", 2*time.Minute, func() (bool, string) {
		r := k.run(t, "top", "pod", "-n", ns, "--no-headers")
		top = r.stdout + r.stderr
		return r.code == 0 && strings.Contains(r.stdout, pod), top
	})
	if f := strings.Fields(top); len(f) != 3 || f[0] != pod || f[1] != "250m" || f[2] != "32Mi" {
		t.Errorf("kubectl top pod: got %q, want %s 250m 32Mi", top, pod)
	}
	waitFor(t, "kubectl top node to show the node's usage", time.Minute, func() (bool, string) {
		r := k.run(t, "top", "node", node, "--no-headers")
		top = r.stdout + r.stderr
		return r.code == 0, top
	})
	if f := strings.Fields(top); len(f) < 3 || f[0] != node || f[1] != "500m" {
		t.Errorf("kubectl top node: got %q, want %s 500m …", top, node)
	}

	// A user RBAC lets read pod metrics in this namespace reads them
	// (metrics-server asks the server about the user the proxy named);
	// another is refused by the server before the proxy.
	role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{"metrics.k8s.io"}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}}}}
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, role, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	binding := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: "User", Name: "dana"}}}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "dana to read pod metrics", time.Minute, func() (bool, string) {
		r := k.run(t, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods", "--as", "dana")
		return r.code == 0 && strings.Contains(r.stdout, `"name":"`+pod+`"`), r.stdout + r.stderr
	})
	r := k.fails(t, runOpts{}, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/"+ns+"/pods", "--as", "erin")
	if want := `pods.metrics.k8s.io is forbidden: User "erin" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "` + ns + `"`; !strings.Contains(r.stderr, want) {
		t.Errorf("erin: got %s, want %s", r, want)
	}

	// An APIService whose Service does not exist: kube's reason, and 503
	// for its requests.
	missing := &apiregistrationv1.APIService{ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.missing.tabula.dev"},
		Spec: apiregistrationv1.APIServiceSpec{Group: "missing.tabula.dev", Version: "v1alpha1", InsecureSkipTLSVerify: true,
			Service:              &apiregistrationv1.ServiceReference{Namespace: ns, Name: "nothing", Port: ptr.To(int32(443))},
			GroupPriorityMinimum: 100, VersionPriority: 100}}
	registerAPIService(t, agg, missing)
	waitAvailable(t, agg, missing.Name, apiregistrationv1.ConditionFalse, "ServiceNotFound", fmt.Sprintf(`service/nothing in %q is not present`, ns))
	res := cs.Discovery().RESTClient().Get().AbsPath("/apis/missing.tabula.dev/v1alpha1/things").Do(ctx)
	var code int
	res.StatusCode(&code)
	body, _ := res.Raw()
	if code != http.StatusServiceUnavailable || !strings.Contains(string(body), "service unavailable") {
		t.Errorf("a request for the unavailable group: got %d %s, want 503 service unavailable", code, body)
	}
}

// registerAPIService creates s, deleted when the test ends.
func registerAPIService(t *testing.T, agg aggregatorclient.Interface, s *apiregistrationv1.APIService) {
	t.Helper()
	ctx := context.Background()
	if _, err := agg.ApiregistrationV1().APIServices().Create(ctx, s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = agg.ApiregistrationV1().APIServices().Delete(ctx, s.Name, metav1.DeleteOptions{}) })
}

// waitAvailable waits for an APIService's Available condition to say
// status, reason and message.
func waitAvailable(t *testing.T, agg aggregatorclient.Interface, name string, status apiregistrationv1.ConditionStatus, reason, message string) {
	t.Helper()
	waitFor(t, fmt.Sprintf("APIService %s to be Available=%s", name, status), 2*time.Minute, func() (bool, string) {
		s, err := agg.ApiregistrationV1().APIServices().Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range s.Status.Conditions {
			if c.Type == apiregistrationv1.Available {
				return c.Status == status && c.Reason == reason && c.Message == message, fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return false, "no Available condition"
	})
}

// aggregatedVersion reads one group-version from aggregated discovery.
func aggregatedVersion(tg *target, group, version string) (*apidiscoveryv2.APIVersionDiscovery, error) {
	c := tg.restConfig()
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequest(http.MethodGet, strings.TrimSuffix(c.Host, "/")+"/apis", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
	resp, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var list apidiscoveryv2.APIGroupDiscoveryList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, err
	}
	for _, g := range list.Items {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			if v.Version == version {
				return &v, nil
			}
		}
	}
	return nil, fmt.Errorf("%s/%s not in aggregated discovery", group, version)
}

// startResourceMetrics serves a kubelet's /metrics/resource over TLS on
// 127.0.0.1: counters growing at a quarter core (the container) and half
// a core (the node) from the time it starts.
func startResourceMetrics(t *testing.T, ns, pod string) int {
	t.Helper()
	start := time.Now()
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics/resource" {
			http.NotFound(w, r)
			return
		}
		// The counters follow the millisecond timestamps they are sent
		// with, so the rates come out exact.
		ms := time.Now().UnixMilli()
		elapsed := float64(ms-start.UnixMilli()) / 1000
		labels := fmt.Sprintf(`{container="app",namespace=%q,pod=%q}`, ns, pod)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "# TYPE container_cpu_usage_seconds_total counter\ncontainer_cpu_usage_seconds_total%s %g %d\n", labels, 0.25*elapsed, ms)
		fmt.Fprintf(w, "# TYPE container_memory_working_set_bytes gauge\ncontainer_memory_working_set_bytes%s %d %d\n", labels, 32<<20, ms)
		fmt.Fprintf(w, "# TYPE container_start_time_seconds gauge\ncontainer_start_time_seconds%s %d %d\n", labels, start.Add(-time.Hour).Unix(), ms)
		fmt.Fprintf(w, "# TYPE node_cpu_usage_seconds_total counter\nnode_cpu_usage_seconds_total %g %d\n", 0.5*elapsed, ms)
		fmt.Fprintf(w, "# TYPE node_memory_working_set_bytes gauge\nnode_memory_working_set_bytes %d %d\n", 1<<30, ms)
		fmt.Fprintf(w, "# TYPE scrape_error gauge\nscrape_error 0\n")
	}))
	cert, _ := selfSignedCert(t, nil, []net.IP{net.ParseIP("127.0.0.1")})
	srv.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().(*net.TCPAddr).Port
}

// createMetricsNode registers a node whose kubelet is at
// 127.0.0.1:port.
func createMetricsNode(t *testing.T, cs kubernetes.Interface, name string, port int) {
	t.Helper()
	ctx := context.Background()
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n, err := cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{}) })
	n.Status = corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(port)}},
		Capacity:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Allocatable:     corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourceMemory: resource.MustParse("4Gi")},
		Conditions:      []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(), Reason: "KubeletReady"}},
	}
	if _, err := cs.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// createRunningPod makes a pod bound to node and reported Running.
func createRunningPod(t *testing.T, cs kubernetes.Interface, ns, name, node string) {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "app", Image: "busybox"}}}}
	p, err := cs.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	started := metav1.NewTime(time.Now().Add(-time.Hour))
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning, StartTime: &started,
		ContainerStatuses: []corev1.ContainerStatus{{Name: "app", Ready: true, Image: "busybox",
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}}}}}
	if _, err := cs.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}
