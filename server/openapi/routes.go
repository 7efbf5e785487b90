package openapi

import (
	"fmt"
	"net/http"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/kube-openapi/pkg/common"

	tschema "github.com/tabula-dev/tabula/schema"
)

// Media types of requests and responses, as kube-apiserver documents them.
var (
	mediaObject = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf"}
	mediaList   = []string{"application/json", "application/yaml", "application/vnd.kubernetes.protobuf",
		"application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch"}
	mediaAny   = []string{"*/*"}
	mediaPatch = []string{"application/json-patch+json", "application/merge-patch+json",
		"application/strategic-merge-patch+json", "application/apply-patch+yaml"}
	mediaJSON = []string{"application/json"}
)

// media are the types a group-version's operations name: kube's lists, and
// with CBOR served, application/cbor, application/cbor-seq and
// application/apply-patch+cbor in the places kube-apiserver puts them
// (its discovery documents above the group-versions stay without).
type media struct {
	object, list, patch []string
}

func mediaFor(cbor bool) media {
	if !cbor {
		return media{object: mediaObject, list: mediaList, patch: mediaPatch}
	}
	object := append(append([]string(nil), mediaObject...), "application/cbor")
	return media{
		object: object,
		list:   append(append([]string(nil), object...), "application/json;stream=watch", "application/vnd.kubernetes.protobuf;stream=watch", "application/cbor-seq"),
		patch:  append(append([]string(nil), mediaPatch...), "application/apply-patch+cbor"),
	}
}

// route is one documented operation (common.Route).
type route struct {
	method, path, id, description string
	tags                          []string
	params                        []common.Parameter
	consumes, produces            []string
	meta                          map[string]interface{}
	body                          interface{}
	responses                     []common.StatusCodeResponse
}

func (r *route) Method() string                                   { return r.method }
func (r *route) Path() string                                     { return r.path }
func (r *route) OperationName() string                            { return r.id }
func (r *route) Parameters() []common.Parameter                   { return r.params }
func (r *route) Description() string                              { return r.description }
func (r *route) Consumes() []string                               { return r.consumes }
func (r *route) Produces() []string                               { return r.produces }
func (r *route) Metadata() map[string]interface{}                 { return r.meta }
func (r *route) RequestPayloadSample() interface{}                { return r.body }
func (r *route) ResponsePayloadSample() interface{}               { return nil }
func (r *route) StatusCodeResponses() []common.StatusCodeResponse { return r.responses }

// operationIDAndTags implements GetOperationIDAndTagsFromRoute.
func operationIDAndTags(r common.Route) (string, []string, error) {
	if rt, ok := r.(*route); ok {
		return rt.id, rt.tags, nil
	}
	return r.OperationName(), nil, nil
}

// response is one documented status code (common.StatusCodeResponse).
type response struct {
	code  int
	model interface{}
}

func (r response) Code() int          { return r.code }
func (r response) Message() string    { return http.StatusText(r.code) }
func (r response) Model() interface{} { return r.model }

func responses(model interface{}, codes ...int) []common.StatusCodeResponse {
	out := make([]common.StatusCodeResponse, 0, len(codes))
	for _, c := range codes {
		out = append(out, response{code: c, model: model})
	}
	return out
}

// container holds the routes of one document part (common.RouteContainer).
type container struct {
	root   string
	routes []common.Route
}

func (c *container) RootPath() string                   { return c.root }
func (c *container) PathParameters() []common.Parameter { return nil }
func (c *container) Routes() []common.Route             { return c.routes }

// gvRoutes returns the routes of one group-version: its resource list at
// "<prefix>/" and the operations of every Type in it. hasDefinition reports
// whether a model name has a schema; Types without one are left out.
func gvRoutes(gv schema.GroupVersion, types []*tschema.Type, hasDefinition func(string) bool, m media) *container {
	prefix := gvPath(gv)
	tag := gvTag(gv)
	c := &container{root: prefix}
	c.routes = append(c.routes, &route{
		method: "GET", path: prefix + "/", id: "get" + gvID(gv) + "APIResources",
		description: "get available resources", tags: []string{tag},
		consumes: m.object, produces: m.object,
		responses: responses(&metav1.APIResourceList{}, http.StatusOK),
	})
	for _, t := range types {
		if t.New == nil {
			continue
		}
		obj := t.New()
		if !hasDefinition(modelName(obj)) {
			continue
		}
		var list interface{}
		if t.NewList != nil {
			if l := t.NewList(); l != nil && hasDefinition(modelName(l)) {
				list = l
			}
		}
		c.routes = append(c.routes, typeRoutes(gv, t, obj, list, m)...)
	}
	return c
}

