package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"time"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/transport"
	"k8s.io/kube-openapi/pkg/handler3"
)

// discovered is what an extension server said it serves, at its last
// read; current is false once a read failed (with no resources: Stale to
// clients).
type discovered struct {
	resources []apidiscoveryv2.APIResourceDiscovery
	current   bool
}

// discoveryResync re-reads every extension server's discovery, as
// kube-aggregator refreshes its aggregated document.
const discoveryResync = time.Minute

// Run keeps the extension servers' discovery read until ctx ends: every
// available one when an APIService changes and every minute; what was
// read stays until a read fails, as kube-aggregator keeps it.
func (a *Aggregator) Run(ctx context.Context) {
	tick := time.NewTicker(discoveryResync)
	defer tick.Stop()
	for {
		for _, group := range a.targetGroups() {
			for _, t := range group {
				a.refresh(ctx, t)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-tick.C:
		}
	}
}

// refresh reads one target's discovery and its OpenAPI v3 index entry.
func (a *Aggregator) refresh(ctx context.Context, t *Target) {
	d := &discovered{}
	var v3 *handler3.OpenAPIV3DiscoveryGroupVersion
	v3Read := false
	if t.Available {
		res, err := a.fetchDiscovery(ctx, t)
		if err == nil {
			d = &discovered{resources: res, current: true}
		} else {
			a.cfg.Logger.Debug("aggregated API: discovery not read", "apiservice", t.api.Name, "err", err)
		}
		if v3, err = a.fetchOpenAPIV3(ctx, t); err == nil {
			v3Read = true
		} else {
			a.cfg.Logger.Debug("aggregated API: OpenAPI v3 index not read", "apiservice", t.api.Name, "err", err)
		}
	}
	// A failed read lists the version with no resources (Stale), as
	// kube-aggregator's does; its OpenAPI entry stays as last read, as
	// kube-aggregator's OpenAPI controller keeps it.
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.remote[t.GroupVersion]; cur == t {
		cur.resources = d
		if v3Read {
			cur.openAPIV3 = v3
		}
	}
}

// fetchDiscovery reads a group-version's resources from its server as
// kube-aggregator's discovery manager does: its aggregated document
// (/apis, v2 or v2beta1, whose JSON is the same) as system:kube-aggregator
// in system:masters; a server without one is asked for the group-version's
// own list instead, as system:kube-aggregator alone. Each read has a few
// seconds.
func (a *Aggregator) fetchDiscovery(ctx context.Context, t *Target) ([]apidiscoveryv2.APIResourceDiscovery, error) {
	host, get, err := a.getter(ctx, t)
	if err != nil {
		return nil, err
	}
	resp, body, err := get("/apis", discovery.AcceptV2+","+discovery.AcceptV2Beta1, "system:kube-aggregator", []string{"system:masters"})
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	v2, _ := discovery.ContentTypeIsGVK(ct, aggregatedV2)
	v2beta1, _ := discovery.ContentTypeIsGVK(ct, aggregatedV2Beta1)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		return nil, fmt.Errorf("%s/apis: %s", host, resp.Status)
	case resp.StatusCode == http.StatusOK && (v2 || v2beta1):
		var list apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(body, &list); err != nil {
			return nil, fmt.Errorf("%s/apis: %w", host, err)
		}
		for _, g := range list.Items {
			for _, v := range g.Versions {
				if g.Name == t.GroupVersion.Group && v.Version == t.GroupVersion.Version {
					return withResponseKinds(v.Resources), nil
				}
			}
		}
		// A document that leaves the version out lists it Current with
		// no resources, as kube-aggregator's does.
		return nil, nil
	}
	path := "/apis/" + t.GroupVersion.Group + "/" + t.GroupVersion.Version
	resp, body, err = get(path, "application/json", "system:kube-aggregator", nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s%s: %s", host, path, resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s%s: %w", host, path, err)
	}
	return endpoints.ConvertGroupVersionIntoToDiscovery(list.APIResources)
}

// getter resolves t's server and returns its host and a reader of one
// path there as a user, with a few seconds for each read.
func (a *Aggregator) getter(ctx context.Context, t *Target) (string, func(path, accept, user string, groups []string) (*http.Response, []byte, error), error) {
	loc, err := a.resolver.ResolveEndpoint(t.Namespace, t.Service, t.Port)
	if err != nil {
		return "", nil, err
	}
	if t.transportErr != nil {
		return "", nil, t.transportErr
	}
	get := func(path, accept, user string, groups []string) (*http.Response, []byte, error) {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		u := *loc
		u.Scheme, u.Path = "https", path
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return nil, nil, err
		}
		req.Header.Set("Accept", accept)
		transport.SetAuthProxyHeaders(req, user, "", groups, nil)
		resp, err := (&http.Client{Transport: t.transport}).Do(req)
		if err != nil {
			return nil, nil, err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
		return resp, body, err
	}
	return loc.Host, get, nil
}

// The aggregated discovery document's kinds, as its Content-Type names them.
var (
	aggregatedV2      = runtimeschema.GroupVersionKind{Group: "apidiscovery.k8s.io", Version: "v2", Kind: "APIGroupDiscoveryList"}
	aggregatedV2Beta1 = runtimeschema.GroupVersionKind{Group: "apidiscovery.k8s.io", Version: "v2beta1", Kind: "APIGroupDiscoveryList"}
)

// withResponseKinds gives every resource and subresource a response kind,
// empty where the server gave none, as kube-aggregator does: client-go
// v0.26.0 to v0.26.3 dereference it.
func withResponseKinds(rs []apidiscoveryv2.APIResourceDiscovery) []apidiscoveryv2.APIResourceDiscovery {
	for i := range rs {
		if rs[i].ResponseKind == nil {
			rs[i].ResponseKind = &metav1.GroupVersionKind{}
		}
		for j := range rs[i].Subresources {
			if rs[i].Subresources[j].ResponseKind == nil {
				rs[i].Subresources[j].ResponseKind = &metav1.GroupVersionKind{}
			}
		}
	}
	return rs
}

// Group is one group of Service-backed APIServices in aggregated
// discovery (its versions in order, the preferred first), with the
// group's priority.
type Group struct {
	apidiscoveryv2.APIGroupDiscovery
	Priority int32
	// VersionPriorities are its versions' (their APIServices').
	VersionPriorities []int32
}

// Groups are the Service-backed groups in kube-aggregator's order, with
// what is known of their resources (Stale while the server is
// unavailable, has not been read, or its last read failed).
func (a *Aggregator) Groups() []Group {
	var out []Group
	for _, group := range a.targetGroups() {
		g := Group{APIGroupDiscovery: apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: group[0].GroupVersion.Group}},
			Priority: group[0].api.Spec.GroupPriorityMinimum}
		a.mu.RLock()
		for _, t := range group {
			v := apidiscoveryv2.APIVersionDiscovery{Version: t.GroupVersion.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessStale}
			if d := t.resources; d != nil {
				v.Resources = d.resources
				if d.current && t.Available {
					v.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
				}
			}
			g.Versions = append(g.Versions, v)
			g.VersionPriorities = append(g.VersionPriorities, t.api.Spec.VersionPriority)
		}
		a.mu.RUnlock()
		out = append(out, g)
	}
	return out
}
