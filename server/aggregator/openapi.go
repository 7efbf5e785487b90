package aggregator

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/handler3"
)

// fetchOpenAPIV3 reads the /openapi/v3 index of t's server as
// kube-aggregator's OpenAPI v3 downloader does (as system:aggregator) and
// returns the entry it lists for t's group-version, or nil when it lists
// none or the server has no v3 index (404).
func (a *Aggregator) fetchOpenAPIV3(ctx context.Context, t *Target) (*handler3.OpenAPIV3DiscoveryGroupVersion, error) {
	host, get, err := a.getter(ctx, t)
	if err != nil {
		return nil, err
	}
	resp, body, err := get("/openapi/v3", "application/json", "system:aggregator", nil)
	if err != nil {
		return nil, err
	}
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusNotFound:
		return nil, nil
	default:
		return nil, fmt.Errorf("%s/openapi/v3: %s", host, resp.Status)
	}
	var index handler3.OpenAPIV3Discovery
	if err := json.Unmarshal(body, &index); err != nil {
		return nil, fmt.Errorf("%s/openapi/v3: %w", host, err)
	}
	e, ok := index.Paths[openAPIV3Name(t)]
	if !ok || e.ServerRelativeURL == "" {
		return nil, nil
	}
	return &e, nil
}

// openAPIV3Name is t's group-version's name in a /openapi/v3 index.
func openAPIV3Name(t *Target) string {
	return "apis/" + t.GroupVersion.Group + "/" + t.GroupVersion.Version
}

// OpenAPIV3 lists, by name ("apis/<group>/<version>"), the entries the
// extension servers' own /openapi/v3 indexes give for their
// group-versions, for the server's index: each points at the document on
// that server, with its hash, which OpenAPIV3Target proxies. An entry
// stays after a failed read, as kube-aggregator keeps the last index it
// read.
//
// kube-aggregator merges every path an extension server lists, including
// ones kube-apiserver lists too ("version", "apis"), and which of the two
// the merged index shows is left to map order; here an extension server
// adds only its own group-version.
func (a *Aggregator) OpenAPIV3() map[string]handler3.OpenAPIV3DiscoveryGroupVersion {
	a.mu.RLock()
	defer a.mu.RUnlock()
	out := map[string]handler3.OpenAPIV3DiscoveryGroupVersion{}
	for _, t := range a.remote {
		if t.openAPIV3 != nil {
			out[openAPIV3Name(t)] = *t.openAPIV3
		}
	}
	return out
}

// OpenAPIV3Target is the Service-backed APIService whose server serves
// the document /openapi/v3/<name>, or nil when no extension server's
// index listed it.
func (a *Aggregator) OpenAPIV3Target(name string) *Target {
	rest, ok := strings.CutPrefix(name, "apis/")
	if !ok {
		return nil
	}
	group, version, _ := strings.Cut(rest, "/")
	a.mu.RLock()
	defer a.mu.RUnlock()
	if t := a.remote[runtimeschema.GroupVersion{Group: group, Version: version}]; t != nil && t.openAPIV3 != nil && openAPIV3Name(t) == name {
		return t
	}
	return nil
}
