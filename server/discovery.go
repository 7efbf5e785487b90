package server

import (
	"bytes"
	"cmp"
	"crypto/sha512"
	"encoding/hex"
	"net/http"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/labstack/echo/v4"
	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	utilversion "k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server/aggregator"
	"github.com/tabula-dev/tabula/server/auth"
)

func (s *Server) discoveryRoutes(e *echo.Echo) {
	e.GET("/api", s.getAPI)
	e.GET("/api/", s.getAPI) // kube-apiserver answers both, as the e2e suite reads them
	e.GET("/api/v1", func(c echo.Context) error { return s.getResourceList(c, "", "v1") })
	e.GET("/apis", s.getAPIs)
	// kube-aggregator serves /apis/ with the group list alone: no
	// aggregated form there.
	apisSlash := func(c echo.Context) error {
		out, err := negotiateAccept(c.Request().Header.Get("Accept"), codecs.Offer{Protobuf: true})
		if err != nil {
			return err
		}
		return s.writeLegacyDiscovery(c, out.MediaType, &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups:   s.allGroups(),
		})
	}
	e.GET("/apis/", apisSlash)
	e.GET("/apis/:group", s.getGroup)
	e.GET("/apis/:group/", s.getGroup)
	e.GET("/apis/:group/:version", func(c echo.Context) error {
		if t := s.agg.Target(c.Param("group"), c.Param("version")); t != nil {
			return s.proxyAggregated(c, t)
		}
		return s.getResourceList(c, c.Param("group"), c.Param("version"))
	})
	// kube-aggregator proxies every method of a Service-backed
	// group-version's own path; here it is only discovery's.
	other := nonGetMethods
	e.Match(other, "/apis/:group/:version", func(c echo.Context) error {
		if t := s.agg.Target(c.Param("group"), c.Param("version")); t != nil {
			return s.proxyAggregated(c, t)
		}
		if len(s.reg.TypesIn(runtimeschema.GroupVersion{Group: c.Param("group"), Version: c.Param("version")})) > 0 {
			return methodNotAllowed()
		}
		return notFoundPath()
	})
	// kube's router has a GET route alone for /version, /api and /api/v1
	// (any other method is its 405); kube-aggregator's /apis and
	// /apis/<group> handlers answer whatever the method.
	notAllowed := func(echo.Context) error { return methodNotAllowed() }
	for _, path := range []string{"/version", "/api", "/api/", "/api/v1"} {
		e.Match(other, path, notAllowed)
	}
	e.Match(other, "/apis", s.getAPIs)
	e.Match(other, "/apis/", apisSlash)
	e.Match(other, "/apis/:group", s.getGroup)
}

// nonGetMethods are the methods a GET-only route of kube's router refuses.
var nonGetMethods = []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodHead, http.MethodOptions}

