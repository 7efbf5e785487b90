package openapi

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"

	crdbuilder "k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/kube-openapi/pkg/builder"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/cached"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/handler3"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/tabula-dev/tabula/schema"
	generated "github.com/tabula-dev/tabula/schema/openapi"
)

// Info describes the server in the documents' info section.
type Info struct {
	// Title is "Kubernetes" when empty, as kube-apiserver reports.
	Title string
	// Version is the server's gitVersion ("v1.35.4"). Like kube-apiserver
	// 1.35 the documents carry only its major.minor ("1.35"); an empty or
	// unparsable Version gives "unversioned".
	Version string
	// CBOR names the CBOR media types, as kube-apiserver does with its
	// CBORServingAndStorage gate on.
	CBOR bool
}

func (i Info) spec() *spec.Info {
	title := i.Title
	if title == "" {
		title = "Kubernetes"
	}
	ver := "unversioned"
	if v, err := version.ParseGeneric(i.Version); err == nil {
		ver = fmt.Sprintf("%d.%d", v.Major(), v.Minor())
	}
	return &spec.Info{InfoProps: spec.InfoProps{Title: title, Version: ver}}
}

// Service builds and serves the OpenAPI documents of a registry.
type Service struct {
	reg  *schema.Registry
	info Info

	mu         sync.Mutex // serialises Rebuild
	generation int        // of the documents, their ETag
	v2         *handler.OpenAPIService
	v2h        http.Handler
	v3         *handler3.OpenAPIService
	v3n        map[string]bool // document names currently in v3
}

// New serves the documents of every group-version served by reg; they are
// built on the first request for one.
func New(reg *schema.Registry, info Info) (*Service, error) {
	if reg == nil {
		return nil, fmt.Errorf("openapi: nil registry")
	}
	s := &Service{reg: reg, info: info, v3: handler3.NewOpenAPIService(), v3n: map[string]bool{}}
	all, names := s.lazy()
	s.v2 = handler.NewOpenAPIServiceLazy(v2Of(all))
	var mux singleHandler
	s.v2.RegisterOpenAPIVersionedService("/openapi/v2", &mux)
	s.v2h = mux.h
	s.publishV3(all, names)
	// Custom resources come and go: their documents are rebuilt (on the
	// next request for one) whenever the served Types change.
	reg.OnChange(func() { _ = s.Rebuild() })
	return s, nil
}

// Rebuild rebuilds every document from the registry's current Types. A
// document whose content did not change keeps its hash, so clients' caches
// stay valid.
func (s *Service) Rebuild() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	all, names := s.lazy()
	s.publishV3(all, names)
	s.v2.UpdateSpecLazy(v2Of(all))
	return nil
}

// documents are the v3 documents, keyed by their /openapi/v3 name, and the
// v2 document holding all of them.
type documents struct {
	v3 map[string]*spec3.OpenAPI
	v2 *spec.Swagger
}

// lazy returns the documents of the registry as it is now, built on the
// first request that needs one: they hold every schema of every served
// kind (about 15 MB of heap for the built-in API), which an idle server
// need not keep. It also returns the v3 document names, known without
// building.
func (s *Service) lazy() (cached.Value[*documents], []string) {
	s.generation++
	etag := fmt.Sprint(s.generation)
	all := cached.Once(cached.Func(func() (*documents, string, error) {
		v3, v2, err := s.build()
		if err != nil {
			return nil, "", err
		}
		return &documents{v3: v3, v2: v2}, etag, nil
	}))
	var names []string
	for _, gv := range s.reg.GroupVersions() {
		names = append(names, strings.TrimPrefix(gvPath(gv), "/"))
	}
	for name := range discoveryRoutes(groupsOf(s.reg)) {
		names = append(names, name)
	}
	return all, names
}

func v2Of(all cached.Value[*documents]) cached.Value[*spec.Swagger] {
	return cached.Transform(func(d *documents, etag string, err error) (*spec.Swagger, string, error) {
		if err != nil {
			return nil, "", err
		}
		return d.v2, etag, nil
	}, all)
}

func (s *Service) publishV3(all cached.Value[*documents], names []string) {
	current := map[string]bool{}
	for _, name := range names {
		current[name] = true
		s.v3.UpdateGroupVersionLazy(name, cached.Transform(func(d *documents, etag string, err error) (*spec3.OpenAPI, string, error) {
			if err != nil {
				return nil, "", err
			}
			return d.v3[name], etag, nil
		}, all))
	}
	for name := range s.v3n {
		if !current[name] {
			s.v3.DeleteGroupVersion(name)
		}
	}
	s.v3n = current
}

// groupsOf lists the named groups served, in registration order.
func groupsOf(reg *schema.Registry) []string {
	var groups []string
	seen := map[string]bool{}
	for _, gv := range reg.GroupVersions() {
		if gv.Group != "" && !seen[gv.Group] {
			seen[gv.Group] = true
			groups = append(groups, gv.Group)
		}
	}
	return groups
}

// Handler serves /openapi/v2, /openapi/v3 and /openapi/v3/<path>; other
// paths get 404.
func (s *Service) Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == "/openapi/v2":
			s.v2h.ServeHTTP(w, r)
		case p == "/openapi/v3":
			s.v3.HandleDiscovery(w, r)
		case p == "/openapi/v3/":
			// kube-aggregator takes it for a document named "", which
			// no index lists.
			w.WriteHeader(http.StatusNotFound)
		case strings.HasPrefix(p, "/openapi/v3/"):
			// handler3 answers an unknown path with an empty 200;
			// kube-apiserver's answer is an empty 404.
			tw := &trackingWriter{ResponseWriter: w}
			s.v3.HandleGroupVersion(tw, r)
			if !tw.wrote {
				w.WriteHeader(http.StatusNotFound)
			}
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	})
}

