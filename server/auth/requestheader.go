package auth

import (
	"crypto/x509"
	"net/http"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
)

// RequestHeader is kube-apiserver's front-proxy authentication
// (--requestheader-*): a client whose certificate the proxy CA signed,
// with one of the allowed common names (any, when none is listed), says
// who the user is in request headers. It is tried before every other
// method, as on kube-apiserver, and the headers are removed from every
// request, so nothing downstream trusts a client that set them itself.
type RequestHeader struct {
	// ClientCA verifies the proxy's certificate; CAPEM is the same, as
	// published in extension-apiserver-authentication.
	ClientCA *x509.CertPool
	CAPEM    []byte
	// AllowedNames are the proxy certificates' accepted common names.
	AllowedNames []string
	// The headers: the user name (the first present wins), the uid, the
	// groups (every value), and the prefixes of extra-field headers.
	UsernameHeaders, UIDHeaders, GroupHeaders, ExtraHeaderPrefixes []string
}

// newRequestHeader is kube's request-header authenticator for rh.
func newRequestHeader(rh *RequestHeader) authenticator.Request {
	verify := func() (x509.VerifyOptions, bool) {
		opts := x509request.DefaultVerifyOptions()
		opts.Roots = rh.ClientCA
		return opts, true
	}
	return headerrequest.NewDynamicVerifyOptionsSecure(verify, headerrequest.StaticStringSlice(rh.AllowedNames),
		headerrequest.StaticStringSlice(rh.UsernameHeaders), headerrequest.StaticStringSlice(rh.UIDHeaders),
		headerrequest.StaticStringSlice(rh.GroupHeaders), headerrequest.StaticStringSlice(rh.ExtraHeaderPrefixes))
}

// headerLists are rh's header names as kube's authenticator reads them:
// user name, uid, groups and extra prefixes, made once (as interface
// values, each would be allocated on every request).
func headerLists(rh *RequestHeader) [4]headerrequest.StringSliceProvider {
	return [4]headerrequest.StringSliceProvider{headerrequest.StaticStringSlice(rh.UsernameHeaders), headerrequest.StaticStringSlice(rh.UIDHeaders),
		headerrequest.StaticStringSlice(rh.GroupHeaders), headerrequest.StaticStringSlice(rh.ExtraHeaderPrefixes)}
}

// authenticateRequestHeader authenticates a front proxy's request, then
// clears the identity headers whatever the outcome.
func (a *Authenticator) authenticateRequestHeader(r *http.Request) (*User, bool, error) {
	if a.requestHeader == nil {
		return nil, false, nil
	}
	rh := a.requestHeaderOpts
	named := false
	for _, h := range rh.UsernameHeaders {
		if r.Header.Get(h) != "" {
			named = true
			break
		}
	}
	var resp *authenticator.Response
	var ok bool
	var err error
	if named {
		// Without a user name header kube's authenticator answers "not
		// this method" whatever the certificate — after verifying it
		// against the proxy CA, a chain verification on every request of
		// every client with a certificate.
		resp, ok, err = a.requestHeader.AuthenticateRequest(r)
	}
	l := a.requestHeaderLists
	headerrequest.ClearAuthenticationHeaders(r.Header, l[0], l[1], l[2], l[3])
	if !ok || err != nil {
		return nil, false, err
	}
	info := resp.User
	return &User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}, true, nil
}