// proxyAggregated relays a request for a Service-backed group-version to
// its server, for the authenticated user.
func (s *Server) proxyAggregated(c echo.Context, t *aggregator.Target) error {
	u, ok := auth.UserFrom(c.Request().Context())
	if !ok || u == nil {
		http.Error(c.Response(), "missing user", http.StatusInternalServerError)
		return nil
	}
	// Served elsewhere: priority and fairness gives back the seats a watch
	// took for its start now, as kube-aggregator's proxy does.
	watchInitialized(c.Request().Context())
	s.agg.Proxy(c.Response(), c.Request(), t, aggregator.User{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	return nil
}

// withRemote merges the groups of Service-backed APIServices into the
// local ones, as kube-aggregator lists them beside kube-apiserver's own:
// both lists are in kube's order (group priority, highest first, then
// name), so they merge like two sorted lists; a group served here gains
// the remote versions after its own. insert and extend build the result.
func withRemote[T any](local []T, remote []aggregator.Group, name func(T) string,
	insert func(aggregator.Group) T, extend func(*T, aggregator.Group)) []T {
	if len(remote) == 0 {
		return local
	}
	local = slices.Clone(local)
	at := make(map[string]int, len(local))
	for i, l := range local {
		at[name(l)] = i
	}
	var others []aggregator.Group
	for _, g := range remote {
		if i, ok := at[g.Name]; ok {
			extend(&local[i], g)
		} else {
			others = append(others, g)
		}
	}
	out := make([]T, 0, len(local)+len(others))
	for _, l := range local {
		for len(others) > 0 && groupBefore(others[0], name(l)) {
			out = append(out, insert(others[0]))
			others = others[1:]
		}
		out = append(out, l)
	}
	for _, g := range others {
		out = append(out, insert(g))
	}
	return out
}

// groupBefore: the remote group sorts before the local group named
// other (kube-apiserver's priority for its own groups, a CRD group's
// otherwise).
func groupBefore(g aggregator.Group, other string) bool {
	p, ok := schema.GroupPriorityOf(other)
	if !ok {
		p = schema.CRDGroupPriority
	}
	if g.Priority != p {
		return g.Priority > p
	}
	return g.Name < other
}

// discoveryForm reads a discovery request's Accept: the media type of
// aggregated discovery (apidiscovery.k8s.io/v2; v2beta1 is no longer
// served, as on kube-apiserver 1.35), or "" for the legacy documents. An
// Accept that names only forms Tabula does not serve (an older aggregated
// version) is kube-apiserver's 406.
//
// On /api (root), an Accept naming no aggregated form gets kube's generic
// 406 text instead.
func discoveryForm(accept string, root bool) (aggregatedType string, err error) {
	legacy := strings.TrimSpace(accept) == ""
	sawAggregated := false
	for _, part := range strings.Split(accept, ",") {
		p := strings.ReplaceAll(strings.TrimSpace(part), " ", "")
		mt, params, _ := strings.Cut(p, ";")
		if !strings.Contains(params, "as=") {
			switch mt {
			case codecs.JSON, codecs.YAML, codecs.Protobuf, "*/*", "application/*":
				legacy = true
			}
			continue
		}
		sawAggregated = true
		if strings.Contains(params, "g=apidiscovery.k8s.io") && strings.Contains(params, "as=APIGroupDiscoveryList") &&
			(strings.Contains(params, "v=v2;") || strings.HasSuffix(params, "v=v2")) {
			if mt == codecs.Protobuf {
				return codecs.Protobuf, nil
			}
			return codecs.JSON, nil
		}
	}
	if !legacy && root && !sawAggregated {
		return "", notAcceptable(codecs.Offer{Protobuf: true}.Available())
	}
	if !legacy {
		return "", &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: http.StatusNotAcceptable, Reason: metav1.StatusReasonNotAcceptable,
			Message: "only the following media types are accepted: " + codecs.Offer{Protobuf: true}.Available(),
		}}
	}
	return "", nil
}

func (s *Server) getAPI(c echo.Context) error {
	if mt, err := discoveryForm(c.Request().Header.Get("Accept"), true); err != nil || mt != "" {
		if err != nil {
			return err
		}
		return s.writeAggregated(c, mt, true)
	}
	return s.writeDiscovery(c, &metav1.APIVersions{
		TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
		Versions: []string{"v1"},
		ServerAddressByClientCIDRs: []metav1.ServerAddressByClientCIDR{
			{ClientCIDR: "0.0.0.0/0", ServerAddress: c.Request().Host},
		},
	})
}

// groups returns the named API groups with their versions, in
// kube-apiserver's priority order (schema/priorities.go).
func (s *Server) groups() []metav1.APIGroup {
	var out []metav1.APIGroup
	idx := map[string]int{}
	for _, gv := range s.reg.GroupVersions() {
		if gv.Group == "" || s.agg.Target(gv.Group, gv.Version) != nil {
			continue // the core group, or a version an APIService serves elsewhere
		}
		gvd := metav1.GroupVersionForDiscovery{GroupVersion: gv.String(), Version: gv.Version}
		i, ok := idx[gv.Group]
		if !ok {
			idx[gv.Group] = len(out)
			out = append(out, metav1.APIGroup{Name: gv.Group, PreferredVersion: gvd})
			i = len(out) - 1
		}
		out[i].Versions = append(out[i].Versions, gvd)
	}
	return out
}

