package server

import (
	"context"
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
)

// Pod logs, exec, attach, port-forward and the node proxy go to the
// kubelet of the Pod's Node, found and reached as kube-apiserver finds and
// reaches it (k8s.io/kubernetes/pkg/kubelet/client: the node's preferred
// address, its daemonEndpoints port, a client certificate), and are
// relayed by kube-apiserver's own proxy handlers: SPDY and WebSocket
// upgrades pass through, and WebSocket exec, attach and port-forward are
// translated to SPDY toward the kubelet as kube-apiserver 1.35 does.

// KubeletConfig is kube-apiserver's --kubelet-* settings.
type KubeletConfig = kubeletclient.KubeletClientConfig

// KubeletTLSConfig is the client certificate and CA of KubeletConfig.
type KubeletTLSConfig = kubeletclient.KubeletTLSConfig

// KubeletAddressTypes are the Node address types, in kube-apiserver's
// default order for --kubelet-preferred-address-types.
var KubeletAddressTypes = []string{
	string(corev1.NodeHostName), string(corev1.NodeInternalDNS), string(corev1.NodeInternalIP),
	string(corev1.NodeExternalDNS), string(corev1.NodeExternalIP),
}

// defaultKubeletPort is where a Node without daemonEndpoints is reached.
const defaultKubeletPort = 10250

// newKubeletConnections resolves Nodes through the registry.
func (s *Server) newKubeletConnections(cfg KubeletConfig) (kubeletclient.ConnectionInfoGetter, error) {
	if cfg.Port == 0 {
		cfg.Port = defaultKubeletPort
	}
	if len(cfg.PreferredAddressTypes) == 0 {
		cfg.PreferredAddressTypes = KubeletAddressTypes
	}
	nodes := kubeletclient.NodeGetterFunc(func(ctx context.Context, name string, _ metav1.GetOptions) (*corev1.Node, error) {
		obj, _, err := s.api.MustLookup("", "v1", "nodes").Get(ctx, "", name)
		if err != nil {
			return nil, err
		}
		return obj.(*corev1.Node), nil
	})
	return kubeletclient.NewNodeConnectionInfoGetter(nodes, cfg)
}

