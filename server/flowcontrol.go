package server

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v4"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	endpointsmetrics "k8s.io/apiserver/pkg/endpoints/metrics"
	genericfilters "k8s.io/apiserver/pkg/server/filters"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/storage"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcmetrics "k8s.io/apiserver/pkg/util/flowcontrol/metrics"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// kube-apiserver's API Priority and Fairness, kube's own implementation
// (k8s.io/apiserver/pkg/util/flowcontrol and its filter): every request is
// classified by the FlowSchemas into a PriorityLevelConfiguration, costs
// seats by kube's work estimate (lists and watch initialisation by the
// objects they read), waits in the level's shuffle-sharded fair queues
// and is refused with 429 and Retry-After when they are full; the answer
// names its FlowSchema and priority level in the X-Kubernetes-PF-*
// headers. The configuration comes from this replica's watch-fed caches
// (so all replicas agree) and the controllers keep kube's mandatory and
// suggested objects in place. The server's concurrency is the two
// max-in-flight limits together, as kube-apiserver's.

// defaultServerConcurrency is kube-apiserver's, its two limits' defaults.
const defaultServerConcurrency = 600

// flowControl is the filter and the debug endpoints.
type flowControl struct {
	ifc     utilflowcontrol.Interface
	handler http.Handler
	debug   *mux.PathRecorderMux
	counts  *objectCounts
}

// apfCall carries the Echo request through kube's http.Handler filter.
type apfCall struct {
	c    echo.Context
	next echo.HandlerFunc
	err  error
}

type apfCallKey struct{}

var registerFlowControlMetrics sync.Once

func (s *Server) newFlowControl() *flowControl {
	limit := s.cfg.MaxRequestsInflight + s.cfg.MaxMutatingRequestsInflight
	if limit <= 0 {
		limit = defaultServerConcurrency
	}
	registerFlowControlMetrics.Do(func() {
		fcmetrics.Register()
		// kube's request metrics that its filter keeps (kubeMetrics), and
		// the process's one loop that turns the filter's watermarks into
		// the in-flight and queued gauges each second, as kube-apiserver
		// starts it.
		endpointsmetrics.Register()
		genericfilters.StartPriorityAndFairnessWatermarkMaintenance(nil)
	})
	fc := &flowControl{
		ifc:    utilflowcontrol.New(s.api.FlowcontrolInformers(), s.api.FlowcontrolClient(), limit),
		debug:  mux.NewPathRecorderMux("flowcontrol"),
		counts: &objectCounts{s: s, known: map[string]*objectCount{}},
	}
	fc.ifc.Install(fc.debug)
	estimate := fcrequest.NewWorkEstimator(fc.counts.get, fc.ifc.GetInterestedWatchCount, fcrequest.DefaultWorkEstimatorConfig(), fc.ifc.GetMaxSeats)
	inner := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		call := r.Context().Value(apfCallKey{}).(*apfCall)
		call.c.SetRequest(r)
		call.err = call.next(call.c)
	})
	// kube-apiserver's long-running requests: watches (whose
	// initialisation is charged) and the streaming subresources.
	longRunning := genericfilters.BasicLongRunningRequestCheck(sets.NewString("watch", "proxy"), sets.NewString("attach", "exec", "proxy", "log", "portforward"))
	fc.handler = genericfilters.WithPriorityAndFairness(inner, longRunning, fc.ifc, estimate, s.cfg.RequestTimeout/4)
	return fc
}

// priorityAndFairness is the filter as Echo middleware, in the place of
// the max-in-flight pools.
func (s *Server) priorityAndFairness(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		call := &apfCall{c: c, next: next}
		r := c.Request()
		s.flow.handler.ServeHTTP(c.Response(), r.WithContext(context.WithValue(r.Context(), apfCallKey{}, call)))
		return call.err
	}
}

// runFlowControl runs kube's configuration controller until the server
// shuts down.
func (s *Server) runFlowControl() {
	if s.flow == nil {
		return
	}
	go func() {
		if err := s.flow.ifc.Run(s.shutdown); err != nil {
			s.log.Error("priority and fairness stopped", "err", err)
		}
	}()
}

// objectCounts are each resource's object count and average size, as
// kube's work estimator reads them from its storage's object count
// tracker: counted from the database at most once a minute per resource
// (in the background; until the first count a list costs the fewest
// seats, as kube charges a resource it has no count of).
type objectCounts struct {
	s     *Server
	mu    sync.Mutex
	known map[string]*objectCount
}

type objectCount struct {
	stats    storage.Stats
	at       time.Time
	counting bool
	ok       bool
}

// maxCountedResources bounds the resources counted (built-in kinds and
// CRDs are far fewer).
const maxCountedResources = 4096

// objectCountTTL is how long a count is used before it is made again.
const objectCountTTL = time.Minute

func (o *objectCounts) get(key string) (storage.Stats, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	c := o.known[key]
	if c == nil {
		if len(o.known) >= maxCountedResources {
			// Keys come from request paths, resources that exist or
			// not: the map must not grow with what clients make up.
			return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
		}
		c = &objectCount{}
		o.known[key] = c
	}
	if !c.counting && time.Since(c.at) > objectCountTTL {
		c.counting = true
		go o.count(key, c)
	}
	if !c.ok {
		return storage.Stats{}, fcrequest.ObjectCountNotFoundErr
	}
	return c.stats, nil
}

// count reads how many objects of key's resource exist, and the average
// size of the first hundred.
func (o *objectCounts) count(key string, c *objectCount) {
	stats, ok := o.measure(key)
	o.mu.Lock()
	defer o.mu.Unlock()
	c.counting, c.at = false, time.Now()
	if ok {
		c.stats, c.ok = stats, true
	}
}

func (o *objectCounts) measure(key string) (storage.Stats, bool) {
	gr := runtimeschema.ParseGroupResource(key)
	var x *registry.Resource
	for _, t := range o.s.reg.Types() {
		// Any served version: they share one storage.
		if t.Group == gr.Group && t.Resource == gr.Resource {
			if r, ok := o.s.api.Lookup(t.Group, t.Version, t.Resource); ok {
				x = r
				break
			}
		}
	}
	if x == nil {
		return storage.Stats{}, false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := x.List(ctx, kv.ListOptions{Limit: 100})
	if err != nil {
		return storage.Stats{}, false
	}
	n := int64(len(res.Items))
	var size int64
	for _, it := range res.Items {
		size += int64(len(it.Value))
	}
	stats := storage.Stats{ObjectCount: n + res.Remaining}
	if n > 0 {
		stats.EstimatedAverageObjectSizeBytes = size / n
	}
	return stats, true
}

// watchInitialized tells priority and fairness that a watch has sent what
// it opens with, so the seats its initialisation took are given back.
func watchInitialized(ctx context.Context) { utilflowcontrol.WatchInitialized(ctx) }