// allGroups are the groups served here and by aggregated servers.
func (s *Server) allGroups() []metav1.APIGroup {
	versions := func(g aggregator.Group) []metav1.GroupVersionForDiscovery {
		var out []metav1.GroupVersionForDiscovery
		for _, v := range g.Versions {
			out = append(out, metav1.GroupVersionForDiscovery{GroupVersion: g.Name + "/" + v.Version, Version: v.Version})
		}
		return out
	}
	return withRemote(s.groups(), s.agg.Groups(), func(g metav1.APIGroup) string { return g.Name },
		func(g aggregator.Group) metav1.APIGroup {
			vs := versions(g)
			return metav1.APIGroup{Name: g.Name, Versions: vs, PreferredVersion: vs[0]}
		},
		func(l *metav1.APIGroup, g aggregator.Group) {
			vs := withRemoteVersions(l.Name, l.Versions, versions(g), g.VersionPriorities,
				func(v metav1.GroupVersionForDiscovery) string { return v.Version })
			l.Versions, l.PreferredVersion = vs, vs[0]
		})
}

// withRemoteVersions orders a group's versions served here (local) and
// by APIServices (remote, with their priorities) as kube-aggregator
// orders a group's APIServices: version priority, highest first, then
// kube's version order.
func withRemoteVersions[V any](group string, local, remote []V, remotePriorities []int32, version func(V) string) []V {
	type ranked struct {
		v V
		p int32
	}
	all := make([]ranked, 0, len(local)+len(remote))
	for _, v := range local {
		all = append(all, ranked{v, schema.VersionPriorityOf(runtimeschema.GroupVersion{Group: group, Version: version(v)})})
	}
	for i, v := range remote {
		all = append(all, ranked{v, remotePriorities[i]})
	}
	sort.SliceStable(all, func(i, j int) bool {
		if all[i].p != all[j].p {
			return all[i].p > all[j].p
		}
		return utilversion.CompareKubeAwareVersionStrings(version(all[i].v), version(all[j].v)) > 0
	})
	out := make([]V, len(all))
	for i, r := range all {
		out[i] = r.v
	}
	return out
}

func (s *Server) getAPIs(c echo.Context) error {
	if mt, err := discoveryForm(c.Request().Header.Get("Accept"), false); err != nil || mt != "" {
		if err != nil {
			return err
		}
		return s.writeAggregated(c, mt, false)
	}
	return s.writeDiscovery(c, &metav1.APIGroupList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
		Groups:   s.allGroups(),
	})
}

func (s *Server) getGroup(c echo.Context) error {
	for _, g := range s.allGroups() {
		if g.Name == c.Param("group") {
			// A group's document has no aggregated form: its handler
			// negotiates the legacy one alone.
			out, err := negotiateAccept(c.Request().Header.Get("Accept"), codecs.Offer{Protobuf: true})
			if err != nil {
				return err
			}
			g.TypeMeta = metav1.TypeMeta{Kind: "APIGroup", APIVersion: "v1"}
			return s.writeLegacyDiscovery(c, out.MediaType, &g)
		}
	}
	return plainText(c, http.StatusNotFound, "404 page not found\n")
}

// writeDiscovery answers /api or /apis in the legacy form: the one the
// Accept names first of kube's discovery encodings (JSON, YAML,
// Protobuf), JSON when it names none (discoveryForm judged it already).
func (s *Server) writeDiscovery(c echo.Context, obj runtime.Object) error {
	mt := codecs.JSON
	if out, ok := codecs.Negotiate(c.Request().Header.Get("Accept"), codecs.Offer{Protobuf: true}); ok && out.View == codecs.ViewObject {
		mt = out.MediaType
	}
	return s.writeLegacyDiscovery(c, mt, obj)
}

// writeLegacyDiscovery writes a legacy discovery document in mt, as
// kube's discovery handlers negotiate them.
func (s *Server) writeLegacyDiscovery(c echo.Context, mt string, obj runtime.Object) error {
	if mt == codecs.JSON || mt == "" {
		return s.writeJSON(c, http.StatusOK, obj)
	}
	c.Response().Header().Set(echo.HeaderContentType, mt)
	c.Response().WriteHeader(http.StatusOK)
	return s.codec.Encode(c.Response(), mt, obj, false)
}

