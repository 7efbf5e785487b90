package server_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	remotecommandconsts "k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	kubeletportforward "k8s.io/kubelet/pkg/cri/streaming/portforward"
	kubeletremotecommand "k8s.io/kubelet/pkg/cri/streaming/remotecommand"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// testKubelet serves a kubelet's streaming endpoints with the kubelet's
// own stream handlers (k8s.io/kubelet's remotecommand and portforward),
// behind TLS that requires a client certificate of the cluster's CA, as a
// kubelet's does. Its "containers" answer with what they were asked.
type testKubelet struct {
	*httptest.Server
	// follow, when closed, lets a followed log end; following holds the
	// context of the kubelet's side of that log while it waits.
	follow    chan struct{}
	following chan context.Context
}

func newTestKubelet(t *testing.T, host string, pki *auth.PKI) *testKubelet {
	t.Helper()
	k := &testKubelet{follow: make(chan struct{}), following: make(chan context.Context, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		if r.PathValue("container") == "waiting" {
			http.Error(w, "container \"waiting\" in pod \"p\" is waiting to start: ContainerCreating", http.StatusBadRequest)
			return
		}
		fmt.Fprintf(w, "log of %s/%s/%s %s\n", r.PathValue("ns"), r.PathValue("pod"), r.PathValue("container"), r.URL.RawQuery)
		if r.URL.Query().Get("follow") == "true" {
			w.(http.Flusher).Flush()
			select {
			case k.following <- r.Context():
			default:
			}
			select {
			case <-k.follow:
				fmt.Fprintln(w, "after follow")
			case <-r.Context().Done(): // the API server hung up
			}
		}
	})
	mux.HandleFunc("/exec/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		opts, err := kubeletremotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kubeletremotecommand.ServeExec(w, r, echoRuntime{}, r.PathValue("pod"), "", r.PathValue("container"), r.URL.Query()["command"],
			opts, time.Minute, 30*time.Second, remotecommandconsts.SupportedStreamingProtocols)
	})
	mux.HandleFunc("/attach/{ns}/{pod}/{container}", func(w http.ResponseWriter, r *http.Request) {
		opts, err := kubeletremotecommand.NewOptions(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kubeletremotecommand.ServeAttach(w, r, echoRuntime{}, r.PathValue("pod"), "", r.PathValue("container"),
			opts, time.Minute, 30*time.Second, remotecommandconsts.SupportedStreamingProtocols)
	})
	mux.HandleFunc("/portForward/{ns}/{pod}", func(w http.ResponseWriter, r *http.Request) {
		opts, err := kubeletportforward.NewV4Options(r)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		kubeletportforward.ServePortForward(w, r, echoRuntime{}, r.PathValue("pod"), "", opts, time.Minute, 30*time.Second,
			[]string{kubeletportforward.ProtocolV1Name})
	})
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "kubelet metrics for %s; authorization %q", r.TLS.PeerCertificates[0].Subject.CommonName, r.Header.Get("Authorization"))
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		t.Fatal(err)
	}
	k.Server = httptest.NewUnstartedServer(mux)
	k.Listener.Close()
	k.Listener = ln
	k.TLS = &tls.Config{Certificates: []tls.Certificate{pki.ServingCert}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pki.CAPool}
	k.StartTLS()
	t.Cleanup(k.Close)
	return k
}

func (k *testKubelet) port(t *testing.T) int32 {
	_, p, _ := net.SplitHostPort(k.Listener.Addr().String())
	n, err := strconv.Atoi(p)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// echoRuntime is the test kubelet's container runtime: exec writes its
// command and what it read on stdin, attach says so, a forwarded port
// writes its number.
type echoRuntime struct{}

func (echoRuntime) ExecInContainer(_ context.Context, pod string, _ types.UID, container string, cmd []string, in io.Reader, out, errw io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize, _ time.Duration) error {
	var stdin []byte
	if in != nil {
		stdin, _ = io.ReadAll(in)
	}
	fmt.Fprintf(out, "%s/%s ran %q with stdin %q", pod, container, cmd, stdin)
	if errw != nil {
		fmt.Fprint(errw, "to stderr")
	}
	return nil
}

func (echoRuntime) AttachContainer(_ context.Context, pod string, _ types.UID, container string, _ io.Reader, out, _ io.WriteCloser, _ bool, _ <-chan remotecommand.TerminalSize) error {
	fmt.Fprintf(out, "attached to %s/%s", pod, container)
	return nil
}

func (echoRuntime) PortForward(_ context.Context, pod string, _ types.UID, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	_, err := fmt.Fprintf(stream, "%s port %d", pod, port)
	return err
}

// globalUnicastAddress is an address of this machine that kube-apiserver
// would proxy a node to (it refuses loopback and link-local ones).
func globalUnicastAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.IsGlobalUnicast() && ipn.IP.To4() != nil {
			return ipn.IP.String()
		}
	}
	t.Fatalf("no global unicast IPv4 address on this machine (have %v): the node proxy refuses others, as kube-apiserver does", addrs)
	return ""
}