// newProxyTransport is what pods/proxy and a node proxy to a port other
// than the kubelet's use: kube-apiserver's, which does not verify the
// backend's certificate (the backend is named by the cluster's own
// objects, not by a DNS name a certificate could prove).
func newProxyTransport() http.RoundTripper {
	return utilnet.SetTransportDefaults(&http.Transport{
		DialContext:     (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	})
}

// connectOptions decodes a connect request's query into kube's internal
// options, as kube-apiserver's connect handler does; bad parameters are a
// 400.
func (r *request) connectOptions(into runtime.Object) error {
	if err := legacyscheme.ParameterCodec.DecodeParameters(r.c.QueryParams(), corev1.SchemeGroupVersion, into); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	return nil
}

// admitConnect passes a CONNECT (exec, attach, port-forward) through
// admission with its options in v1, before the stream opens.
func (r *request) admitConnect(opts runtime.Object) error {
	versioned, err := legacyscheme.Scheme.ConvertToVersion(opts, corev1.SchemeGroupVersion)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return r.s.api.MustLookup("", "v1", "pods").AdmitConnect(r.ctx, r.ri.Namespace, r.ri.Name, r.ri.Subresource, versioned)
}

// proxyPath is a proxy request's path below its object, with the
// leading slash, and the trailing one when the request had it.
func (r *request) proxyPath() string {
	p := r.ri.Subpath
	if p != "" && !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if strings.HasSuffix(r.c.Request().URL.Path, "/") && !strings.HasSuffix(p, "/") {
		p += "/"
	}
	return p
}

// relay serves the request through one of kube's proxy handlers (the
// authentication middleware removed the client's credentials).
func (r *request) relay(h http.Handler) error {
	h.ServeHTTP(r.c.Response(), r.c.Request().Clone(r.ctx))
	return nil
}

// proxyHandler relays to location: kube's UpgradeAwareHandler, errors
// answered as Status. wrap rewrites links in proxied pages (pod and node
// proxies); upgrade refuses plain requests (exec, attach, port-forward).
func (r *request) proxyHandler(location *url.URL, transport http.RoundTripper, wrap, upgrade bool) *proxy.UpgradeAwareHandler {
	return proxy.NewUpgradeAwareHandler(location, transport, wrap, upgrade, proxy.NewErrorResponder(connectResponder{r}))
}

// connectResponder answers a failed relay as kube-apiserver does: the
// error as a Status (an unreachable kubelet is a 500 naming the dial
// error).
type connectResponder struct{ r *request }

func (c connectResponder) Error(err error) {
	if !c.r.c.Response().Committed {
		c.r.s.errorHandler(err, c.r.c)
	}
}

// streamTranslated wraps an exec or attach relay so a WebSocket client
// speaking the stream-close protocol (kubectl 1.30+) is served here and
// the kubelet spoken to over SPDY.
func streamTranslated(h http.Handler, location *url.URL, transport http.RoundTripper, stdin, stdout, stderr, tty bool) http.Handler {
	t := translator.NewStreamTranslatorHandler(location, transport, 0, translator.Options{Stdin: stdin, Stdout: stdout, Stderr: stderr, Tty: tty})
	return translator.NewTranslatingHandler(h, t, wsstream.IsWebSocketRequestWithStreamCloseProtocol)
}

// writeStream sends what a LocationStreamer reads, as kube-apiserver's
// StreamObject does: 204 when there is nothing to read (a Pod no node
// runs yet), else the backend's bytes, flushed as they come when the
// client follows.
func (r *request) writeStream(s *genericrest.LocationStreamer) error {
	req := r.c.Request()
	out, flush, contentType, err := s.InputStream(r.ctx, "v1", req.Header.Get("Accept"))
	if err != nil {
		return err
	}
	if out == nil {
		return r.c.NoContent(http.StatusNoContent)
	}
	defer out.Close()
	w := r.c.Response()
	if wsstream.IsWebSocketRequest(req) {
		return wsstream.NewReader(out, true, wsstream.NewDefaultReaderProtocols()).Copy(w, req)
	}
	if contentType == "" {
		contentType = "application/octet-stream"
	}
	w.Header().Set("Content-Type", contentType)
	w.WriteHeader(http.StatusOK)
	w.Flush()
	var dst io.Writer = w
	if flush {
		dst = flushWriter{w}
	}
	_, err = io.Copy(dst, out)
	if err != nil && r.ctx.Err() == nil {
		r.s.log.Debug("stream from backend ended", "path", req.URL.Path, "err", err)
	}
	return nil
}

// flushWriter sends each write to the client at once (kubectl logs -f).
type flushWriter struct{ w http.ResponseWriter }

func (f flushWriter) Write(b []byte) (int, error) {
	n, err := f.w.Write(b)
	if fl, ok := f.w.(http.Flusher); ok {
		fl.Flush()
	}
	return n, err
}

// kubeletLocation is path on the kubelet of the Pod's Node, and the
// transport that reaches it (insecure: the kubelet's certificate not
// verified, when a log request asks so).
func (r *request) kubeletLocation(pod *corev1.Pod, path string, q url.Values, insecure bool) (*url.URL, http.RoundTripper, error) {
	info, err := r.s.kubelets.GetConnectionInfo(r.ctx, types.NodeName(pod.Spec.NodeName))
	if err != nil {
		return nil, nil, err
	}
	location := &url.URL{Scheme: info.Scheme, Host: net.JoinHostPort(info.Hostname, info.Port), Path: path, RawQuery: q.Encode()}
	if insecure {
		return location, info.InsecureSkipTLSVerifyTransport, nil
	}
	return location, info.Transport, nil
}
