package server

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	validationpath "k8s.io/apimachinery/pkg/api/validation/path"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server/auth"
)

// routes registers every path, area by area.
func (s *Server) routes() *echo.Echo {
	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	e.HTTPErrorHandler = s.errorHandler
	e.Use(s.recoverPanics)
	e.Use(noCache)
	e.Use(compressLarge(s.segments))
	e.Use(s.measure)
	// kube-apiserver's order: audit context and request info, then
	// authentication, audit, impersonation, flow control, authorization.
	e.Use(s.auditInit)
	e.Use(s.checkTimeout)
	if s.cfg.Authenticator != nil {
		e.Use(auth.Middleware(s.cfg.Authenticator, s.auditUnauthorized(auth.UnauthorizedStatus), s.anonymousAuth()))
	} else {
		e.Use(func(next echo.HandlerFunc) echo.HandlerFunc {
			return func(c echo.Context) error {
				u := &auth.User{Name: auth.AdminUser, Groups: []string{auth.AdminGroup, auth.GroupAuthenticated}}
				c.Request().Header.Del("Authorization") // as auth.Middleware does
				c.SetRequest(c.Request().WithContext(auth.WithUser(c.Request().Context(), u)))
				return next(c)
			}
		})
	}
	e.Use(s.auditRequests())
	e.Use(s.impersonate())
	if s.flow != nil {
		e.Use(s.priorityAndFairness)
	} else {
		e.Use(s.limitInflight)
	}
	e.Use(s.authorizeRequests)
	s.healthRoutes(e)
	s.metricsRoute(e)
	s.profilingRoutes(e)
	s.flowControlRoutes(e)
	e.GET("/version", s.getVersion)
	s.openIDRoutes(e)
	if s.cfg.OpenAPI != nil {
		s.openAPIRoutes(e)
	}
	s.discoveryRoutes(e)
	// Resources are found from the decoded path, as kube's router finds
	// them and as the authorizer read it (Echo's parameters are the raw
	// path's when it has escapes).
	e.Any("/api/v1/*", func(c echo.Context) error {
		rest, ok := strings.CutPrefix(c.Request().URL.Path, "/api/v1/")
		if !ok {
			return notFoundPath()
		}
		if rest == "" && c.Request().Method == http.MethodGet {
			return s.getResourceList(c, "", "v1") // /api/v1/, as kube-apiserver serves it
		}
		return s.serveResource(c, "", "v1", rest)
	})
	e.Any("/apis/:group/:version/*", func(c echo.Context) error {
		if t := s.agg.Target(c.Param("group"), c.Param("version")); t != nil {
			return s.proxyAggregated(c, t)
		}
		after, _ := strings.CutPrefix(c.Request().URL.Path, "/apis/")
		parts := strings.SplitN(after, "/", 3)
		if len(parts) < 3 || parts[0] == "" || parts[1] == "" {
			return notFoundPath()
		}
		group, version, rest := parts[0], parts[1], parts[2]
		if rest == "" && c.Request().Method == http.MethodGet {
			return s.getResourceList(c, group, version)
		}
		return s.serveResource(c, group, version, rest)
	})
	s.rootPathsRoutes(e)
	e.RouteNotFound("/*", func(c echo.Context) error {
		// kube-apiserver answers unknown non-API paths in plain text.
		return plainText(c, http.StatusNotFound, "404 page not found\n")
	})
	return e
}

func (s *Server) recoverPanics(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) (err error) {
		defer func() {
			if r := recover(); r != nil {
				if r == http.ErrAbortHandler {
					panic(r)
				}
				s.log.Error("handler panic", "path", c.Request().URL.Path, "panic", r)
				err = apierrors.NewInternalError(fmt.Errorf("panic: %v", r))
			}
		}()
		return next(c)
	}
}

