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
	"k8s.io/client-go/transport"
)

// discovered is what an extension server said it serves, at one fetch.
type discovered struct {
	resources []apidiscoveryv2.APIResourceDiscovery
	// current: fetched since the APIService last changed and available;
	// otherwise the resources are the last known (stale).
	current bool
}

// discoveryResync re-reads every extension server's discovery, as
// kube-aggregator refreshes its aggregated document.
const discoveryResync = time.Minute

func (a *Aggregator) runDiscovery(ctx context.Context) {
	tick := time.NewTicker(discoveryResync)
	defer tick.Stop()
	for {
		for _, t := range a.Targets() {
			a.mu.RLock()
			known := t.resources
			a.mu.RUnlock()
			if known != nil && known.current {
				continue
			}
			d := &discovered{}
			if t.Available {
				res, err := a.fetchDiscovery(ctx, t)
				if err != nil {
					a.cfg.Logger.Debug("aggregated API: discovery not read", "apiservice", t.Name, "err", err)
				} else {
					d = &discovered{resources: res, current: true}
				}
			}
			if !d.current && known != nil {
				d.resources = known.resources
			}
			a.mu.Lock()
			if cur := a.remote[t.GroupVersion]; cur == t {
				cur.resources = d
			}
			a.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return
		case <-a.changed:
		case <-tick.C:
			a.mu.Lock()
			for _, t := range a.remote {
				if t.resources != nil {
					t.resources = &discovered{resources: t.resources.resources}
				}
			}
			a.mu.Unlock()
		}
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

// Group is one group of Service-backed APIServices for discovery.
type Group struct {
	Name     string
	Priority int32
	// Versions in order, the preferred first.
	Versions []runtimeschema.GroupVersion
	// Aggregated is the group in aggregated discovery.
	Aggregated apidiscoveryv2.APIGroupDiscovery
}

// Groups are the Service-backed groups in kube-aggregator's order, with
// what is known of their resources (stale when the server is unavailable
// or was not read since it changed).
func (a *Aggregator) Groups() []Group {
	var out []Group
	for _, t := range a.Targets() {
		gv := t.GroupVersion
		if len(out) == 0 || out[len(out)-1].Name != gv.Group {
			out = append(out, Group{Name: gv.Group, Priority: t.GroupPriority,
				Aggregated: apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}}})
		}
		g := &out[len(out)-1]
		g.Versions = append(g.Versions, gv)
		v := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessStale}
		a.mu.RLock()
		if d := t.resources; d != nil {
			v.Resources = d.resources
			if d.current && t.Available {
				v.Freshness = apidiscoveryv2.DiscoveryFreshnessCurrent
			}
		}
		a.mu.RUnlock()
		g.Aggregated.Versions = append(g.Aggregated.Versions, v)
	}
	return out
}
