package server

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"k8s.io/kubernetes/pkg/capabilities"
	"log/slog"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/controllers"
	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server/aggregator"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/auth/authz"
)

// Config wires a Server.
type Config struct {
	Store    Store
	Registry *schema.Registry
	// Authenticator checks credentials; nil lets every request in as an
	// admin (for in-process tests only).
	Authenticator *auth.Authenticator
	// AuthorizationModes are kube-apiserver's --authorization-mode chain
	// (auth.ModeNode, auth.ModeRBAC, ...); empty allows everything.
	AuthorizationModes []string
	// AnonymousAuth lets requests without credentials in as
	// system:anonymous (kube-apiserver's --anonymous-auth), for the
	// authorizer to decide; ignored beside AlwaysAllow, as kube does.
	AnonymousAuth bool
	// AnonymousPaths limits AnonymousAuth to these request paths (an
	// AuthenticationConfiguration's anonymous conditions); nil: all.
	AnonymousPaths []string
	// Admission chooses the admission plugins (kube-apiserver's
	// --enable-admission-plugins and related flags).
	Admission registry.AdmissionConfig
	Version   version.Info
	// OpenAPI serves /openapi/v2 and /openapi/v3; nil answers 404.
	OpenAPI http.Handler
	Logger  *slog.Logger
	// MaxBodyBytes caps request bodies (default 3 MiB, like kube-apiserver).
	MaxBodyBytes int64
	// MinRequestTimeout bounds watches that name no timeoutSeconds: each
	// gets a random duration in [1, 2) times this (default 30 minutes).
	MinRequestTimeout time.Duration
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the
	// read-only and mutating requests served at once (kube-apiserver's
	// defaults 400 and 200); more get 429. Zero means no limit.
	MaxRequestsInflight, MaxMutatingRequestsInflight int
	// MaxWatchesPerUser bounds the watches one user may hold open at
	// once; more get 429 with Retry-After. Members of system:masters are
	// not counted. Zero means no limit.
	MaxWatchesPerUser int
	// DenyPrivileged refuses Pods with privileged containers, as
	// kube-apiserver's --allow-privileged=false does. It is the process's
	// (kube's capabilities are set once per binary): the first server
	// made decides. Allowed by default, as kubeadm, kind and k3s start
	// kube-apiserver: CNI and CSI DaemonSets need it.
	DenyPrivileged bool
	// WatchWriteTimeout is how long one watch frame may take to reach a
	// client (default 30s): a watcher that stops reading is closed then
	// (and at its timeoutSeconds, whichever is first), its goroutine and
	// buffers freed.
	WatchWriteTimeout time.Duration
	// RequestTimeout bounds non-long-running requests (default 60s, like
	// kube-apiserver's --request-timeout); clients may ask for less.
	RequestTimeout time.Duration
	// EventTTL is how long core Events live (default 1 hour).
	EventTTL time.Duration
	// Metrics, when set, receives the request metrics and is served at
	// /metrics (authenticated, as on kube-apiserver).
	Metrics *prometheus.Registry
	// Profiling serves net/http/pprof at /debug/pprof/ (authenticated).
	Profiling bool
	// CABundle is published in every namespace's kube-root-ca.crt.
	CABundle []byte
	// ClientCABundle is the PEM bundle client certificates are verified
	// with, published in kube-system/extension-apiserver-authentication.
	ClientCABundle []byte
	// RequestHeader is the front-proxy authentication the Authenticator
	// was given, published there too (nil: none).
	RequestHeader *auth.RequestHeader
	// Controllers switches Tabula's copies of kube-controller-manager's
	// controllers on and off, in kcm's --controllers syntax (empty: all).
	Controllers []string
	// Advertise is the address and port other clients reach this replica
	// at, listed in the kubernetes Service's endpoints; without an address
	// the Service is kept but this replica is not listed.
	Advertise netip.AddrPort
	// EndpointLeaseDuration is how long a replica stays listed without
	// renewing its Lease (default 15s, as kube-apiserver's master leases).
	EndpointLeaseDuration time.Duration
	// NamespaceDeletionGrace is how long a deleted namespace waits before
	// its contents are deleted (see controllers.Config).
	NamespaceDeletionGrace time.Duration
	// ServiceAccountTokens issues serviceaccounts/token tokens; the
	// Authenticator should verify with the same (nil: a key made for this
	// process, for tests).
	ServiceAccountTokens *auth.ServiceAccountTokens
	// Audit is kube-apiserver's --audit-* configuration (zero: off).
	Audit AuditConfig
	// ServiceAccountJWKSURI overrides the key set URL the issuer's
	// discovery document names (default https://<Advertise>/openid/v1/jwks).
	ServiceAccountJWKSURI string
	// Kubelet is how pods/log, exec, attach, portforward and nodes/proxy
	// reach kubelets (kube-apiserver's --kubelet-* flags; zero: port
	// 10250, kube's preferred address types, no client certificate and the
	// kubelet's serving certificate not verified).
	Kubelet KubeletConfig
	// ServiceRanges are the pools Services allocate cluster IPs and node
	// ports from (default kube-apiserver's 10.96.0.0/12 and 30000-32767).
	ServiceRanges registry.ServiceRanges
	// NoPriorityAndFairness turns kube's API Priority and Fairness off
	// (kube-apiserver's --enable-priority-and-fairness=false): the two
	// max-in-flight pools limit requests instead.
	NoPriorityAndFairness bool
	// NoCBOR stops serving application/cbor (kube-apiserver 1.35's default:
	// its CBORServingAndStorage gate is off; Tabula's is on).
	NoCBOR bool
	// ProxyClientCert is presented to aggregated API servers
	// (--proxy-client-cert-file; nil: none).
	ProxyClientCert *registry.KeyPair
}

