package controllers

import (
	"context"
	"log/slog"
	"net/netip"
	"sync/atomic"
	"time"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Store is what the controllers need from the event log beyond the
// registry: pages of any storage resource, watches, and the indexes the
// collector and the expiry find their work by.
type Store interface {
	List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error)
	Watch(ctx context.Context, opts kv.WatchOptions) (kv.Watcher, error)
	CurrentRev(ctx context.Context) (int64, error)
	ResourcesWithField(ctx context.Context, field, value string) ([]string, error)
	Expired(ctx context.Context, resource string, now time.Time, limit int) ([]kv.Record, error)
}

// Config wires a Manager.
type Config struct {
	Store  Store
	Types  *schema.Registry
	Logger *slog.Logger
	// CABundle is published in every namespace's kube-root-ca.crt.
	CABundle []byte
	// ClientCABundle verifies client certificates; it is published in
	// kube-system/extension-apiserver-authentication.
	ClientCABundle []byte
	// RequestHeader is the front-proxy authentication published beside it
	// (its requestheader-* keys; nil: none).
	RequestHeader *RequestHeaderInfo
	// Advertise is this replica's address in the kubernetes Service's
	// endpoints (none without an address); EndpointLeaseDuration how long
	// a replica stays listed without renewing.
	Advertise             netip.AddrPort
	EndpointLeaseDuration time.Duration
	// NamespaceDeletionGrace is how long a deleted namespace waits before
	// its contents are deleted, so that the other replicas' admission has
	// seen the deletion and admits nothing more into it (0: at once).
	NamespaceDeletionGrace time.Duration
	// ServiceRanges give the kubernetes Service its address.
	ServiceRanges registry.ServiceRanges
	// ProxyClientCert is presented to aggregated API servers when their
	// availability is checked (nil: none).
	ProxyClientCert *registry.KeyPair
	// Controllers switches the controllers Tabula runs for
	// kube-controller-manager on and off by kcm's names and --controllers
	// syntax (see names.go); empty means all.
	Controllers []string
}

// Manager runs the controllers of one server.
type Manager struct {
	cfg   Config
	store Store
	types *schema.Registry
	log   *slog.Logger
	api   *registry.Registry
	// onStartReconciled: the local APIServices were put back at this
	// start (reconcileOnStartAPIServices runs once, not at each restart
	// of the bootstrap controller's loop).
	onStartReconciled atomic.Bool
	// staleAggregated lists the group-versions aggregated discovery
	// cannot describe (nil: none); see SetStaleAggregated.
	staleAggregated func() []string
	// gcQueue feeds owners to the garbage collector.
	gcQueue chan gcOwner
	// bootstrapped flips once the bootstrap policy objects exist.
	bootstrapped atomic.Bool
	// flowcontrolReady flips once kube's flow-control configuration is
	// in place.
	flowcontrolReady atomic.Bool
	// crds is what the CRD controller serves.
	crds *crdState
	// quotas are the namespaces whose quotas wait for a recount.
	quotas *quotaState
	// left closes once the kubernetes Service controller has stopped,
	// having taken this replica out of the endpoints.
	left    chan struct{}
	leaving atomic.Bool // the controller that closes left was started
}

// New returns a Manager; SetRegistry must be called before Run (the
// registry needs the Manager's Observer first).
func New(cfg Config) *Manager {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.EndpointLeaseDuration == 0 {
		cfg.EndpointLeaseDuration = 15 * time.Second
	}
	return &Manager{cfg: cfg, store: cfg.Store, types: cfg.Types, log: cfg.Logger, gcQueue: make(chan gcOwner, 1024),
		crds: newCRDState(), quotas: newQuotaState(), left: make(chan struct{})}
}

// WaitLeft waits until the controllers, once their context has ended,
// have taken this replica out of the kubernetes Service's endpoints (or
// until ctx ends): the database must stay open for that.
func (m *Manager) WaitLeft(ctx context.Context) {
	if !m.leaving.Load() {
		return
	}
	select {
	case <-m.left:
	case <-ctx.Done():
	}
}

// Observer hears of the registry's writes for the garbage collector.
func (m *Manager) Observer() registry.Observer { return gcObserver{m} }

// SetRegistry gives the controllers the registry they write through.
func (m *Manager) SetRegistry(api *registry.Registry) { m.api = api }

// SetStaleAggregated tells the namespace controller which Service-backed
// group-versions aggregated discovery lists as Stale (their server is
// unavailable or its discovery could not be read); call it before Run.
func (m *Manager) SetStaleAggregated(f func() []string) { m.staleAggregated = f }

// Bootstrapped reports whether the bootstrap policy objects exist
// (kube-apiserver's poststarthook/rbac/bootstrap-roles readiness).
func (m *Manager) Bootstrapped() bool { return m.bootstrapped.Load() }

// FlowcontrolConfigured reports whether the mandatory and suggested
// FlowSchemas and PriorityLevelConfigurations are in place
// (kube-apiserver's poststarthook/priority-and-fairness-config-producer).
func (m *Manager) FlowcontrolConfigured() bool { return m.flowcontrolReady.Load() }