// TestKubeletStreams: logs, exec, attach and port-forward reach the Pod's
// kubelet with the API server's client certificate, over SPDY and over
// WebSocket as client-go and kubectl speak them; the node, pod and
// service proxies relay without the client's credentials; and a kubelet
// that is not there, or refuses, is reported as kube-apiserver reports it.
func TestKubeletStreams(t *testing.T) {
	host := globalUnicastAddress(t)
	pki, err := auth.EnsurePKI(t.TempDir(), []string{host})
	if err != nil {
		t.Fatal(err)
	}
	kubelet := newTestKubelet(t, host, pki)
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://:memory:"), Kubelet: server.KubeletConfig{
		TLSClientConfig: server.KubeletTLSConfig{CertFile: pki.KubeletClientCertPath, KeyFile: pki.KubeletClientKeyPath, CAFile: pki.CACertPath},
	}})
	api := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(api.Close)
	cfg := &rest.Config{Host: api.URL, BearerToken: "a-users-token", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cs := kubernetes.NewForConfigOrDie(cfg)
	ctx := context.Background()

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: host}},
		DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: kubelet.port(t)}},
	}}
	if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"app": "p"}}, Spec: corev1.PodSpec{NodeName: "n1",
		Containers: []corev1.Container{{Name: "c", Image: "busybox"}, {Name: "waiting", Image: "busybox"}}}}
	if _, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	t.Run("logs", func(t *testing.T) {
		tail := int64(2)
		b, err := cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Container: "c", TailLines: &tail, Timestamps: true}).DoRaw(ctx)
		if err != nil || string(b) != "log of default/p/c tailLines=2&timestamps=true\n" {
			t.Errorf("logs: %q %v", b, err)
		}
		// A followed log reaches the client as the kubelet writes it. It
		// is long-running: as on kube-apiserver, no request deadline cuts
		// it, and ?timeout is not read (neither "abc" nor 100ms).
		rc, err := cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Container: "c", Follow: true}).Param("timeout", "100ms").Stream(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer rc.Close()
		buf := make([]byte, 256)
		n, err := rc.Read(buf)
		if err != nil || string(buf[:n]) != "log of default/p/c follow=true\n" {
			t.Fatalf("first line of a followed log: %q %v", buf[:n], err)
		}
		// Nothing can signal a deadline that never comes: the kubelet's
		// request must outlive ten times the one asked for.
		select {
		case <-(<-kubelet.following).Done():
			t.Fatal("the followed log was cut at its ?timeout")
		case <-time.After(time.Second):
		}
		if b, err := cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Container: "c"}).Param("timeout", "abc").DoRaw(ctx); err != nil || string(b) != "log of default/p/c \n" {
			t.Errorf("log with ?timeout=abc: %q %v", b, err)
		}
		close(kubelet.follow)
		rest, err := io.ReadAll(rc)
		if err != nil || string(rest) != "after follow\n" {
			t.Errorf("rest of the followed log: %q %v", rest, err)
		}
		// The kubelet's refusal is the client's error, with its code
		// (Stream decodes an error Status as kubectl logs reads it).
		_, err = cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{Container: "waiting"}).Stream(ctx)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "is waiting to start: ContainerCreating") {
			t.Errorf("log of a waiting container: %v", err)
		}
		_, err = cs.CoreV1().Pods("default").GetLogs("p", &corev1.PodLogOptions{}).Stream(ctx)
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "a container name must be specified for pod p, choose one of: [c waiting]") {
			t.Errorf("log without a container: %v", err)
		}
	})

	execURL := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"ls", "-l"}, Stdin: true, Stdout: true, Stderr: true}, scheme.ParameterCodec).URL()
	spdyExec, err := remotecommand.NewSPDYExecutor(cfg, "POST", execURL)
	if err != nil {
		t.Fatal(err)
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", execURL.String())
	if err != nil {
		t.Fatal(err)
	}
	for name, exec := range map[string]remotecommand.Executor{"exec over SPDY": spdyExec, "exec over WebSocket": wsExec} {
		t.Run(name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("input"), Stdout: &stdout, Stderr: &stderr})
			if err != nil || stdout.String() != `p/c ran ["ls" "-l"] with stdin "input"` || stderr.String() != "to stderr" {
				t.Errorf("stdout %q stderr %q err %v", stdout.String(), stderr.String(), err)
			}
		})
	}

	t.Run("attach", func(t *testing.T) {
		u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("attach").
			VersionedParams(&corev1.PodAttachOptions{Container: "c", Stdout: true}, scheme.ParameterCodec).URL()
		exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
		if err != nil {
			t.Fatal(err)
		}
		var stdout bytes.Buffer
		if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout}); err != nil || stdout.String() != "attached to p/c" {
			t.Errorf("attach: %q %v", stdout.String(), err)
		}
	})

	pfURL := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("portforward").URL()
	rt, upgrader, err := spdy.RoundTripperFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tunnel, err := portforward.NewSPDYOverWebsocketDialer(pfURL, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for name, d := range map[string]httpstream.Dialer{
		"port-forward over SPDY":      spdy.NewDialer(upgrader, &http.Client{Transport: rt}, "POST", pfURL),
		"port-forward over WebSocket": tunnel,
	} {
		t.Run(name, func(t *testing.T) {
			stop, ready := make(chan struct{}), make(chan struct{})
			fw, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- fw.ForwardPorts() }()
			defer func() { close(stop); <-done }()
			select {
			case <-ready:
			case err := <-done:
				t.Fatalf("port-forward ended before it was ready: %v", err)
			}
			ports, err := fw.GetPorts()
			if err != nil {
				t.Fatal(err)
			}
			conn, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(int(ports[0].Local))))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			b, err := io.ReadAll(conn)
			if err != nil || string(b) != "p port 8080" {
				t.Errorf("through the forwarded port: %q %v", b, err)
			}
		})
	}

	t.Run("node proxy", func(t *testing.T) {
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/n1/proxy/metrics").DoRaw(ctx)
		if err != nil || string(b) != `kubelet metrics for kube-apiserver-kubelet-client; authorization ""` {
			t.Errorf("node proxy: %q %v", b, err)
		}
	})

	t.Run("pod and service proxies", func(t *testing.T) {
		backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "pod answered %s; authorization %q", r.URL.Path, r.Header.Get("Authorization"))
		})}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
		if err != nil {
			t.Fatal(err)
		}
		go backend.Serve(ln)
		t.Cleanup(func() { backend.Close() })
		_, portText, _ := net.SplitHostPort(ln.Addr().String())
		port, _ := strconv.Atoi(portText)
		p, err := cs.CoreV1().Pods("default").Get(ctx, "p", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.PodIP, p.Status.PodIPs = host, []corev1.PodIP{{IP: host}}
		if _, err := cs.CoreV1().Pods("default").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/pods/p:" + portText + "/proxy/hello/").DoRaw(ctx)
		if err != nil || string(b) != `pod answered /hello/; authorization ""` {
			t.Errorf("pod proxy: %q %v", b, err)
		}
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}}}
		if _, err := cs.CoreV1().Services("default").Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		eps := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "web"}, Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: host, TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"}}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: int32(port)}},
		}}}
		if _, err := cs.CoreV1().Endpoints("default").Create(ctx, eps, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		b, err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/web:80/proxy/index").DoRaw(ctx)
		if err != nil || string(b) != `pod answered /index; authorization ""` {
			t.Errorf("service proxy: %q %v", b, err)
		}
		err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/web:81/proxy/").Do(ctx).Error()
		if !apierrors.IsServiceUnavailable(err) || !strings.Contains(err.Error(), `no service port 81 found for service "web"`) {
			t.Errorf("service proxy to a port the Service lacks: %v", err)
		}
	})

	t.Run("no kubelet", func(t *testing.T) {
		// A node whose kubelet does not listen: kube-apiserver's 500
		// naming the dial error, for logs and for streams.
		closed, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, deadPort, _ := net.SplitHostPort(closed.Addr().String())
		closed.Close()
		dp, _ := strconv.Atoi(deadPort)
		gone := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "gone"}, Status: corev1.NodeStatus{
			Addresses:       []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: "127.0.0.1"}},
			DaemonEndpoints: corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: int32(dp)}},
		}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, gone, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "orphan"}, Spec: corev1.PodSpec{NodeName: "gone", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
		if _, err := cs.CoreV1().Pods("default").Create(ctx, orphan, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err = cs.CoreV1().Pods("default").GetLogs("orphan", &corev1.PodLogOptions{}).Stream(ctx)
		if !apierrors.IsInternalError(err) || !strings.Contains(err.Error(), "connection refused") {
			t.Errorf("log from a node without a kubelet: %v", err)
		}
		u := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("orphan").SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Command: []string{"true"}, Stdout: true}, scheme.ParameterCodec).URL()
		exec, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
		if err != nil {
			t.Fatal(err)
		}
		err = exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard})
		if err == nil || !strings.Contains(err.Error(), "error dialing backend") {
			t.Errorf("exec on a node without a kubelet: %v", err)
		}
		// kube-apiserver refuses to proxy to a loopback node address.
		err = cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/gone/proxy/metrics").Do(ctx).Error()
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "address not allowed") {
			t.Errorf("proxy to a loopback node: %v", err)
		}
	})
}