// Server serves the Kubernetes API from a Store.
type Server struct {
	cfg   Config
	store Store
	reg   *schema.Registry
	codec *codecs.Codec
	log   *slog.Logger
	echo  *echo.Echo
	// handler is echo with HTTP/2 requests run on reused goroutines.
	handler http.Handler
	authz   authz.Authorizer
	// audit is nil when auditing is off.
	audit *auditing

	metrics *requestMetrics
	// slis are the health checks' results, served at /metrics/slis.
	slis *healthSLIs
	// encoded holds encodings of stored objects by revision; held is
	// how often gets found theirs there.
	encoded *encodedCache
	held    heldRate
	// segments holds compressed runs of large answers (segmentedGzip).
	segments *segmentCache
	// api is the registry layer every write and read goes through.
	api *registry.Registry
	// kubelets finds a Node's kubelet and the transport to it;
	// proxyTransport reaches Pods and Service endpoints.
	kubelets       kubeletclient.ConnectionInfoGetter
	proxyTransport http.RoundTripper
	// controllers are the in-process controllers.
	controllers *controllers.Manager
	// agg serves the group-versions of Service-backed APIServices.
	agg *aggregator.Aggregator
	// flow is API Priority and Fairness (nil when off).
	flow *flowControl

	// shutdown closes when the server begins to stop; watches end on it.
	shutdown     chan struct{}
	shutdownOnce sync.Once
	ready        readiness
	watches      sync.WaitGroup
	// readOnly and mutating are the in-flight pools (nil: unlimited).
	readOnly, mutating inflight
	// watchUsers counts each user's open watches (MaxWatchesPerUser).
	watchUsersMu sync.Mutex
	watchUsers   map[string]int
}

