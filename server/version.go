package server

import (
	"net/http"

	"github.com/labstack/echo/v4"
)

// getVersion serves /version. kube-apiserver always indents it.
func (s *Server) getVersion(c echo.Context) error {
	c.Response().Header().Set(echo.HeaderContentType, "application/json")
	c.Response().WriteHeader(http.StatusOK)
	return writeIndented(c.Response(), s.cfg.Version)
}
