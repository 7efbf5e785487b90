package server

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
)

// getVersion serves /version. kube-apiserver always indents it; its route
// produces JSON alone, so an Accept its router cannot match with JSON (no
// entry */* or application/json) is refused as that router refuses it.
func (s *Server) getVersion(c echo.Context) error {
	if accept := c.Request().Header.Get("Accept"); accept != "" && !acceptsJSONRoute(accept) {
		return notAcceptable("application/json")
	}
	c.Response().Header().Set(echo.HeaderContentType, "application/json")
	c.Response().WriteHeader(http.StatusOK)
	return writeIndented(c.Response(), s.cfg.Version)
}

// acceptsJSONRoute is go-restful's check for a route producing only JSON:
// some entry, parameters cut off, is */* or application/json.
func acceptsJSONRoute(accept string) bool {
	for part := range strings.SplitSeq(accept, ",") {
		typ, _, _ := strings.Cut(part, ";")
		if t := strings.TrimSpace(typ); t == "*/*" || t == "application/json" {
			return true
		}
	}
	return false
}