// New builds a Server; Handler returns its HTTP handler.
func New(cfg Config) (*Server, error) {
	capabilities.Setup(!cfg.DenyPrivileged, 0)
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.MaxBodyBytes == 0 {
		cfg.MaxBodyBytes = 3 << 20
	}
	if cfg.RequestTimeout == 0 {
		cfg.RequestTimeout = time.Minute
	}
	if cfg.EventTTL == 0 {
		cfg.EventTTL = time.Hour
	}
	if cfg.ServiceAccountTokens == nil {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			return nil, err
		}
		if cfg.ServiceAccountTokens, err = auth.NewServiceAccountTokens(key); err != nil {
			return nil, err
		}
	}
	if cfg.EndpointLeaseDuration == 0 {
		cfg.EndpointLeaseDuration = 15 * time.Second
	}
	if !cfg.ServiceRanges.ClusterIPs.IsValid() {
		cfg.ServiceRanges = registry.DefaultServiceRanges()
	}
	if cfg.WatchWriteTimeout == 0 {
		cfg.WatchWriteTimeout = 30 * time.Second
	}
	if cfg.MinRequestTimeout == 0 {
		cfg.MinRequestTimeout = 30 * time.Minute
	}
	s := &Server{
		cfg:      cfg,
		store:    cfg.Store,
		reg:      cfg.Registry,
		codec:    codecs.New(cfg.Registry.Scheme, codecs.Options{CBOR: !cfg.NoCBOR}),
		log:      cfg.Logger,
		shutdown: make(chan struct{}),

		encoded:    newEncodedCache(encodedCacheBytes, encodedWritesBytes),
		segments:   newSegmentCache(segmentCacheBytes),
		readOnly:   newInflight(cfg.MaxRequestsInflight),
		mutating:   newInflight(cfg.MaxMutatingRequestsInflight),
		watchUsers: map[string]int{},
	}
	var rh *controllers.RequestHeaderInfo
	if r := cfg.RequestHeader; r != nil {
		rh = &controllers.RequestHeaderInfo{CAPEM: r.CAPEM, AllowedNames: r.AllowedNames, UsernameHeaders: r.UsernameHeaders,
			UIDHeaders: r.UIDHeaders, GroupHeaders: r.GroupHeaders, ExtraHeaderPrefixes: r.ExtraHeaderPrefixes}
	}
	s.controllers = controllers.New(controllers.Config{Store: cfg.Store, Types: cfg.Registry, Logger: cfg.Logger, CABundle: cfg.CABundle, ClientCABundle: cfg.ClientCABundle, RequestHeader: rh, Controllers: cfg.Controllers,
		Advertise: cfg.Advertise, EndpointLeaseDuration: cfg.EndpointLeaseDuration, NamespaceDeletionGrace: cfg.NamespaceDeletionGrace, ServiceRanges: cfg.ServiceRanges, ProxyClientCert: cfg.ProxyClientCert})
	if cfg.OpenAPI != nil {
		cfg.Admission.OpenAPIV3 = localOpenAPI{h: cfg.OpenAPI}
	}
	var err error
	if s.api, err = registry.New(registry.Config{Store: cfg.Store, Types: cfg.Registry, EventTTL: cfg.EventTTL, Observer: s.controllers.Observer(),
		Services: &cfg.ServiceRanges, Admission: cfg.Admission}); err != nil {
		return nil, err
	}
	s.controllers.SetRegistry(s.api)
	s.agg = aggregator.New(aggregator.Config{Registry: s.api, ClientCert: cfg.ProxyClientCert, Logger: cfg.Logger})
	s.controllers.SetStaleAggregated(s.agg.Stale)
	kubelets, err := s.newKubeletConnections(cfg.Kubelet)
	if err != nil {
		return nil, err
	}
	s.kubelets, s.proxyTransport = kubelets, newProxyTransport()
	var reg prometheus.Registerer
	if cfg.Metrics != nil {
		reg = cfg.Metrics
	}
	s.metrics = newRequestMetrics(reg)
	s.slis = newHealthSLIs()
	if reg != nil {
		s.encoded.register(reg)
		s.segments.register(reg)
	}
	if s.authz, err = s.newAuthorizer(); err != nil {
		return nil, err
	}
	// Audit IDs and object UIDs are random UUIDs, one or more per request:
	// read from the system's randomness in blocks rather than one by one
	// (once: the switch is package state, and servers may share a process).
	enableRandPool()
	if s.audit, err = newAuditing(cfg.Audit, cfg.Logger); err != nil {
		return nil, err
	}
	if !cfg.NoPriorityAndFairness {
		s.flow = s.newFlowControl()
	}
	cfg.Authenticator.SetServiceAccountLookup(s.tokenObjectUID)
	cfg.Authenticator.SetLegacyTokenObjects(legacyTokens{s})
	if cfg.Authenticator.BootstrapTokens() {
		cfg.Authenticator.SetBootstrapTokenSecrets(newBootstrapTokenSecrets(s.api).get)
	}
	s.echo = s.routes()
	s.handler = newWorkerPool(maxIdleWorkers, s.shutdown).wrap(s.echo)
	return s, nil
}

// RunControllers starts the in-process controllers; they stop when ctx
// ends.
func (s *Server) RunControllers(ctx context.Context) error {
	if err := s.controllers.Run(ctx); err != nil {
		return err
	}
	go s.agg.Run(ctx)
	if s.cfg.Metrics != nil {
		go s.countStoredObjects(ctx, s.metrics.storageObjects)
	}
	s.runFlowControl()
	s.MarkControllersStarted()
	return nil
}

// WaitControllers waits, once the context RunControllers was given has
// ended, for the controllers' last writes (this replica leaving the
// kubernetes Service's endpoints), or until ctx ends; close the store
// after it.
func (s *Server) WaitControllers(ctx context.Context) { s.controllers.WaitLeft(ctx) }

// Handler is the server's HTTP handler.
func (s *Server) Handler() http.Handler { return s.handler }

// BeginShutdown marks the server not ready and ends every open watch
// cleanly; call it before closing the listener.
func (s *Server) BeginShutdown() {
	s.shutdownOnce.Do(func() { close(s.shutdown) })
}

// WaitWatches waits for watch streams to finish after BeginShutdown.
func (s *Server) WaitWatches(ctx context.Context) {
	done := make(chan struct{})
	go func() { s.watches.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func prettyUserAgent(ua string) bool {
	return strings.HasPrefix(ua, "curl") || strings.HasPrefix(ua, "Wget") || strings.HasPrefix(ua, "Mozilla/5.0")
}

// enableRandPool turns on uuid's pool once per process.
var enableRandPool = sync.OnceFunc(uuid.EnableRandPool)