// TestWebSocketStreamsNeedCreate: exec, attach and port-forward over
// WebSocket are GETs, but, as on kube-apiserver 1.35, running one needs
// the create verb on the subresource as well; get alone is refused before
// anything reaches the kubelet.
func TestWebSocketStreamsNeedCreate(t *testing.T) {
	host := globalUnicastAddress(t)
	pki, err := auth.EnsurePKI(t.TempDir(), []string{host})
	if err != nil {
		t.Fatal(err)
	}
	kubelet := newTestKubelet(t, host, pki)
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-bob,bob,3\n", server.Config{Kubelet: server.KubeletConfig{
		TLSClientConfig: server.KubeletTLSConfig{CertFile: pki.KubeletClientCertPath, KeyFile: pki.KubeletClientKeyPath, CAFile: pki.CACertPath},
	}})
	root := func(method, path, body string, want int) {
		t.Helper()
		if rec := h.do(method, path, as("tok-root"), []byte(body)); rec.Code != want {
			t.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
		}
	}
	root("POST", "/api/v1/nodes", fmt.Sprintf(`{"metadata":{"name":"n1"},"status":{"addresses":[{"type":"InternalIP","address":%q}],"daemonEndpoints":{"kubeletEndpoint":{"Port":%d}}}}`, host, kubelet.port(t)), http.StatusCreated)
	root("POST", "/api/v1/namespaces/default/pods", `{"metadata":{"name":"p"},"spec":{"nodeName":"n1","containers":[{"name":"c","image":"busybox"}]}}`, http.StatusCreated)
	root("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles", `{"metadata":{"name":"streams"},"rules":[{"apiGroups":[""],"resources":["pods/exec","pods/attach","pods/portforward"],"verbs":["get"]}]}`, http.StatusCreated)
	root("POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", `{"metadata":{"name":"streams"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role","name":"streams"},"subjects":[{"kind":"User","name":"bob"}]}`, http.StatusCreated)

	upgrade := as("tok-bob", "Connection", "Upgrade", "Upgrade", "websocket", "Sec-WebSocket-Version", "13",
		"Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol", "v5.channel.k8s.io")
	for _, path := range []string{"exec?command=id&stdout=true&container=c", "attach?stdout=true&container=c", "portforward?ports=80"} {
		rec := h.do("GET", "/api/v1/namespaces/default/pods/p/"+path, upgrade, nil)
		var st metav1.Status
		_ = json.Unmarshal(rec.Body.Bytes(), &st)
		if rec.Code != http.StatusForbidden || st.Reason != metav1.StatusReasonForbidden || !strings.HasPrefix(st.Message, `pods "p" is forbidden`) ||
			st.Details == nil || st.Details.Kind != "pods" || st.Details.Name != "p" {
			t.Errorf("%s with get alone: %d %s", path, rec.Code, rec.Body.String())
		}
	}

	// With create too, the WebSocket exec runs.
	root("PUT", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/roles/streams", `{"metadata":{"name":"streams"},"rules":[{"apiGroups":[""],"resources":["pods/exec","pods/attach","pods/portforward"],"verbs":["get","create"]}]}`, http.StatusOK)
	api := httptest.NewTLSServer(srv.Handler())
	t.Cleanup(api.Close)
	cfg := &rest.Config{Host: api.URL, BearerToken: "tok-bob", TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	u := kubernetes.NewForConfigOrDie(cfg).CoreV1().RESTClient().Post().Resource("pods").Namespace("default").Name("p").SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: "c", Command: []string{"id"}, Stdout: true}, scheme.ParameterCodec).URL()
	exec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", u.String())
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	if err := exec.StreamWithContext(context.Background(), remotecommand.StreamOptions{Stdout: &stdout}); err != nil || stdout.String() != `p/c ran ["id"] with stdin ""` {
		t.Errorf("exec with get and create: %q %v", stdout.String(), err)
	}
}
