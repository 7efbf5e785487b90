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
	"k8s.io/apiserver/pkg/endpoints"
	"k8s.io/client-go/transport"
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

// refresh reads one target's discovery.
func (a *Aggregator) refresh(ctx context.Context, t *Target) {
	d := &discovered{}
	if t.Available {
		res, err := a.fetchDiscovery(ctx, t)
		if err == nil {
			d = &discovered{resources: res, current: true}
		} else {
			a.cfg.Logger.Debug("aggregated API: discovery not read", "apiservice", t.api.Name, "err", err)
		}
	}
	// A failed read lists the version with no resources (Stale), as
	// kube-aggregator's does.
	a.mu.Lock()
	defer a.mu.Unlock()
	if cur := a.remote[t.GroupVersion]; cur == t {
		cur.resources = d
	}
}

// fetchDiscovery reads a group-version's resource list from its server
// as kube-aggregator's checks do: as system:kube-aggregator in
// system:masters, within a few seconds.
func (a *Aggregator) fetchDiscovery(ctx context.Context, t *Target) ([]apidiscoveryv2.APIResourceDiscovery, error) {
	loc, err := a.resolver.ResolveEndpoint(t.Namespace, t.Service, t.Port)
	if err != nil {
		return nil, err
	}
	if t.transportErr != nil {
		return nil, t.transportErr
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	u := *loc
	u.Scheme, u.Path = "https", "/apis/"+t.GroupVersion.Group+"/"+t.GroupVersion.Version
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	transport.SetAuthProxyHeaders(req, "system:kube-aggregator", "", []string{"system:masters"}, nil)
	resp, err := (&http.Client{Transport: t.transport}).Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 8<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", u.String(), resp.Status)
	}
	var list metav1.APIResourceList
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, fmt.Errorf("%s: %w", u.String(), err)
	}
	return endpoints.ConvertGroupVersionIntoToDiscovery(list.APIResources)
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
