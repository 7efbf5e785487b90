package server

import (
	"net/http"
	"net/http/pprof"
	"strconv"
	"strings"
	"time"

	"net/url"
	"slices"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/component-base/metrics/legacyregistry"
)

// requestMetrics counts and times API requests with kube-apiserver's
// names, labels, label values and buckets, so its dashboards, alerts and
// SLO queries carry over.
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	// sizes are read answers' sizes, before compression.
	sizes *prometheus.HistogramVec
	// storageObjects counts the stored objects by resource
	// (countStoredObjects); registered only with a registry.
	storageObjects *prometheus.GaugeVec
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
			Help: "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component", "code"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_request_duration_seconds",
			Help:    "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3, 4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, []string{"verb", "dry_run", "group", "version", "resource", "subresource", "scope", "component"}),
		sizes: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_response_sizes",
			Help:    "[ALPHA] Response size distribution in bytes for each group, version, verb, resource, subresource, scope and component.",
			Buckets: prometheus.ExponentialBuckets(1000, 10, 7),
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
		storageObjects: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_storage_objects",
			Help: "[STABLE] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		}, []string{"resource"}),
		deprecated: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_requested_deprecated_apis",
			Help: "Deprecated APIs that have been requested, by group, version, resource, subresource and removed_release.",
		}, []string{"group", "version", "resource", "subresource", "removed_release"}),
		longRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_longrunning_requests",
			Help: "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
		}, []string{"verb", "group", "version", "resource", "subresource", "scope", "component"}),
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
		reg.MustRegister(m.total, m.duration, m.sizes, m.storageObjects, m.deprecated, m.longRunning, m.inflight, m.dropped)
	}
	return m
}

// Keys under which serveResource leaves what the request was.
const (
	ctxVerb = "tabula.verb"
	ctxInfo = "tabula.info"
)

// measure records the API requests that reach their handler, as kube's
// route instrumentation does, and those flow control or the in-flight
// limit refused with 429, as kube's filters record them; requests refused
// by authentication or authorization are not counted, as in kube.
func (s *Server) measure(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		start := time.Now()
		err := next(c)
		ri, routed := c.Get(ctxInfo).(requestInfo)
		info, _ := genericapirequest.RequestInfoFrom(c.Request().Context())
		if err != nil && (routed || info != nil) {
			s.errorHandler(err, c) // so the recorded code is the one sent
			err = nil
		}
		r, status := c.Request(), c.Response().Status
		switch {
		case routed && info != nil:
			action := actionVerb(r.Method, ri, info)
			scope := routeScope(r.Method, info)
			verb, dryRun := reportedVerb(r, scope, action, info), dryRunLabel(r.URL)
			s.metrics.total.WithLabelValues(verb, dryRun, ri.Group, ri.Version, ri.Resource, ri.Subresource, scope, metricsComponent, strconv.Itoa(status)).Inc()
			s.metrics.duration.WithLabelValues(verb, dryRun, ri.Group, ri.Version, ri.Resource, ri.Subresource, scope, metricsComponent).Observe(time.Since(start).Seconds())
			if action == endpointsmetrics.MethodGet || action == genericapirequest.MethodList {
				s.metrics.sizes.WithLabelValues(verb, ri.Group, ri.Version, ri.Resource, ri.Subresource, scope, metricsComponent).Observe(float64(c.Response().Size))
			}
		case status == http.StatusTooManyRequests && info != nil:
			scope := endpointsmetrics.CleanScope(info)
			group, version, resource := "", "", ""
			if info.IsResourceRequest {
				group, version, resource = info.APIGroup, info.APIVersion, info.Resource
			}
			s.metrics.total.WithLabelValues(reportedVerb(r, scope, "", info), dryRunLabel(r.URL), group, version, resource, info.Subresource, scope, metricsComponent, "429").Inc()
		}
		return err
	}
}

// longRunningWatch is the apiserver_longrunning_requests gauge a watch
// counts in, labelled as kube's RecordLongRunning labels it.
func (m *requestMetrics) longRunningWatch(r *http.Request, ri requestInfo) prometheus.Gauge {
	info, ok := genericapirequest.RequestInfoFrom(r.Context())
	if !ok {
		info = &genericapirequest.RequestInfo{}
	}
	scope := endpointsmetrics.CleanScope(info)
	return m.longRunning.WithLabelValues(reportedVerb(r, scope, "", info), ri.Group, ri.Version, ri.Resource, ri.Subresource, scope, metricsComponent)
}

// metricsComponent is the component label of kube-apiserver's own
// requests.
const metricsComponent = endpointsmetrics.APIServerComponent

// routeScope is the scope kube's installer gives the route a request
// takes: a named object's or a create's "resource", a namespace's
// collection "namespace", else "cluster".
func routeScope(method string, info *genericapirequest.RequestInfo) string {
	switch {
	case info.Name != "" || method == http.MethodPost:
		return "resource"
	case info.Namespace != "":
		return "namespace"
	}
	return "cluster"
}

// connectSubresources are kube's Connecters: their routes' verb is
// CONNECT.
var connectSubresources = map[string]bool{"exec": true, "attach": true, "portforward": true, "proxy": true}

