package server

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"k8s.io/kube-openapi/pkg/handler3"
)

// openAPIRoutes serves /openapi/v2 and /openapi/v3 as kube-apiserver's
// aggregator does: on its plain mux, any method answered (HEAD without
// the body); the v3 index merges the documents served here with those of
// extension servers, whose documents are proxied to them.
func (s *Server) openAPIRoutes(e *echo.Echo) {
	h := echo.WrapHandler(s.cfg.OpenAPI)
	e.Any("/openapi/v2", h)
	e.Any("/openapi/v3", s.openAPIV3Index)
	e.Any("/openapi/v3/*", func(c echo.Context) error {
		if t := s.agg.OpenAPIV3Target(strings.TrimPrefix(c.Request().URL.Path, "/openapi/v3/")); t != nil {
			return s.proxyAggregated(c, t)
		}
		return h(c)
	})
}

// openAPIV3Index answers /openapi/v3 as kube-aggregator's OpenAPI v3
// proxy does: the index of the documents served here with the entries
// extension servers list for their group-versions (theirs win: their
// requests go to them), marshalled afresh for each request and written by
// http.ServeContent, so labelled text/plain by sniffing, with
// Last-Modified the time of the request and no ETag.
func (s *Server) openAPIV3Index(c echo.Context) error {
	r := c.Request()
	local := httptest.NewRecorder()
	s.cfg.OpenAPI.ServeHTTP(local, (&http.Request{Method: http.MethodGet, URL: r.URL, Header: http.Header{}}).WithContext(r.Context()))
	if local.Code != http.StatusOK {
		return echo.NewHTTPError(http.StatusInternalServerError, "the OpenAPI v3 index: "+local.Body.String())
	}
	var index handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(local.Body.Bytes(), &index); err != nil {
		return err
	}
	for name, e := range s.agg.OpenAPIV3() {
		index.Paths[name] = e
	}
	b, err := json.Marshal(&index)
	if err != nil {
		return err
	}
	http.ServeContent(c.Response(), r, "/openapi/v3", time.Now(), bytes.NewReader(b))
	return nil
}
