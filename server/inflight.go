package server

import (
	"net/http"
	"slices"

	"github.com/labstack/echo/v4"

	"github.com/tabula-dev/tabula/server/auth"
)

// kube-apiserver's max-in-flight filter: read-only and mutating requests
// each have a pool of slots (--max-requests-inflight and
// --max-mutating-requests-inflight); a request that finds its pool full
// is answered 429 with Retry-After at once. Long-running requests
// (watches, logs, exec, proxies) and health probes hold no slot, and
// system:masters are never refused: an administrator can always get an
// answer.

// inflight is one pool; nil means unlimited.
type inflight chan struct{}

func newInflight(n int) inflight {
	if n <= 0 {
		return nil
	}
	return make(inflight, n)
}

func (s *Server) limitInflight(next echo.HandlerFunc) echo.HandlerFunc {
	if s.readOnly == nil && s.mutating == nil {
		return next
	}
	return func(c echo.Context) error {
		r := c.Request()
		// Health probes are never refused (kube-apiserver's flow control
		// exempts them), so a busy server is not also taken out of service.
		if longRunning(r) || publicPath(r.URL.Path) {
			return next(c)
		}
		pool, kind := s.readOnly, "readOnly"
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
			pool, kind = s.mutating, "mutating"
		}
		if pool == nil {
			return next(c)
		}
		select {
		case pool <- struct{}{}:
			s.metrics.inflight.WithLabelValues(kind).Inc()
			defer func() {
				<-pool
				s.metrics.inflight.WithLabelValues(kind).Dec()
			}()
			return next(c)
		default:
		}
		if u, ok := auth.UserFrom(r.Context()); ok && u != nil && slices.Contains(u.Groups, auth.AdminGroup) {
			return next(c)
		}
		s.metrics.dropped.WithLabelValues(kind).Inc()
		// kube-apiserver's answer, written as its filter writes it.
		c.Response().Header().Set("Retry-After", "1")
		http.Error(c.Response(), "Too many requests, please try again later.", http.StatusTooManyRequests)
		return nil
	}
}

// longRunning reports a request that may last as long as its client
// wants, as kube-apiserver's long-running request check decides: a watch,
// or a streaming or proxy subresource.
func longRunning(r *http.Request) bool {
	ri, ok := resourceRequest(r.URL.Path)
	if !ok {
		return false
	}
	if ri.WatchPath || (r.Method == http.MethodGet || r.Method == http.MethodHead) && queryBool(r.URL.Query(), "watch") {
		return true
	}
	switch ri.Subresource {
	case "proxy", "log", "exec", "attach", "portforward":
		return true
	}
	return false
}