// actionVerb is the verb kube's installer gives the route a request
// takes, which reportedVerb refines.
func actionVerb(method string, ri requestInfo, info *genericapirequest.RequestInfo) string {
	switch {
	case ri.WatchPath:
		return endpointsmetrics.MethodWatch
	case connectSubresources[ri.Subresource]:
		return endpointsmetrics.MethodConnect
	case method == http.MethodGet || method == http.MethodHead:
		if info.Name != "" {
			return endpointsmetrics.MethodGet
		}
		return genericapirequest.MethodList
	case method == http.MethodDelete && info.Name == "":
		return "DELETECOLLECTION"
	}
	return method
}

// reportedVerb is kube's verb label: the method made canonical for the
// scope (GET of a collection is LIST), then WATCH, APPLY and CONNECT told
// apart; the legacy /watch/ paths are WATCH; anything else is "other".
// (kube's CleanVerb, without parsing the query of every request for
// its watch parameter).
func reportedVerb(r *http.Request, scope, action string, info *genericapirequest.RequestInfo) string {
	if action == endpointsmetrics.MethodWatch {
		return endpointsmetrics.MethodWatch
	}
	method := strings.ToUpper(r.Method)
	v := endpointsmetrics.CanonicalVerb(method, scope)
	if (method == http.MethodGet || method == genericapirequest.MethodList) && strings.Contains(r.URL.RawQuery, "watch") {
		if w := r.URL.Query()["watch"]; len(w) > 0 && !strings.EqualFold(w[0], "0") && !strings.EqualFold(w[0], "false") {
			v = endpointsmetrics.MethodWatch
		}
	}
	if v == endpointsmetrics.MethodPatch && r.Header.Get("Content-Type") == string(types.ApplyPatchType) {
		v = endpointsmetrics.MethodApply
	}
	if info != nil && info.IsResourceRequest && metricsConnect[info.Subresource] {
		v = endpointsmetrics.MethodConnect
	}
	if !reportedVerbs[v] {
		return endpointsmetrics.OtherRequestMethod
	}
	return v
}

// metricsConnect are the subresources kube's metrics count as CONNECT.
var metricsConnect = map[string]bool{"log": true, "exec": true, "portforward": true, "attach": true, "proxy": true}

// reportedVerbs are the verb label's values other than "other".
var reportedVerbs = map[string]bool{"APPLY": true, "CONNECT": true, "CREATE": true, "DELETE": true, "DELETECOLLECTION": true,
	"GET": true, "LIST": true, "PATCH": true, "POST": true, "PROXY": true, "PUT": true, "UPDATE": true, "WATCH": true, "WATCHLIST": true}

// dryRunLabel is kube's dry_run label: the request's dryRun values,
// sorted and without repeats, or "invalid".
func dryRunLabel(u *url.URL) string {
	if !strings.Contains(u.RawQuery, "dryRun") {
		return ""
	}
	vals := u.Query()["dryRun"]
	for _, v := range vals {
		if v != metav1.DryRunAll {
			return "invalid"
		}
	}
	return strings.Join(slices.Compact(slices.Sorted(slices.Values(vals))), ",")
}

// profilingRoutes serves Go's runtime profiles, as kube-apiserver does
// under --profiling, so a slow or large server can be diagnosed in place.
// kubeMetrics are the families kube's own code in this process keeps in
// kube's legacy registry: priority and fairness (apiserver_flowcontrol_*),
// admission (apiserver_admission_*) and Pod Security's evaluations
// (pod_security_*); with priority and fairness on (flow), also what its
// filter keeps of kube's request metrics: the in-flight and queued
// requests (each second's high watermark) and the requests it refused
// (apiserver_request_terminations_total). The rest of that registry
// repeats the process metrics Tabula's registry has already; without
// priority and fairness the in-flight gauge is Tabula's own pools'.
type kubeMetrics struct{ flow bool }

var (
	kubeMetricPrefixes = []string{"apiserver_flowcontrol_", "apiserver_admission_", "pod_security_"}
	kubeFlowMetrics    = []string{"apiserver_current_inflight_requests", "apiserver_current_inqueue_requests", "apiserver_request_terminations_total"}
)

func (k kubeMetrics) Gather() ([]*dto.MetricFamily, error) {
	all, err := legacyregistry.DefaultGatherer.Gather()
	out := all[:0]
	for _, mf := range all {
		name := mf.GetName()
		if slices.ContainsFunc(kubeMetricPrefixes, func(p string) bool { return strings.HasPrefix(name, p) }) ||
			k.flow && slices.Contains(kubeFlowMetrics, name) {
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
	// kube's own metrics are in kube's legacy registry, served beside
	// Tabula's.
	g := prometheus.Gatherers{s.cfg.Metrics, kubeMetrics{flow: s.flow != nil}}
	e.GET("/metrics", echo.WrapHandler(promhttp.HandlerFor(g, promhttp.HandlerOpts{})))
	e.GET("/metrics/slis", echo.WrapHandler(promhttp.HandlerFor(s.slis.reg, promhttp.HandlerOpts{})))
}
