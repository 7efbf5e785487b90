package server

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// requestMetrics counts and times API requests by verb, resource and
// code, with the names kube-apiserver uses so dashboards carry over.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// deprecated is 1 for each deprecated API that has been requested.
	deprecated *prometheus.GaugeVec
	// longRunning counts the watches being served.
	longRunning *prometheus.GaugeVec
	// inflight and dropped are the in-flight limit's slots taken and
	// requests refused, by kind (readOnly, mutating).
	inflight *prometheus.GaugeVec
	dropped  *prometheus.CounterVec
}

func newRequestMetrics(reg prometheus.Registerer) *requestMetrics {
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_request_total",
			Help: "Requests by verb, group, resource, subresource and HTTP code.",
		}, []string{"verb", "group", "resource", "subresource", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "Request latency by verb, group and resource (watches excluded).",
			Buckets: prometheus.ExponentialBuckets(0.0005, 4, 10),
		}, []string{"verb", "group", "resource"}),
		deprecated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_requested_deprecated_apis",
			Help: "Deprecated APIs that have been requested, by group, version, resource, subresource and removed_release.",
		}, []string{"group", "version", "resource", "subresource", "removed_release"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "Long-running requests (watches) being served, by verb, group and resource.",
		}, []string{"verb", "group", "resource"}),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_current_inflight_requests",
			Help: "Requests holding an in-flight slot, by kind (readOnly, mutating).",
		}, []string{"request_kind"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_dropped_requests_total",
			Help: "Requests refused with 429 because their in-flight pool was full, by kind.",
		}, []string{"request_kind"}),
	}
	if reg != nil {
		reg.MustRegister(m.total, m.duration, m.deprecated, m.longRunning, m.inflight, m.dropped)
	}
	return m
}

// Keys under which serveResource leaves what the request was.
const (
	ctxVerb = "tabula.verb"
	ctxInfo = "tabula.info"
)

func (s *Server) measure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		verb, _ := c.Get(ctxVerb).(string)
		ri, ok := c.Get(ctxInfo).(requestInfo)
		if !ok {
			return err
		}
		if err != nil {
			s.errorHandler(err, c) // so the recorded code is the one sent
			err = nil
		}
		code := strconv.Itoa(c.Response().Status)
		s.metrics.total.WithLabelValues(verb, ri.Group, ri.Resource, ri.Subresource, code).Inc()
		if verb != "watch" {
			s.metrics.duration.WithLabelValues(verb, ri.Group, ri.Resource).Observe(time.Since(start).Seconds())
		}
		return err
	}
}

// profilingRoutes serves Go's runtime profiles, as kube-apiserver does
// under --profiling, so a slow or large server can be diagnosed in place.
// flowControlMetrics are the apiserver_flowcontrol_* families of kube's
// legacy registry (the rest of it repeats the process metrics Tabula's
// registry has already).
type flowControlMetrics struct{}

func (flowControlMetrics) Gather() ([]*dto.MetricFamily, error) {
	all, err := legacyregistry.DefaultGatherer.Gather()
	out := all[:0]
	for _, mf := range all {
		if strings.HasPrefix(mf.GetName(), "apiserver_flowcontrol_") {
			out = append(out, mf)
		}
	}
	return out, err
}

// flowControlRoutes serves kube's priority and fairness dumps
// (/debug/api_priority_and_fairness/dump_priority_levels, dump_queues,
// dump_requests), authenticated and authorized as on kube-apiserver.
func (s *Server) flowControlRoutes(e *echo.Echo) {
	if s.flow != nil {
		// kube serves them on its non-REST mux, whatever the method.
		e.Any("/debug/api_priority_and_fairness/*", echo.WrapHandler(s.flow.debug))
	}
}

func (s *Server) profilingRoutes(e *echo.Echo) {
	if !s.cfg.Profiling {
		return
	}
	e.GET("/debug/pprof/*", echo.WrapHandler(http.HandlerFunc(pprof.Index)))
	e.GET("/debug/pprof/cmdline", echo.WrapHandler(http.HandlerFunc(pprof.Cmdline)))
	e.GET("/debug/pprof/profile", echo.WrapHandler(http.HandlerFunc(pprof.Profile)))
	e.GET("/debug/pprof/symbol", echo.WrapHandler(http.HandlerFunc(pprof.Symbol)))
	e.GET("/debug/pprof/trace", echo.WrapHandler(http.HandlerFunc(pprof.Trace)))
}

func (s *Server) metricsRoute(e *echo.Echo) {
	if s.cfg.Metrics == nil {
		return
	}
	// kube's priority and fairness metrics (apiserver_flowcontrol_*) are
	// in kube's legacy registry, served beside Tabula's own.
	var g prometheus.Gatherer = s.cfg.Metrics
	if s.flow != nil {
		g = prometheus.Gatherers{s.cfg.Metrics, flowControlMetrics{}}
	}
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(g, promhttp.HandlerOpts{})))
}
