package aggregator

import (
	"context"
	"log/slog"
	"net/http"
	"sort"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/rest"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiregistrationv1helper "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1/helper"

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
	resolver registry.ServiceResolver

	mu sync.RWMutex
	// remote are the Service-backed group-versions, by group-version.
	remote map[runtimeschema.GroupVersion]*Target
	// changed is signalled when remote changes (discovery re-fetches).
	changed chan struct{}
}

// Target is one Service-backed APIService as the proxy uses it.
type Target struct {
	Name                           string
	GroupVersion                   runtimeschema.GroupVersion
	GroupPriority, VersionPriority int32
	Namespace, Service             string
	Port                           int32
	Available                      bool
	transport                      http.RoundTripper
	transportErr                   error
	resources                      *discovered
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
	gv := runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
	if s.Spec.Service == nil {
		a.mu.Lock()
		if t := a.remote[gv]; t != nil && t.Name == s.Name {
			delete(a.remote, gv)
		}
		a.mu.Unlock()
		a.signal()
		return
	}
	t := &Target{Name: s.Name, GroupVersion: gv, GroupPriority: s.Spec.GroupPriorityMinimum, VersionPriority: s.Spec.VersionPriority,
		Namespace: s.Spec.Service.Namespace, Service: s.Spec.Service.Name, Port: 443,
		Available: apiregistrationv1helper.IsAPIServiceConditionTrue(s, apiregistrationv1.Available)}
	if s.Spec.Service.Port != nil {
		t.Port = *s.Spec.Service.Port
	}
	t.transport, t.transportErr = a.transportFor(s)
	a.mu.Lock()
	if old := a.remote[gv]; old != nil && old.resources != nil {
		// Kept, stale, until read again.
		t.resources = &discovered{resources: old.resources.resources}
	}
	a.remote[gv] = t
	a.mu.Unlock()
	a.signal()
}

func (a *Aggregator) remove(obj runtime.Object) {
	s, ok := obj.(*apiregistrationv1.APIService)
	if !ok {
		return
	}
	gv := runtimeschema.GroupVersion{Group: s.Spec.Group, Version: s.Spec.Version}
	a.mu.Lock()
	if t := a.remote[gv]; t != nil && t.Name == s.Name {
		delete(a.remote, gv)
	}
	a.mu.Unlock()
	a.signal()
}

func (a *Aggregator) signal() {
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// transportFor is kube-aggregator's transport to an APIService: its CA
// bundle (or no verification when it says so) for the name
// <service>.<namespace>.svc, the proxy's client certificate, HTTP/1.1
// (upgrades pass through it).
func (a *Aggregator) transportFor(s *apiregistrationv1.APIService) (http.RoundTripper, error) {
	cfg := &rest.Config{TLSClientConfig: rest.TLSClientConfig{
		Insecure:   s.Spec.InsecureSkipTLSVerify,
		ServerName: s.Spec.Service.Name + "." + s.Spec.Service.Namespace + ".svc",
		CAData:     s.Spec.CABundle,
		NextProtos: []string{"http/1.1"},
	}}
	if c := a.cfg.ClientCert; c != nil {
		cfg.TLSClientConfig.CertData, cfg.TLSClientConfig.KeyData = c.CertPEM, c.KeyPEM
	}
	return rest.TransportFor(cfg)
}

// Target is the Service-backed APIService of a group-version, or nil when
// Tabula serves it (or nothing does).
func (a *Aggregator) Target(group, version string) *Target {
	if a == nil {
		return nil
	}
	a.mu.RLock()
	defer a.mu.RUnlock()
	return a.remote[runtimeschema.GroupVersion{Group: group, Version: version}]
}

// Targets are the Service-backed APIServices in kube-aggregator's order:
// by group priority (highest first), then group name, then version
// priority and kube's version order.
func (a *Aggregator) Targets() []*Target {
	if a == nil {
		return nil
	}
	a.mu.RLock()
	out := make([]*Target, 0, len(a.remote))
	for _, t := range a.remote {
		out = append(out, t)
	}
	a.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.GroupVersion.Group != y.GroupVersion.Group {
			if x.GroupPriority != y.GroupPriority {
				return x.GroupPriority > y.GroupPriority
			}
			return x.GroupVersion.Group < y.GroupVersion.Group
		}
		if x.VersionPriority != y.VersionPriority {
			return x.VersionPriority > y.VersionPriority
		}
		return version.CompareKubeAwareVersionStrings(x.GroupVersion.Version, y.GroupVersion.Version) > 0
	})
	return out
}

// Run keeps the remote group-versions' discovery documents current until
// ctx ends.
func (a *Aggregator) Run(ctx context.Context) {
	a.runDiscovery(ctx)
}
