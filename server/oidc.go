package server

import (
	"fmt"
	"net/http"

	"github.com/labstack/echo/v4"
	"k8s.io/kubernetes/pkg/serviceaccount"

	"github.com/tabula-dev/tabula/codecs"
)

// The service account issuer's OpenID discovery documents, as
// kube-apiserver serves them (ServiceAccountIssuerDiscovery): the
// configuration names the issuer and where its keys are, the key set holds
// the public keys tokens are verified with. Both are made by kube's own
// provider, so other systems (cloud IAM, Vault) trust Tabula's tokens as
// they trust a cluster's. RBAC decides who reads them (kube's bootstrap
// policy lets every service account, through
// system:service-account-issuer-discovery).

func (s *Server) openIDRoutes(e *echo.Echo) {
	t := s.cfg.ServiceAccountTokens
	external := ""
	if s.cfg.Advertise.IsValid() {
		external = s.cfg.Advertise.String()
	}
	keys, err := serviceaccount.StaticPublicKeysGetter(t.PublicKeys())
	if err != nil {
		s.log.Warn("service account issuer discovery not served", "err", err)
		return
	}
	p, err := serviceaccount.NewOpenIDMetadataProvider(t.Issuer, s.cfg.ServiceAccountJWKSURI, external, keys)
	if err != nil {
		// As kube-apiserver: an issuer that is not an https URL (or no
		// address to build the key set's URL from) leaves the endpoints out.
		s.log.Info("service account issuer discovery not served", "issuer", t.Issuer, "reason", err)
		return
	}
	serve := func(contentType string, doc func() ([]byte, int)) echo.HandlerFunc {
		return func(c echo.Context) error {
			// kube's router refuses an Accept that does not name the
			// route's one media type (or */*).
			if !codecs.RouteProduces(c.Request().Header.Get("Accept"), contentType) {
				return notAcceptable(contentType)
			}
			b, maxAge := doc()
			c.Response().Header().Set("Cache-Control", fmt.Sprintf("public, max-age=%d", maxAge))
			return c.Blob(http.StatusOK, contentType, b)
		}
	}
	// On kube's go-restful router: a trailing slash is trimmed (kube's
	// issuer-discovery role grants both forms), any other method is 405.
	notAllowed := func(echo.Context) error { return methodNotAllowed() }
	for path, h := range map[string]echo.HandlerFunc{
		serviceaccount.OpenIDConfigPath: serve("application/json", p.GetConfigJSON),
		serviceaccount.JWKSPath:         serve("application/jwk-set+json", p.GetKeysetJSON),
	} {
		for _, path := range []string{path, path + "/"} {
			e.GET(path, h)
			e.Match(nonGetMethods, path, notAllowed)
		}
	}
}