// serveResource dispatches a resource request to the handler of its verb.
func (s *Server) serveResource(c echo.Context, group, version, rest string) error {
	ri, ok := parseResourcePath(rest)
	if !ok {
		return notFoundPath()
	}
	ri.Group, ri.Version = group, version
	// kube's custom resource handler passes what it does not serve to the
	// server's last handler, whose 404 is plain text: a resource no CRD
	// defines in a group-version only CRDs serve, or a custom resource
	// addressed in the wrong scope.
	delegated := func() error { return plainText(c, http.StatusNotFound, "404 page not found\n") }
	t, ok := s.reg.Lookup(group, version, ri.Resource)
	if !ok {
		if group != "" && !slices.ContainsFunc(s.reg.TypesIn(runtimeschema.GroupVersion{Group: group, Version: version}), func(t *schema.Type) bool { return !t.Unstructured }) {
			return delegated()
		}
		return notFoundPath()
	}
	ri.Type = t
	if ri.Namespace != "" && !t.Namespaced {
		if t.Unstructured {
			return delegated()
		}
		return notFoundPath()
	}
	if ri.Subresource != "" && !t.HasSubresource(ri.Subresource) {
		if t.Unstructured {
			if t.Namespaced && ri.Namespace == "" {
				return delegated() // the handler checks the scope first
			}
			// The handler names the object (customresource_handler.go).
			return apierrors.NewNotFound(runtimeschema.GroupResource{Group: group, Resource: ri.Resource}, ri.Name)
		}
		return notFoundPath()
	}
	verb := verbFor(c.Request().Method, ri, c)
	if t.Namespaced && ri.Namespace == "" && verb != "list" && verb != "watch" {
		// kube-apiserver serves a namespaced resource across namespaces
		// for list and watch alone: there is no route for one object
		// there (404), and the collection's other methods are not
		// allowed (405; a custom resource's handler answers 404). A
		// DELETE of /api/v1/configmaps must not empty every namespace.
		if t.Unstructured {
			return delegated()
		}
		if ri.Name != "" {
			return notFoundPath()
		}
		return methodNotAllowed()
	}
	if ri.Name != "" && ri.Subresource == "" && !slices.ContainsFunc(t.Verbs, func(v string) bool {
		return v == "get" || v == "update" || v == "patch" || v == "delete"
	}) {
		// A kind that is only created (the reviews, legacy bindings) has
		// no route for one object in kube, whatever the method.
		return notFoundPath()
	}
	method := c.Request().Method
	var connect []string
	if ri.Subresource != "" {
		connect = t.Subresource(ri.Subresource).Connect
	}
	if connect != nil {
		// kube routes a connecter's methods alone (a proxy's OPTIONS and
		// HEAD too), and its handler refuses a dry run before it reads
		// anything else: nothing relayed can be one.
		if !slices.Contains(connect, method) {
			return methodNotAllowed()
		}
		if _, ok := c.QueryParams()["dryRun"]; ok {
			return apierrors.NewBadRequest("dryRun is not supported")
		}
	} else if verb == "" || method == http.MethodHead && !t.Unstructured {
		// kube's router matches methods exactly: no HEAD for a built-in
		// kind's GET. The custom resource handler reads HEAD as get.
		return methodNotAllowed()
	} else if (verb == "get" || verb == "update" || verb == "patch") && ri.Subresource != "" && !hasVerb(t.Subresource(ri.Subresource).Verbs, verb) {
		// kube has no route for a subresource's method its storage does
		// not serve (GET or PATCH of namespaces/finalize, PATCH of
		// pods/log).
		return methodNotAllowed()
	} else if !hasVerb(t.Verbs, verb) {
		if verb == "watch" && !ri.WatchPath && hasVerb(t.Verbs, "list") {
			// kube's list handler names what it cannot do
			// (componentstatuses?watch=1).
			return apierrors.NewMethodNotSupported(t.GroupResource(), "watch")
		}
		return methodNotAllowed()
	}
	if ri.Name != "" {
		if err := keyNameError(ri.Name); err != nil {
			return err
		}
	}
	c.Set(ctxVerb, verb)
	c.Set(ctxInfo, ri)
	if t.Deprecation != nil {
		// Like kube-apiserver: on every request to the kind, whatever its
		// outcome, and recorded in apiserver_requested_deprecated_apis.
		if w := t.DeprecationWarning(); w != "" {
			warning.AddWarning(c.Request().Context(), "", w)
		}
		s.metrics.deprecated.WithLabelValues(group, version, ri.Resource, ri.Subresource, t.Deprecation.RemovedIn).Set(1)
		// And told to audit, as kube's request metrics tell it.
		audit.AddAuditAnnotation(c.Request().Context(), "k8s.io/deprecated", "true")
		if t.Deprecation.RemovedIn != "" {
			audit.AddAuditAnnotation(c.Request().Context(), "k8s.io/removed-release", t.Deprecation.RemovedIn)
		}
	}
	ctx := c.Request().Context()
	if verb != "watch" && !longRunning(c.Request()) {
		// A stream or proxy has no deadline, and ignores ?timeout, as
		// kube's deadline filter leaves long-running requests alone.
		d, err := requestTimeout(c.QueryParam("timeout"), s.cfg.RequestTimeout)
		if err != nil {
			return err
		}
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, d)
		defer cancel()
	}
	if u, ok := auth.UserFrom(ctx); ok && u != nil {
		ctx = registry.WithRequester(ctx, schema.Requester{Name: u.Name, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	}
	r := &request{s: s, ctx: ctx, c: c, ri: ri, t: t, res: s.api.For(t), verb: verb}
	if h, ok := subresourceHandlers[ri.Resource+"/"+ri.Subresource]; ok && t.Group == "" {
		return h(r)
	}
	if h, ok := subresourceHandlers[ri.Subresource]; ok {
		return h(r)
	}
	if t.Virtual && (verb == "get" || verb == "list") {
		return r.virtualRead()
	}
	switch verb {
	case "get":
		return r.get()
	case "list":
		return r.list()
	case "watch":
		return r.watch()
	case "create":
		return r.create()
	case "update":
		return r.update()
	case "patch":
		return r.patch()
	case "delete":
		return r.delete()
	case "deletecollection":
		return r.deleteCollection()
	}
	return methodNotAllowed()
}

func methodNotAllowed() error {
	st := apierrors.NewMethodNotSupported(runtimeschema.GroupResource{}, "")
	st.ErrStatus.Message = "the server does not allow this method on the requested resource"
	return st
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// verbFor maps method and path to a Kubernetes verb; "" means 405.
func verbFor(method string, ri requestInfo, c echo.Context) string {
	named := ri.Name != ""
	switch method {
	case http.MethodGet, http.MethodHead:
		// As kube's RequestInfoFactory: ?watch turns a collection's GET
		// into a watch; on a named path it is ignored and the GET is a
		// get (only the legacy /watch/ prefix watches one object).
		if ri.WatchPath || !named && queryBool(c.QueryParams(), "watch") {
			return "watch"
		}
		if named {
			return "get"
		}
		return "list"
	case http.MethodPost:
		if named && ri.Subresource == "" {
			return ""
		}
		if named {
			return "create" // subresource creates (e.g. token) come later
		}
		return "create"
	case http.MethodPut:
		if named {
			return "update"
		}
	case http.MethodPatch:
		if named {
			return "patch"
		}
	case http.MethodDelete:
		if named {
			return "delete"
		}
		return "deletecollection"
	}
	return ""
}

// isTrue parses boolean query parameters as kube-apiserver does
// (strconv.ParseBool: 1, t, T, TRUE, true, True).
// queryBool reads a boolean query parameter as kube-apiserver's parameter
// codec does: absent, "0" or "false" (any case) is false; anything else,
// the empty value included ("?watch="), is true.
func queryBool(q url.Values, name string) bool {
	vs, ok := q[name]
	if !ok || len(vs) == 0 {
		return false
	}
	return vs[0] != "0" && !strings.EqualFold(vs[0], "false")
}

// requestTimeout reads the timeout query parameter of non-long-running
// requests as kube-apiserver does: unparsable is 400, zero or absent means
// the server's limit, and nothing may exceed that limit.
func requestTimeout(v string, limit time.Duration) (time.Duration, error) {
	if v == "" {
		return limit, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		return 0, apierrors.NewBadRequest(fmt.Sprintf("invalid timeout specified in the request URL - %v", err))
	}
	if d <= 0 || d > limit {
		return limit, nil
	}
	return d, nil
}

// keyNameError is kube-apiserver's storage key functions' answer to a
// name no path segment could hold ("", "..", "a%b"), nil for others.
func keyNameError(name string) error {
	if name == "" {
		return apierrors.NewBadRequest("Name parameter required.")
	}
	if msgs := validationpath.IsValidPathSegmentName(name); len(msgs) > 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("Name parameter invalid: %q: %s", name, strings.Join(msgs, ";")))
	}
	return nil
}

