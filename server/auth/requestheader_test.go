package auth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// TestRequestHeader: a front proxy whose certificate the request-header
// CA signed, with an allowed name, names the user in headers; the headers
// count for nothing without such a certificate, and are removed from
// every request either way.
func TestRequestHeader(t *testing.T) {
	proxy := mustPKI(t, t.TempDir()) // its CA stands for the front-proxy CA, its admin for the proxy
	cluster := mustPKI(t, t.TempDir())
	leaf, err := x509.ParseCertificate(proxy.AdminCert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	newAuth := func(allowed ...string) *Authenticator {
		a, err := NewAuthenticator(Options{ClientCA: cluster.CAPool, RequestHeader: &RequestHeader{
			ClientCA: proxy.CAPool, CAPEM: proxy.CAPEM, AllowedNames: allowed,
			UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"}, GroupHeaders: []string{"X-Remote-Group"},
			ExtraHeaderPrefixes: []string{"X-Remote-Extra-"},
		}})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	request := func(withProxyCert bool) *httptestRequest {
		r := httptest.NewRequest("GET", "/api", nil)
		if withProxyCert {
			r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{leaf}}
		}
		r.Header.Set("X-Remote-User", "carol")
		r.Header.Set("X-Remote-Uid", "c-1")
		r.Header.Add("X-Remote-Group", "devs")
		r.Header.Add("X-Remote-Group", "ops")
		r.Header.Set("X-Remote-Extra-Scopes", "read")
		return &httptestRequest{r}
	}

	r := request(true)
	u, ok, err := newAuth(AdminUser).Authenticate(r.Request)
	if !ok || err != nil || u.Name != "carol" || u.UID != "c-1" || !slices.Equal(u.Groups, []string{"devs", "ops", GroupAuthenticated}) ||
		!slices.Equal(u.Extra["scopes"], []string{"read"}) {
		t.Fatalf("the proxy's user: %+v %v %v", u, ok, err)
	}
	if r.leftHeaders() != "" {
		t.Errorf("identity headers left on the request: %s", r.leftHeaders())
	}

	// Any name the CA signed, when none is listed.
	if u, ok, err := newAuth().Authenticate(request(true).Request); !ok || err != nil || u.Name != "carol" {
		t.Errorf("any proxy name: %+v %v %v", u, ok, err)
	}
	// A proxy name not allowed: refused.
	if u, ok, err := newAuth("front-proxy-client").Authenticate(request(true).Request); ok || err == nil {
		t.Errorf("a proxy name not allowed: %+v %v %v", u, ok, err)
	}
	// Headers from a client without the proxy's certificate: ignored and
	// removed (the request is anonymous).
	r = request(false)
	if u, ok, err := newAuth(AdminUser).Authenticate(r.Request); ok || u != nil || err != nil {
		t.Errorf("headers without a proxy certificate: %+v %v %v", u, ok, err)
	}
	if r.leftHeaders() != "" {
		t.Errorf("identity headers left on an anonymous request: %s", r.leftHeaders())
	}
	// The proxy's certificate with groups but no user name: no proxied
	// user; the certificate is then a client certificate the cluster CA
	// did not sign, refused as such; the headers are gone.
	r = request(true)
	r.Header.Del("X-Remote-User")
	if u, ok, err := newAuth(AdminUser).Authenticate(r.Request); u != nil || ok || err == nil || !strings.Contains(err.Error(), "invalid client certificate") {
		t.Errorf("group headers without a user name: %+v %v %v", u, ok, err)
	}
	if r.leftHeaders() != "" {
		t.Errorf("identity headers left without a user name: %s", r.leftHeaders())
	}
	// A cluster client certificate, with and without a user name header:
	// its own user either way (the header is not the proxy's).
	clusterLeaf, err := x509.ParseCertificate(cluster.AdminCert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	for _, named := range []bool{false, true} {
		r := request(false)
		r.TLS = &tls.ConnectionState{PeerCertificates: []*x509.Certificate{clusterLeaf}}
		if !named {
			r.Header.Del("X-Remote-User")
		}
		u, ok, err := newAuth(AdminUser).Authenticate(r.Request)
		if !ok || err != nil || u.Name != clusterLeaf.Subject.CommonName {
			t.Errorf("a cluster certificate (user name header %v): %+v %v %v", named, u, ok, err)
		}
		if r.leftHeaders() != "" {
			t.Errorf("identity headers left on a cluster client's request: %s", r.leftHeaders())
		}
	}
}

type httptestRequest struct{ *http.Request }

func (r *httptestRequest) leftHeaders() string {
	var left []string
	for name := range r.Header {
		if strings.HasPrefix(name, "X-Remote-") {
			left = append(left, name)
		}
	}
	return strings.Join(left, ",")
}
