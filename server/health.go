package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
)

// healthCheck is one named check of /livez or /readyz.
type healthCheck struct {
	name  string
	check func(ctx context.Context) error
}

// readiness tracks what only the readiness endpoint reports.
type readiness struct {
	// controllersSynced flips once the in-process controllers have started.
	controllersSynced atomic.Bool
}

// MarkControllersStarted makes the controllers' readiness check pass.
func (s *Server) MarkControllersStarted() { s.ready.controllersSynced.Store(true) }

func (s *Server) liveChecks() []healthCheck {
	return []healthCheck{
		{"ping", func(context.Context) error { return nil }},
		{"log", func(context.Context) error { return nil }},
		{"database", s.checkDatabase},
	}
}

func (s *Server) readyChecks() []healthCheck {
	return append(s.liveChecks(),
		healthCheck{"controllers", func(context.Context) error {
			if !s.ready.controllersSynced.Load() {
				return fmt.Errorf("in-process controllers not started")
			}
			return nil
		}},
		// Named as kube-apiserver's post-start hook that does the same.
		healthCheck{"poststarthook/rbac/bootstrap-roles", func(context.Context) error {
			if !s.controllers.Bootstrapped() {
				return fmt.Errorf("bootstrap roles and priority classes not created yet")
			}
			return nil
		}},
		healthCheck{"poststarthook/priority-and-fairness-config-producer", func(context.Context) error {
			if !s.controllers.FlowcontrolConfigured() {
				return fmt.Errorf("the mandatory and suggested flow-control configuration is not in place yet")
			}
			return nil
		}},
		// Named as kube-apiserver's check that its informers have synced:
		// the policy and admission caches hold a complete view.
		healthCheck{"informer-sync", func(context.Context) error {
			if !s.api.CachesSynced() {
				return fmt.Errorf("watch-fed caches not synced yet")
			}
			return nil
		}},
		healthCheck{"compaction", s.checkCompaction},
		healthCheck{"shutdown", func(context.Context) error {
			select {
			case <-s.shutdown:
				return fmt.Errorf("process is shutting down")
			default:
				return nil
			}
		}},
	)
}

// Ready runs /readyz's checks, for programs that embed the server.
func (s *Server) Ready(ctx context.Context) error {
	for _, hc := range s.readyChecks() {
		if err := hc.check(ctx); err != nil {
			return fmt.Errorf("%s: %w", hc.name, err)
		}
	}
	return nil
}

func (s *Server) checkDatabase(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	return s.store.Ready(ctx)
}

func (s *Server) healthRoutes(e *echo.Echo) {
	for _, ep := range []struct {
		path   string
		checks func() []healthCheck
	}{
		{"/healthz", s.liveChecks},
		{"/livez", s.liveChecks},
		{"/readyz", s.readyChecks},
	} {
		checks := ep.checks
		path := ep.path
		all := func(c echo.Context) error { return s.serveHealth(c, path, checks(), "") }
		e.GET(path, all)
		e.POST(path, all)
		e.GET(path+"/:check", func(c echo.Context) error { return s.serveHealth(c, path, checks(), c.Param("check")) })
	}
}

// serveHealth answers like kube-apiserver's healthz handlers: "ok" or a
// verbose per-check report, 500 when a check fails.
func (s *Server) serveHealth(c echo.Context, path string, checks []healthCheck, only string) error {
	ctx := c.Request().Context()
	if only != "" {
		for _, hc := range checks {
			if hc.name == only {
				if err := hc.check(ctx); err != nil {
					return plainText(c, http.StatusInternalServerError, fmt.Sprintf("internal server error: %v\n", err))
				}
				return plainText(c, http.StatusOK, "ok")
			}
		}
		return plainText(c, http.StatusNotFound, "404 page not found\n")
	}
	excluded := map[string]bool{}
	for _, v := range c.QueryParams()["exclude"] {
		for _, n := range strings.Split(v, ",") {
			excluded[strings.TrimSpace(n)] = true
		}
	}
	_, verbose := c.QueryParams()["verbose"]
	var b strings.Builder
	failed := false
	for _, hc := range checks {
		if excluded[hc.name] {
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", hc.name)
			continue
		}
		if err := hc.check(ctx); err != nil {
			failed = true
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", hc.name)
			s.log.Warn("health check failed", "endpoint", path, "check", hc.name, "err", err)
			continue
		}
		fmt.Fprintf(&b, "[+]%s ok\n", hc.name)
	}
	name := strings.TrimPrefix(path, "/")
	if failed {
		fmt.Fprintf(&b, "%s check failed\n", name)
		return plainText(c, http.StatusInternalServerError, b.String())
	}
	if !verbose {
		return plainText(c, http.StatusOK, "ok")
	}
	fmt.Fprintf(&b, "%s check passed\n", name)
	return plainText(c, http.StatusOK, b.String())
}

// compactionLagLimit is how long compaction may keep failing before
// readiness reports it: history, and with it the database, would grow.
const compactionLagLimit = 15 * time.Minute

func (s *Server) checkCompaction(context.Context) error {
	st := s.store.Compaction()
	if st.LastError != nil && time.Since(st.LastSuccess) > compactionLagLimit {
		return fmt.Errorf("compaction failing since %s: %v", st.LastSuccess.Format(time.RFC3339), st.LastError)
	}
	return nil
}