// checkTimeout refuses an unparsable timeout query parameter on any
// request that is not long-running (/version and the other non-resource
// paths included), before authentication, as kube-apiserver's request
// deadline filter does; the resource handlers apply the timeout.
func (s *Server) checkTimeout(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		if !strings.Contains(r.URL.RawQuery, "timeout") {
			return next(c) // most requests: no query map parsed here
		}
		// Echo's parsed query, kept for the handlers' reads of it.
		if v := c.QueryParams().Get("timeout"); v != "" && !longRunning(r) {
			d, err := requestTimeout(v, s.cfg.RequestTimeout)
			if err != nil {
				return err
			}
			// The deadline starts here, as kube's filter sets it before
			// flow control: a request's wait in its priority level's
			// queue is a quarter of the time it asked for. (Without a
			// timeout, the default's quarter applies there anyway.)
			ctx, cancel := context.WithTimeout(r.Context(), d)
			defer cancel()
			c.SetRequest(r.WithContext(ctx))
		}
		return next(c)
	}
}

// noCache is kube-apiserver's WithCacheControl: an answer is one user's,
// so shared caches keep none, unless its handler says otherwise
// (aggregated discovery: public, revalidated by ETag).
func noCache(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		if h := c.Response().Header(); h["Cache-Control"] == nil {
			h["Cache-Control"] = noCacheValue
		}
		return next(c)
	}
}

// noCacheValue is shared: headers are replaced with Set, never changed
// in place.
var noCacheValue = []string{"no-cache, private"}
