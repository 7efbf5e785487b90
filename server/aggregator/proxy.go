package aggregator

import (
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/proxy"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	apiserverproxy "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/transport"
)

// User is who the request is proxied for.
type User struct {
	Name, UID string
	Groups    []string
	Extra     map[string][]string
}

// Proxy relays an authenticated, authorized request to t's Service as
// kube-aggregator does: to a ready endpoint (or the cluster IP, per the
// registry's routing), the path and query as they came, the user in the
// front proxy's headers, errors in kube-aggregator's plain-text answers.
func (a *Aggregator) Proxy(w http.ResponseWriter, r *http.Request, t *Target, u User) {
	if !t.Available {
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	if t.transportErr != nil {
		http.Error(w, t.transportErr.Error(), http.StatusInternalServerError)
		return
	}
	loc, err := a.resolver.ResolveEndpoint(t.Namespace, t.Service, t.Port)
	if err != nil {
		a.cfg.Logger.Warn("aggregated API: no endpoint", "apiservice", t.api.Name, "err", err)
		http.Error(w, "service unavailable", http.StatusServiceUnavailable)
		return
	}
	location := &url.URL{Scheme: "https", Host: loc.Host, Path: r.URL.Path, RawQuery: r.URL.Query().Encode()}
	req, cancel := apiserverproxy.NewRequestForProxy(location, r)
	defer cancel()
	// The extension server learns the user from the headers the proxy's
	// certificate vouches for (authentication removed the caller's own
	// credentials, impersonation its headers); the uid only with kube's
	// RemoteRequestHeaderUID gate.
	uid := ""
	if utilfeature.DefaultFeatureGate.Enabled(genericfeatures.RemoteRequestHeaderUID) {
		uid = u.UID
	}
	upgrade := httpstream.IsUpgradeRequest(r)
	rt := transport.NewAuthProxyRoundTripper(u.Name, uid, u.Groups, u.Extra, t.transport)
	if upgrade {
		transport.SetAuthProxyHeaders(req, u.Name, uid, u.Groups, u.Extra)
	}
	h := proxy.NewUpgradeAwareHandler(location, rt, true, upgrade, errorResponder{w})
	h.RejectForwardingRedirects = true
	h.ServeHTTP(w, req)
}

// errorResponder answers a failed relay as kube-aggregator does.
type errorResponder struct{ w http.ResponseWriter }

func (e errorResponder) Error(_ http.ResponseWriter, _ *http.Request, err error) {
	http.Error(e.w, err.Error(), http.StatusServiceUnavailable)
}
