package server

import (
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
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

// The checks carry kube-apiserver 1.35's names, in its order, so clients,
// monitoring and the upstream e2e suite find the ones they look for: etcd
// answers for the database, and each post-start hook passes once Tabula
// has done what kube's hook does (its controllers started, the bootstrap
// policy and the flow-control configuration in place). Tabula's own
// checks (database, controllers, compaction) follow.

func (s *Server) liveChecks() []healthCheck {
	db := s.databaseOnce()
	return append(append(kubeBaseChecks(db), s.postStartHooks()...), s.ownChecks(db)...)
}

func (s *Server) readyChecks() []healthCheck {
	db := s.databaseOnce()
	checks := append(kubeBaseChecks(db),
		healthCheck{"etcd-readiness", db},
		// kube's check that its informers have synced: the policy and
		// admission caches hold a complete view.
		healthCheck{"informer-sync", func(context.Context) error {
			if !s.api.CachesSynced() {
				return fmt.Errorf("watch-fed caches not synced yet")
			}
			return nil
		}})
	checks = append(append(checks, s.postStartHooks()...), s.ownChecks(db)...)
	return append(checks,
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

// kubeBaseChecks are the checks every kube-apiserver report opens with;
// db answers for etcd.
func kubeBaseChecks(db func(context.Context) error) []healthCheck {
	return []healthCheck{
		{"ping", func(context.Context) error { return nil }},
		{"log", func(context.Context) error { return nil }},
		{"etcd", db},
	}
}

// databaseOnce is the database check for one report: the checks named
// for it (etcd, etcd-readiness, database) share one round trip.
func (s *Server) databaseOnce() func(context.Context) error {
	var once sync.Once
	var err error
	return func(ctx context.Context) error {
		once.Do(func() { err = s.checkDatabase(ctx) })
		return err
	}
}

// ownChecks are Tabula's names for what its store and controllers need.
func (s *Server) ownChecks(db func(context.Context) error) []healthCheck {
	return []healthCheck{
		{"database", db},
		{"controllers", s.controllersStarted},
	}
}

func (s *Server) controllersStarted(context.Context) error {
	if !s.ready.controllersSynced.Load() {
		return fmt.Errorf("in-process controllers not started")
	}
	return nil
}

// postStartHooks are kube-apiserver 1.35's post-start hooks, each passing
// once Tabula's counterpart has run: most are its in-process controllers
// (started together, after the custom resources are loaded and the system
// namespaces made); the bootstrap policy and priority classes, and the
// flow-control configuration, have checks of their own.
func (s *Server) postStartHooks() []healthCheck {
	started := s.controllersStarted
	ready := func(context.Context) error { return nil } // done in New
	bootstrapped := func(context.Context) error {
		if !s.controllers.Bootstrapped() {
			return fmt.Errorf("bootstrap roles and priority classes not created yet")
		}
		return nil
	}
	flowConfigured := func(context.Context) error {
		if !s.controllers.FlowcontrolConfigured() {
			return fmt.Errorf("the mandatory and suggested flow-control configuration is not in place yet")
		}
		return nil
	}
	hook := func(name string, check func(context.Context) error) healthCheck {
		return healthCheck{"poststarthook/" + name, check}
	}
	hooks := []healthCheck{
		hook("start-apiserver-admission-initializer", ready),
		hook("generic-apiserver-start-informers", started),
	}
	if s.flow != nil {
		hooks = append(hooks, hook("priority-and-fairness-config-consumer", started), hook("priority-and-fairness-filter", ready))
	}
	hooks = append(hooks,
		hook("storage-object-count-tracker-hook", ready),
		hook("start-apiextensions-informers", started),
		hook("start-apiextensions-controllers", started),
		hook("crd-informer-synced", started),
		hook("start-system-namespaces-controller", started),
		hook("start-cluster-authentication-info-controller", started),
		hook("start-kube-apiserver-identity-lease-controller", started),
		hook("start-kube-apiserver-identity-lease-garbage-collector", started),
		hook("start-legacy-token-tracking-controller", started),
		hook("start-service-ip-repair-controllers", started),
		hook("rbac/bootstrap-roles", bootstrapped),
		hook("scheduling/bootstrap-system-priority-classes", bootstrapped),
		hook("priority-and-fairness-config-producer", flowConfigured),
		hook("bootstrap-controller", started),
		hook("start-kubernetes-service-cidr-controller", started),
		hook("aggregator-reload-proxy-client-cert", ready),
		hook("start-kube-aggregator-informers", started),
		hook("apiservice-status-local-available-controller", started),
		hook("apiservice-status-remote-available-controller", started),
		hook("apiservice-registration-controller", started),
		hook("apiservice-discovery-controller", started),
		hook("kube-apiserver-autoregistration", started),
		healthCheck{"autoregister-completion", started},
		hook("apiservice-openapi-controller", started),
		hook("apiservice-openapiv3-controller", started),
	)
	return hooks
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
		// kube's health checks sit on its plain mux: every method is
		// answered (load balancers probe with HEAD or OPTIONS too).
		e.Any(path, all)
		e.Any(path+"/:check", func(c echo.Context) error { return s.serveHealth(c, path, checks(), c.Param("check")) })
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
	// As kube: each exclude parameter names one check; names that match
	// none are said.
	unmatched := map[string]bool{}
	for _, n := range c.QueryParams()["exclude"] {
		unmatched[n] = true
	}
	_, verbose := c.QueryParams()["verbose"]
	name := strings.TrimPrefix(path, "/")
	var b strings.Builder
	failed := false
	for _, hc := range checks {
		if _, ok := unmatched[hc.name]; ok {
			delete(unmatched, hc.name)
			fmt.Fprintf(&b, "[+]%s excluded: ok\n", hc.name)
			continue
		}
		if err := hc.check(ctx); err != nil {
			failed = true
			s.slis.observe(hc.name, name, false)
			fmt.Fprintf(&b, "[-]%s failed: reason withheld\n", hc.name)
			s.log.Warn("health check failed", "endpoint", path, "check", hc.name, "err", err)
			continue
		}
		s.slis.observe(hc.name, name, true)
		fmt.Fprintf(&b, "[+]%s ok\n", hc.name)
	}
	if len(unmatched) > 0 {
		var quoted []string
		for _, n := range slices.Sorted(maps.Keys(unmatched)) {
			quoted = append(quoted, strconv.Quote(n))
		}
		fmt.Fprintf(&b, "warn: some health checks cannot be excluded: no matches for %s\n", strings.Join(quoted, ","))
	}
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

// healthSLIs are kube's /metrics/slis: each health check's latest result
// (kubernetes_healthcheck, 1 or 0) and a count of results
// (kubernetes_healthchecks_total), by check name and endpoint type
// (healthz, livez, readyz), recorded as the endpoints run them.
type healthSLIs struct {
	reg    *prometheus.Registry
	latest *prometheus.GaugeVec
	total  *prometheus.CounterVec
}

func newHealthSLIs() *healthSLIs {
	h := &healthSLIs{
		reg: prometheus.NewRegistry(),
		latest: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kubernetes_healthcheck",
			Help: "[STABLE] This metric records the result of a single healthcheck."}, []string{"name", "type"}),
		total: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kubernetes_healthchecks_total",
			Help: "[STABLE] This metric records the results of all healthcheck."}, []string{"name", "type", "status"}),
	}
	start := prometheus.NewGauge(prometheus.GaugeOpts{Name: "process_start_time_seconds",
		Help: "[ALPHA] Start time of the process since unix epoch in seconds."})
	start.Set(float64(processStart.UnixNano()) / 1e9)
	h.reg.MustRegister(h.latest, h.total, start)
	return h
}

func (h *healthSLIs) observe(check, endpoint string, ok bool) {
	v, status := 0.0, "error"
	if ok {
		v, status = 1, "success"
	}
	h.latest.WithLabelValues(check, endpoint).Set(v)
	h.total.WithLabelValues(check, endpoint, status).Inc()
}

// processStart is about when the process started (its first package
// initialisers ran).
var processStart = time.Now()

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
