package aggregator

import (
	"log/slog"
	"net/http"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"
	"k8s.io/kube-openapi/pkg/handler3"

	"github.com/tabula-dev/tabula/registry"
)

// Config is what the Aggregator needs.
type Config struct {
	Registry *registry.Registry
	// ClientCert is presented to the extension servers (nil: none, as
	// kube-apiserver without --proxy-client-cert-file).
	ClientCert *registry.KeyPair
	Logger     *slog.Logger
}

// Aggregator routes the group-versions of Service-backed APIServices.
type Aggregator struct {
	cfg      Config
	resolver webhook.ServiceResolver // the registry's, on its caches

	mu sync.RWMutex
	// remote are the Service-backed group-versions, by group-version.
	remote map[runtimeschema.GroupVersion]*Target
	// changed is signalled when remote changes (discovery re-fetches).
	changed chan struct{}
}

// Target is one Service-backed APIService as the proxy uses it; it is
// replaced, not changed, when the APIService changes (resources aside,
// which are guarded by the Aggregator's lock).
type Target struct {
	api                *apiregistrationv1.APIService
	GroupVersion       runtimeschema.GroupVersion
	Namespace, Service string
	Port               int32
	Available          bool
	transport          http.RoundTripper
	transportErr       error
	resources          *discovered
	// openAPIV3 is its server's /openapi/v3 entry for the group-version
	// at the last good read (nil: none yet, or none listed).
	openAPIV3 *handler3.OpenAPIV3DiscoveryGroupVersion
}

// New watches APIServices through the registry's cache, which must be
// asked for before the caches run (it is, from server.New).
func New(cfg Config) *Aggregator {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	a := &Aggregator{cfg: cfg, resolver: cfg.Registry.CachedServiceResolver(),
		remote: map[runtimeschema.GroupVersion]*Target{}, changed: make(chan struct{}, 1)}
	cfg.Registry.Cache(apiregistrationv1.GroupName, "v1", "apiservices", true, registry.CacheHandler{
		Set:    a.set,
		Delete: func(_, _ string, obj runtime.Object) { a.remove(obj) },
	})
	return a
}

func (a *Aggregator) set(obj runtime.Object) {
	s, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return
	}
	if s.Spec.Service == nil {
		a.remove(obj) // served here (again)
		return
	}
	t := &Target{api: s, GroupVersion: runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version},
		Namespace: s.Spec.Service.Namespace, Service: s.Spec.Service.Name, Port: 443,
		Available: apiregistrationv1helper.IsAPIServiceConditionTrue(s, apiregistrationv1.Available)}
	if s.Spec.Service.Port != nil {
		t.Port = *s.Spec.Service.Port
	}
	t.transport, t.transportErr = a.transportFor(s)
	a.mu.Lock()
	if old := a.remote[t.GroupVersion]; old != nil {
		// What it served stays listed until a read says otherwise.
		t.resources, t.openAPIV3 = old.resources, old.openAPIV3
	}
	a.remote[t.GroupVersion] = t
	a.mu.Unlock()
	a.signal()
}

// remove forgets a group-version (an APIService's name is always
// <version>.<group>, so there is one per group-version).
func (a *Aggregator) remove(obj runtime.Object) {
	s, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return
	}
	a.mu.Lock()
	_, had := a.remote[runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}]
	delete(a.remote, runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version})
	a.mu.Unlock()
	if had {
		a.signal()
	}
}

func (a *Aggregator) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// transportFor is kube-aggregator's transport to an APIService: its CA
// bundle (or no verification when it says so) for the name
// <service>.<namespace>.svc, and the proxy's client certificate.
func (a *Aggregator) transportFor(s *apiregistrationv1.APIService) (http.RoundTripper, error) {
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{
		Insecure:   s.Spec.InsecureSkipTLSVerify,
		ServerName: s.Spec.Service.Name + "." + s.Spec.Service.Namespace + ".svc",
		CAData:     s.Spec.CABundle,
	}}
	if c := a.cfg.ClientCert; c != nil {
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = c.CertPEM, c.KeyPEM
	}
	return rest.TransportFor(cfg)
}

// Target is the Service-backed APIService of a group-version, or nil when
// Tabula serves it (or nothing does).
func (a *Aggregator) Target(group, version string) *Target {
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.remote[runtimeschema.GroupVersion{Group: group, Version: version}]
}

// targetGroups are the Service-backed APIServices by group, in
// kube-aggregator's order (kube's SortedByGroupAndVersion).
func (a *Aggregator) targetGroups() [][]*Target {
	a.mu.RLock()
	byName := make(map[string]*Target, len(a.remote))
	apis := make([]*apiregistrationv1.APIService, 0, len(a.remote))
	for _, t := range a.remote {
		byName[t.api.Name] = t
		apis = append(apis, t.api)
	}
	a.mu.RUnlock()
	var out [][]*Target
	for _, group := range apiregistrationv1helper.SortedByGroupAndVersion(apis) {
		ts := make([]*Target, len(group))
		for i, s := range group {
			ts[i] = byName[s.Name]
		}
		out = append(out, ts)
	}
	return out
}

// Stale lists the Service-backed group-versions aggregated discovery
// shows as Stale (see Groups), as "group/version", once they were looked
// at: kube's discovery lists a new APIService only after its first read.
func (a *Aggregator) Stale() []string {
	var out []string
	for _, group := range a.targetGroups() {
		a.mu.RLock()
		for _, t := range group {
			if d := t.resources; d != nil && (!d.current || !t.Available) {
				out = append(out, t.GroupVersion.String())
			}
		}
		a.mu.RUnlock()
	}
	return out
}
