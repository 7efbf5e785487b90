package server

import (
	"net/http"
	"net/url"
	"slices"
	"strings"

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
		if longRunning(r) || healthPath(r.URL.Path) {
			return next(c)
		}
		pool, kind := s.readOnly, "readOnly"
		if r.Method != http.MethodGet && r.Method != http.MethodHead && r.Method != http.MethodOptions {
			pool, kind = s.mutating, "mutating"
		}
		release, ok := s.takeSeat(r, pool, kind)
		if !ok {
			refuse(c.Response())
			return nil
		}
		defer release()
		return next(c)
	}
}

// healthPath is a health or version probe.
func healthPath(p string) bool {
	for _, pre := range []string{"/healthz", "/livez", "/readyz", "/version"} {
		if p == pre || strings.HasPrefix(p, pre+"/") {
			return true
		}
	}
	return false
}

// refuse answers 429 as kube-apiserver's limiting filters write it: plain
// text, with Retry-After.
func refuse(w http.ResponseWriter) {
	w.Header().Set("Retry-After", "1")
	http.Error(w, "Too many requests, please try again later.", http.StatusTooManyRequests)
}

// takeSeat takes a slot of pool for r, or reports that it is full; an
// administrator is let in without one. release gives the slot back.
func (s *Server) takeSeat(r *http.Request, pool inflight, kind string) (release func(), ok bool) {
	if pool == nil {
		return func() {}, true
	}
	select {
	case pool <- struct{}{}:
		s.metrics.inflight.WithLabelValues(kind).Inc()
		return func() {
			<-pool
			s.metrics.inflight.WithLabelValues(kind).Dec()
		}, true
	default:
	}
	if isAdmin(r) {
		return func() {}, true
	}
	s.metrics.dropped.WithLabelValues(kind).Inc()
	return nil, false
}

func isAdmin(r *http.Request) bool {
	u, ok := auth.UserFrom(r.Context())
	return ok && u != nil && slices.Contains(u.Groups, auth.AdminGroup)
}

// Watches are long-running: like kube-apiserver's max-in-flight filter,
// the pools above do not count them (kube's priority and fairness, which
// also charges a watch's initialisation, is not built yet). What one user
// can make the server hold is bounded all the same: each may keep at most
// MaxWatchesPerUser watches open at once, administrators excepted; more
// are refused with the pools' 429.

// admitWatch counts a watch against its user's ceiling; false means it is
// refused (answer with refuse). release ends the count.
func (s *Server) admitWatch(r *http.Request) (release func(), ok bool) {
	max := s.cfg.MaxWatchesPerUser
	if max <= 0 || isAdmin(r) {
		return func() {}, true
	}
	name := ""
	if u, ok := auth.UserFrom(r.Context()); ok && u != nil {
		name = u.Name
	}
	s.watchUsersMu.Lock()
	defer s.watchUsersMu.Unlock()
	if s.watchUsers[name] >= max {
		s.metrics.dropped.WithLabelValues("watch").Inc()
		return nil, false
	}
	s.watchUsers[name]++
	return func() {
		s.watchUsersMu.Lock()
		if s.watchUsers[name]--; s.watchUsers[name] <= 0 {
			delete(s.watchUsers, name)
		}
		s.watchUsersMu.Unlock()
	}, true
}

// longRunning reports a request that may last as long as its client
// wants, as kube-apiserver's long-running request check decides: a watch,
// or a streaming or proxy subresource.
func longRunning(r *http.Request) bool {
	ri, ok := resourceRequest(r.URL.Path)
	if !ok {
		return false
	}
	if ri.WatchPath || ri.Name == "" && (r.Method == http.MethodGet || r.Method == http.MethodHead) && watchQuery(r.URL.RawQuery) {
		return true
	}
	switch ri.Subresource {
	case "proxy", "log", "exec", "attach", "portforward":
		return true
	}
	return false
}

// watchQuery says whether a query asks for a watch. It is read on every
// request, several times: a query that cannot name watch (nor spell it
// escaped) is not parsed, which allocated a map each time.
func watchQuery(raw string) bool {
	if !strings.Contains(raw, "watch") && !strings.Contains(raw, "%") {
		return false
	}
	q, _ := url.ParseQuery(raw)
	return queryBool(q, "watch")
}