// build assembles the v3 documents, keyed by their /openapi/v3 name, and
// the v2 document holding all of them.
func (s *Service) build() (map[string]*spec3.OpenAPI, *spec.Swagger, error) {
	namer := newDefinitionNamer(s.reg.Scheme)
	known := generated.GetOpenAPIDefinitions(func(string) spec.Ref { return spec.Ref{} })
	hasDefinition := func(name string) bool { _, ok := known[name]; return ok }

	docs := map[string]*spec3.OpenAPI{}
	var all []common.RouteContainer
	var custom []*spec.Swagger
	for _, gv := range s.reg.GroupVersions() {
		types := s.reg.TypesIn(gv)
		c := gvRoutes(gv, types, hasDefinition, mediaFor(s.info.CBOR))
		name := strings.TrimPrefix(gvPath(gv), "/")
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{c}, s.v3Config(namer))
		if err != nil {
			return nil, nil, fmt.Errorf("openapi: building %s: %w", name, err)
		}
		// Types without Go definitions bring documents of their own.
		for _, t := range types {
			if t.OpenAPIV3 == nil || t.OpenAPIV2 == nil {
				continue
			}
			v3, err := t.OpenAPIV3()
			if err != nil {
				return nil, nil, fmt.Errorf("openapi: building %s %s: %w", name, t.Resource, err)
			}
			if doc, err = crdbuilder.MergeSpecsV3(doc, v3); err != nil {
				return nil, nil, fmt.Errorf("openapi: merging %s %s: %w", name, t.Resource, err)
			}
			v2, err := t.OpenAPIV2()
			if err != nil {
				return nil, nil, fmt.Errorf("openapi: building v2 %s %s: %w", name, t.Resource, err)
			}
			// Pruned as kube-apiserver's CRD OpenAPI controller prunes
			// them, to merge cleanly with the built-in definitions.
			v2.Definitions = handler.PruneDefaults(v2.Definitions)
			custom = append(custom, v2)
		}
		docs[name] = doc
		all = append(all, c)
	}

	disc := discoveryRoutes(groupsOf(s.reg))
	names := make([]string, 0, len(disc))
	for name := range disc {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		doc, err := builder3.BuildOpenAPISpecFromRoutes([]common.RouteContainer{disc[name]}, s.v3Config(namer))
		if err != nil {
			return nil, nil, fmt.Errorf("openapi: building %s: %w", name, err)
		}
		docs[name] = doc
		all = append(all, disc[name])
	}

	v2, err := builder.BuildOpenAPISpecFromRoutes(all, s.v2Config(namer))
	if err != nil {
		return nil, nil, fmt.Errorf("openapi: building v2: %w", err)
	}
	if len(custom) > 0 {
		if v2, err = crdbuilder.MergeSpecs(v2, custom...); err != nil {
			return nil, nil, fmt.Errorf("openapi: merging v2: %w", err)
		}
	}
	return docs, v2, nil
}

const (
	securityName        = "BearerToken"
	securityDescription = "Bearer Token authentication"
)

func (s *Service) v3Config(namer *definitionNamer) *common.OpenAPIV3Config {
	return &common.OpenAPIV3Config{
		Info: s.info.spec(),
		CommonResponses: map[int]*spec3.Response{
			http.StatusUnauthorized: {ResponseProps: spec3.ResponseProps{Description: "Unauthorized"}},
		},
		GetDefinitions:                 generated.GetOpenAPIDefinitions,
		GetDefinitionName:              namer.name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		SecuritySchemes: spec3.SecuritySchemes{
			securityName: &spec3.SecurityScheme{SecuritySchemeProps: spec3.SecuritySchemeProps{
				Type: "apiKey", Description: securityDescription, Name: "authorization", In: "header",
			}},
		},
	}
}

func (s *Service) v2Config(namer *definitionNamer) *common.Config {
	return &common.Config{
		Info: s.info.spec(),
		CommonResponses: map[int]spec.Response{
			http.StatusUnauthorized: {ResponseProps: spec.ResponseProps{Description: "Unauthorized"}},
		},
		GetDefinitions:                 generated.GetOpenAPIDefinitions,
		GetDefinitionName:              namer.name,
		GetOperationIDAndTagsFromRoute: operationIDAndTags,
		SecurityDefinitions: &spec.SecurityDefinitions{
			securityName: &spec.SecurityScheme{SecuritySchemeProps: spec.SecuritySchemeProps{
				Type: "apiKey", Description: securityDescription, Name: "authorization", In: "header",
			}},
		},
		DefaultSecurity: []map[string][]string{{securityName: {}}},
		// kube-apiserver serves the v2 document without default values.
		PostProcessSpec: func(sw *spec.Swagger) (*spec.Swagger, error) {
			sw.Definitions = handler.PruneDefaults(sw.Definitions)
			return sw, nil
		},
	}
}

// singleHandler captures the handler kube-openapi registers for a path.
type singleHandler struct{ h http.Handler }

func (m *singleHandler) Handle(_ string, h http.Handler) { m.h = h }

// trackingWriter records whether anything was written.
type trackingWriter struct {
	http.ResponseWriter
	wrote bool
}

func (w *trackingWriter) WriteHeader(code int) {
	w.wrote = true
	w.ResponseWriter.WriteHeader(code)
}

func (w *trackingWriter) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}