func (s *Server) getResourceList(c echo.Context, group, version string) error {
	gv := runtimeschema.GroupVersion{Group: group, Version: version}
	types := s.reg.TypesIn(gv)
	if len(types) == 0 {
		// kube's router answers below a built-in group's path; a group
		// only CRDs serve is the custom resource handler's, which passes
		// a version it does not serve to the plain-text 404.
		if group != "" && !slices.ContainsFunc(s.reg.Types(), func(t *schema.Type) bool { return t.Group == group && !t.Unstructured }) {
			return plainText(c, http.StatusNotFound, "404 page not found\n")
		}
		return notFoundPath()
	}
	// kube-apiserver writes the legacy list with kind only for the core
	// group and kind+apiVersion for named groups.
	list := &metav1.APIResourceList{
		GroupVersion: gv.String(),
	}
	list.Kind = "APIResourceList"
	if group != "" {
		list.APIVersion = "v1"
	}
	sort.SliceStable(types, func(i, j int) bool { return types[i].Resource < types[j].Resource })
	for _, t := range types {
		list.APIResources = append(list.APIResources, metav1.APIResource{
			Name: t.Resource, SingularName: t.Singular, Namespaced: t.Namespaced, Kind: t.Kind,
			Verbs: t.ServedVerbs(), ShortNames: t.ShortNames, Categories: t.Categories,
			StorageVersionHash: s.reg.StorageVersionHash(t),
		})
		subs := t.Subresources
		if !t.Unstructured {
			// kube installs a built-in kind's paths sorted; a custom
			// resource's subresources come as its handler adds them.
			subs = slices.Sorted(slices.Values(subs))
		}
		for _, sub := range subs {
			info := t.Subresource(sub)
			r := metav1.APIResource{Name: t.Resource + "/" + sub, Namespaced: t.Namespaced, Kind: t.Kind, Verbs: info.Verbs,
				Group: info.Group, Version: info.Version}
			if info.Kind != "" {
				r.Kind = info.Kind
			}
			list.APIResources = append(list.APIResources, r)
		}
	}
	// kube's router produces the list in its encodings alone (text/html
	// is its 406), and its handler negotiates no view (a Table, the
	// aggregated form: 406). kube-apiserver 1.35 answers CBOR here only
	// (its other discovery documents are JSON or 406); for /api/v1 it
	// panics instead, and the list is served here.
	out, err := negotiateAccept(c.Request().Header.Get("Accept"), codecs.Offer{Protobuf: true, CBOR: s.codec.CBOR(), Routed: true})
	if err != nil {
		return err
	}
	return s.writeLegacyDiscovery(c, out.MediaType, list)
}

func (s *Server) writeAggregated(c echo.Context, mediaType string, legacy bool) error {
	obj := s.aggregatedV2(legacy)
	ct := mediaType + ";g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
	var body bytes.Buffer
	if mediaType == codecs.Protobuf {
		b, err := discoveryCodec().ProtobufBytes(obj)
		if err != nil {
			return err
		}
		body.Write(b)
	} else if err := codecs.EncodeJSON(&body, obj, wantsPretty(c)); err != nil {
		return err
	}
	// Clients cache discovery by ETag, a quoted content hash as on
	// kube-apiserver, and revalidate with If-None-Match.
	sum := sha512.Sum512(body.Bytes())
	etag := `"` + strings.ToUpper(hex.EncodeToString(sum[:])) + `"`
	h := c.Response().Header()
	h.Set("ETag", etag)
	h.Set("Vary", "Accept")
	h.Set("Cache-Control", "public")
	if c.Request().Header.Get("If-None-Match") == etag {
		return c.NoContent(http.StatusNotModified)
	}
	h.Set(echo.HeaderContentType, ct)
	c.Response().WriteHeader(http.StatusOK)
	_, err := c.Response().Write(body.Bytes())
	return err
}