// typeRoutes documents one Type: the collection, item and watch paths
// (namespaced Types also get the all-namespaces list and watch), and the
// status and finalize subresources. Which operations exist follows Verbs.
func typeRoutes(gv schema.GroupVersion, t *tschema.Type, obj, list interface{}, m media) []common.Route {
	verbs := map[string]bool{}
	for _, v := range t.Verbs {
		verbs[v] = true
	}
	kind := t.Kind
	prefix := gvPath(gv)
	gvid := gvID(gv)
	tags := []string{gvTag(gv)}
	gvk := metav1.GroupVersionKind{Group: t.Group, Version: t.Version, Kind: kind}

	scope := ""                             // inside operation IDs
	collection := prefix + "/" + t.Resource // list, create, deletecollection
	watchCollection := prefix + "/watch/" + t.Resource
	var scopeParams []common.Parameter
	if t.Namespaced {
		scope = "Namespaced"
		collection = prefix + "/namespaces/{namespace}/" + t.Resource
		watchCollection = prefix + "/watch/namespaces/{namespace}/" + t.Resource
		scopeParams = []common.Parameter{namespaceParam()}
	}
	item := collection + "/{name}"
	watchItem := watchCollection + "/{name}"
	itemParams := append([]common.Parameter{nameParam(kind)}, scopeParams...)

	var out []common.Route
	add := func(method, path, id, description, action string, ps []common.Parameter, consumes, produces []string, body interface{}, rs []common.StatusCodeResponse) {
		out = append(out, &route{
			method: method, path: path, id: id, description: description, tags: tags,
			params:   params(ps, []common.Parameter{prettyParam()}),
			consumes: consumes, produces: produces, body: body, responses: rs,
			meta: map[string]interface{}{extAction: action, extGVK: gvk},
		})
	}

	listDescription := "list objects of kind " + kind
	if verbs["watch"] {
		listDescription = "list or watch objects of kind " + kind
	}
	const (
		watchDescription     = "watch changes to an object of kind %s. deprecated: use the 'watch' parameter with a list operation instead, filtered to a single item with the 'fieldSelector' parameter."
		watchListDescription = "watch individual changes to a list of %s. deprecated: use the 'watch' parameter with a list operation instead."
	)
	watchEvent := &metav1.WatchEvent{}

	if list != nil && verbs["list"] {
		add("GET", collection, "list"+gvid+scope+kind, listDescription, "list",
			params(scopeParams, listQueryParams), mediaAny, m.list, nil, responses(list, http.StatusOK))
		if t.Namespaced {
			add("GET", prefix+"/"+t.Resource, "list"+gvid+kind+"ForAllNamespaces", listDescription, "list",
				listQueryParams, mediaAny, m.list, nil, responses(list, http.StatusOK))
		}
	}
	if verbs["create"] {
		add("POST", collection, "create"+gvid+scope+kind, "create "+article(kind)+kind, "post",
			params(scopeParams, createQueryParams, []common.Parameter{bodyParam(true)}), mediaAny, m.object, obj,
			responses(obj, http.StatusOK, http.StatusCreated, http.StatusAccepted))
	}
	if verbs["deletecollection"] {
		add("DELETE", collection, "delete"+gvid+"Collection"+scope+kind, "delete collection of "+kind, "deletecollection",
			params(scopeParams, deleteCollectionQueryParams, []common.Parameter{bodyParam(false)}), mediaAny, m.object,
			&metav1.DeleteOptions{}, responses(&metav1.Status{}, http.StatusOK))
	}
	if verbs["get"] {
		add("GET", item, "read"+gvid+scope+kind, "read the specified "+kind, "get",
			itemParams, mediaAny, m.object, nil, responses(obj, http.StatusOK))
	}
	if verbs["update"] {
		add("PUT", item, "replace"+gvid+scope+kind, "replace the specified "+kind, "put",
			params(itemParams, updateQueryParams, []common.Parameter{bodyParam(true)}), mediaAny, m.object, obj,
			responses(obj, http.StatusOK, http.StatusCreated))
	}
	if verbs["delete"] {
		var deleted interface{} = &metav1.Status{}
		if t.ReturnDeletedObject {
			deleted = obj
		}
		add("DELETE", item, "delete"+gvid+scope+kind, "delete "+article(kind)+kind, "delete",
			params(itemParams, deleteQueryParams, []common.Parameter{bodyParam(false)}), mediaAny, m.object,
			&metav1.DeleteOptions{}, responses(deleted, http.StatusOK, http.StatusAccepted))
	}
	if verbs["patch"] {
		add("PATCH", item, "patch"+gvid+scope+kind, "partially update the specified "+kind, "patch",
			params(itemParams, patchQueryParams, []common.Parameter{bodyParam(true)}), m.patch, m.object,
			&metav1.Patch{}, responses(obj, http.StatusOK, http.StatusCreated))
	}
	if verbs["watch"] {
		add("GET", watchItem, "watch"+gvid+scope+kind, fmt.Sprintf(watchDescription, kind), "watch",
			params(itemParams, listQueryParams), mediaAny, m.list, nil, responses(watchEvent, http.StatusOK))
		add("GET", watchCollection, "watch"+gvid+scope+kind+"List", fmt.Sprintf(watchListDescription, kind), "watchlist",
			params(scopeParams, listQueryParams), mediaAny, m.list, nil, responses(watchEvent, http.StatusOK))
		if t.Namespaced {
			add("GET", prefix+"/watch/"+t.Resource, "watch"+gvid+kind+"ListForAllNamespaces", fmt.Sprintf(watchListDescription, kind), "watchlist",
				listQueryParams, mediaAny, m.list, nil, responses(watchEvent, http.StatusOK))
		}
	}

	for _, sub := range t.Subresources {
		path := item + "/" + sub
		suffix := upperFirst(sub)
		switch sub {
		case "status":
			if verbs["get"] {
				add("GET", path, "read"+gvid+scope+kind+suffix, "read status of the specified "+kind, "get",
					itemParams, mediaAny, m.object, nil, responses(obj, http.StatusOK))
			}
			if verbs["update"] {
				add("PUT", path, "replace"+gvid+scope+kind+suffix, "replace status of the specified "+kind, "put",
					params(itemParams, updateQueryParams, []common.Parameter{bodyParam(true)}), mediaAny, m.object, obj,
					responses(obj, http.StatusOK, http.StatusCreated))
			}
			if verbs["patch"] {
				add("PATCH", path, "patch"+gvid+scope+kind+suffix, "partially update status of the specified "+kind, "patch",
					params(itemParams, patchQueryParams, []common.Parameter{bodyParam(true)}), m.patch, m.object,
					&metav1.Patch{}, responses(obj, http.StatusOK, http.StatusCreated))
			}
		case "finalize":
			if verbs["update"] {
				add("PUT", path, "replace"+gvid+scope+kind+suffix, "replace finalize of the specified "+kind, "put",
					params(itemParams, updateQueryParams, []common.Parameter{bodyParam(true)}), mediaAny, m.object, obj,
					responses(obj, http.StatusOK, http.StatusCreated))
			}
		case "scale":
			// Scale is its own kind: the operations name it, not the Type's.
			sc := t.SubresourceKind(sub)
			scGVK := metav1.GroupVersionKind{Group: sc.Group, Version: sc.Version, Kind: sc.Kind}
			scParams := append([]common.Parameter{nameParam(sc.Kind)}, scopeParams...)
			scale := sc.New()
			addScale := func(method, id, description, action string, ps []common.Parameter, consumes []string, body interface{}, codes ...int) {
				add(method, path, id+gvid+scope+kind+suffix, description+" of the specified "+kind, action,
					ps, consumes, m.object, body, responses(scale, codes...))
				out[len(out)-1].(*route).meta[extGVK] = scGVK
			}
			addScale("GET", "read", "read scale", "get", scParams, mediaAny, nil, http.StatusOK)
			addScale("PUT", "replace", "replace scale", "put", params(scParams, updateQueryParams, []common.Parameter{bodyParam(true)}),
				mediaAny, scale, http.StatusOK, http.StatusCreated)
			addScale("PATCH", "patch", "partially update scale", "patch", params(scParams, patchQueryParams, []common.Parameter{bodyParam(true)}),
				m.patch, &metav1.Patch{}, http.StatusOK, http.StatusCreated)
		}
		// Other subresources (token, …) have types of their own and are
		// documented once Tabula serves them.
	}
	return out
}

// discoveryRoutes documents the endpoints outside any group-version that
// kube-apiserver also lists in /openapi/v3: "/api/", "/apis/", each
// "/apis/<group>/" and "/version/". The keys are their /openapi/v3 names.
func discoveryRoutes(groups []string) map[string]*container {
	out := map[string]*container{}
	single := func(name, path, id, tag, description string, produces []string, model interface{}) {
		out[name] = &container{root: path, routes: []common.Route{&route{
			method: "GET", path: path, id: id, description: description, tags: []string{tag},
			consumes: produces, produces: produces, responses: responses(model, http.StatusOK),
		}}}
	}
	single("api", "/api/", "getCoreAPIVersions", "core", "get available API versions", mediaObject, &metav1.APIVersions{})
	single("apis", "/apis/", "getAPIVersions", "apis", "get available API versions", mediaObject, &metav1.APIGroupList{})
	for _, g := range groups {
		single("apis/"+g, "/apis/"+g+"/", "get"+groupID(g)+"APIGroup", groupTag(g), "get information of a group", mediaObject, &metav1.APIGroup{})
	}
	single("version", "/version/", "getCodeVersion", "version", "get the version information for this server", mediaJSON, &version.Info{})
	return out
}