func (s *Server) aggregatedV2(legacy bool) *apidiscoveryv2.APIGroupDiscoveryList {
	list := &apidiscoveryv2.APIGroupDiscoveryList{
		TypeMeta: metav1.TypeMeta{Kind: "APIGroupDiscoveryList", APIVersion: "apidiscovery.k8s.io/v2"},
	}
	byGroup := map[string]int{}
	for _, gv := range s.reg.GroupVersions() {
		if (gv.Group == "") != legacy || s.agg.Target(gv.Group, gv.Version) != nil {
			continue
		}
		i, ok := byGroup[gv.Group]
		if !ok {
			byGroup[gv.Group] = len(list.Items)
			list.Items = append(list.Items, apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: gv.Group}})
			i = len(list.Items) - 1
		}
		v := apidiscoveryv2.APIVersionDiscovery{Version: gv.Version, Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent}
		types := s.reg.TypesIn(gv)
		sort.SliceStable(types, func(i, j int) bool { return types[i].Resource < types[j].Resource })
		for _, t := range types {
			v.Resources = append(v.Resources, aggregatedResource(t))
		}
		list.Items[i].Versions = append(list.Items[i].Versions, v)
	}
	if !legacy {
		// Aggregated discovery breaks a priority's ties by group name
		// (legacy discovery by APIService name, Groups' order).
		remote := s.agg.Groups()
		slices.SortStableFunc(remote, func(a, b aggregator.Group) int {
			if a.Priority != b.Priority {
				return cmp.Compare(b.Priority, a.Priority)
			}
			return strings.Compare(a.Name, b.Name)
		})
		list.Items = withRemote(list.Items, remote, func(g apidiscoveryv2.APIGroupDiscovery) string { return g.Name },
			func(g aggregator.Group) apidiscoveryv2.APIGroupDiscovery { return g.APIGroupDiscovery },
			func(l *apidiscoveryv2.APIGroupDiscovery, g aggregator.Group) {
				l.Versions = withRemoteVersions(l.Name, l.Versions, g.Versions, g.VersionPriorities,
					func(v apidiscoveryv2.APIVersionDiscovery) string { return v.Version })
			})
	}
	return list
}

func aggregatedResource(t *schema.Type) apidiscoveryv2.APIResourceDiscovery {
	scope := apidiscoveryv2.ScopeCluster
	if t.Namespaced {
		scope = apidiscoveryv2.ScopeNamespace
	}
	r := apidiscoveryv2.APIResourceDiscovery{
		Resource:         t.Resource,
		ResponseKind:     &metav1.GroupVersionKind{Kind: t.Kind},
		Scope:            scope,
		SingularResource: t.Singular,
		Verbs:            t.ServedVerbs(),
		ShortNames:       t.ShortNames,
		Categories:       t.Categories,
	}
	subs := append([]string(nil), t.Subresources...)
	if t.Unstructured {
		// kube-apiserver lists a custom resource's group and version
		// in its kinds, and its subresources as installed (status, scale).
		r.ResponseKind.Group, r.ResponseKind.Version = t.Group, t.Version
	} else {
		sort.Strings(subs)
	}
	for _, sub := range subs {
		info := t.Subresource(sub)
		kind := &metav1.GroupVersionKind{Group: info.Group, Version: info.Version, Kind: info.Kind}
		if info.Kind == "" {
			kind = &metav1.GroupVersionKind{Kind: t.Kind}
			if t.Unstructured {
				kind.Group, kind.Version = t.Group, t.Version
			}
		}
		r.Subresources = append(r.Subresources, apidiscoveryv2.APISubresourceDiscovery{
			Subresource: sub, ResponseKind: kind, Verbs: info.Verbs,
		})
	}
	return r
}

// discoveryCodec encodes aggregated discovery documents in the Kubernetes
// Protobuf envelope.
var discoveryCodec = sync.OnceValue(func() *codecs.Codec {
	sch := runtime.NewScheme()
	_ = apidiscoveryv2.AddToScheme(sch)
	return codecs.New(sch, codecs.Options{})
})

func (s *Server) writeJSON(c echo.Context, code int, v any) error {
	c.Response().Header().Set(echo.HeaderContentType, codecs.JSON)
	c.Response().WriteHeader(code)
	return codecs.EncodeJSON(c.Response(), v, wantsPretty(c))
}
