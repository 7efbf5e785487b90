package server

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/labstack/echo/v4"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/filters/impersonation"
	"k8s.io/apiserver/pkg/endpoints/handlers/responsewriters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"

	"github.com/tabula-dev/tabula/server/auth/authz"
)

// Every request is authorized before it is routed, as kube-apiserver's
// WithAuthorization filter does: the attributes come from kube's own
// RequestInfoFactory (verb from method and path, resource, subresource,
// namespace, name; discovery and /healthz are non-resource paths), so an
// unknown resource is 403 to whoever may not list it, and 404 only to
// those who may.

// requestInfoFactory parses request paths as kube-apiserver does.
var requestInfoFactory = &genericapirequest.RequestInfoFactory{
	APIPrefixes:          sets.NewString("api", "apis"),
	GrouplessAPIPrefixes: sets.NewString("api"),
}

// newAuthorizer builds the chain of cfg's modes over the registry's
// watch-fed caches (nil modes: AlwaysAllow), and gives it to the registry
// for RBAC's escalate and bind checks.
func (s *Server) newAuthorizer() (authz.Authorizer, error) {
	modes := s.cfg.AuthorizationModes
	if len(modes) == 0 {
		modes = []string{authz.ModeAlwaysAllow}
	}
	p := authz.Policy{}
	var waits []func(context.Context) error
	if slices.Contains(modes, authz.ModeRBAC) {
		r := s.api.RBAC()
		p.RBAC = authz.RBACListers{Roles: r.Roles, RoleBindings: r.RoleBindings, ClusterRoles: r.ClusterRoles, ClusterRoleBindings: r.ClusterRoleBindings}
		waits = append(waits, r.WaitSynced)
	}
	if slices.Contains(modes, authz.ModeNode) {
		p.NodeGraph = s.api.NodeGraph()
		waits = append(waits, s.api.WaitNodeGraph)
	}
	p.Ready = func(ctx context.Context) error {
		for _, w := range waits {
			if err := w(ctx); err != nil {
				return err
			}
		}
		return nil
	}
	if slices.Contains(s.cfg.AuthorizationModes, authz.ModeAlwaysAllow) {
		s.log.Warn("authorization-mode AlwaysAllow: every authenticated user may do everything; for development only")
	}
	a, err := authz.NewAuthorizer(modes, p)
	if err != nil {
		return nil, err
	}
	s.api.SetAuthorizer(a)
	return a, nil
}

// impersonate is kube's impersonation filter as it is: Impersonate-User,
// -Group, -Uid and -Extra-* headers make the request another user's when
// the authorizer allows the impersonate verb on each (users, groups,
// serviceaccounts, uids, userextras); kube's errors otherwise.
func (s *Server) impersonate() echo.MiddlewareFunc {
	wrapped := echo.WrapMiddleware(func(h http.Handler) http.Handler {
		return impersonation.WithImpersonation(h, s.authz, s.codec.Serializer())
	})
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		withFilter := wrapped(next)
		return func(c echo.Context) error {
			// Most requests impersonate no one: they skip the wrapping.
			for name := range c.Request().Header {
				if strings.HasPrefix(name, "Impersonate-") {
					return withFilter(c)
				}
			}
			return next(c)
		}
	}
}

// anonymousAuth tells, by request path, whether requests without
// credentials are system:anonymous: kube-apiserver's --anonymous-auth (or
// its authentication configuration's anonymous section), which it
// switches off beside AlwaysAllow (anonymous would then be allowed
// everything). Nil: never.
func (s *Server) anonymousAuth() func(path string) bool {
	if !s.cfg.AnonymousAuth {
		return nil
	}
	if slices.Contains(s.cfg.AuthorizationModes, authz.ModeAlwaysAllow) || len(s.cfg.AuthorizationModes) == 0 {
		s.log.Warn("anonymous requests are not allowed with the AlwaysAllow authorizer: switched off")
		return nil
	}
	if paths := s.cfg.AnonymousPaths; paths != nil {
		return func(p string) bool { return slices.Contains(paths, p) }
	}
	return func(string) bool { return true }
}

// authorizeRequests decides every request with the authorizer chain, from
// the user and kube's request info in its context.
func (s *Server) authorizeRequests(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		// auditInit put kube's request info in the context.
		ctx := c.Request().Context()
		attrs, err := filters.GetAuthorizerAttributes(ctx)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		start := time.Now()
		decision, reason, err := s.authz.Authorize(ctx, attrs)
		genericapirequest.TrackAuthorizationLatency(ctx, time.Since(start))
		// The decision is recorded in the audit event, as kube's filter does.
		if decision == authorizer.DecisionAllow {
			if s.audit != nil {
				audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "allow", "authorization.k8s.io/reason", reason)
			}
			return next(c)
		}
		if err != nil {
			if s.audit != nil {
				audit.AddAuditAnnotation(ctx, "authorization.k8s.io/reason", "internal error")
			}
			return apierrors.NewInternalError(err)
		}
		if s.audit != nil {
			audit.AddAuditAnnotations(ctx, "authorization.k8s.io/decision", "forbid", "authorization.k8s.io/reason", reason)
		}
		return responsewriters.ForbiddenStatusError(attrs, reason)
	}
}

// authorizeCreate is kube's second check on a PUT or an apply that would
// create its object: the request was authorized to update or patch, and
// must be allowed to create as well (the same attributes, verb create).
func (r *request) authorizeCreate(ctx context.Context) error {
	create, decision, reason, err := r.authorizeAs(ctx, "create")
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return responsewriters.ForbiddenStatusError(create, reason)
}

// authorizeStreamCreate: a WebSocket exec, attach or port-forward is a GET,
// authorized as get, but it runs commands as the POST of SPDY does. kube
// 1.35 (AuthorizePodWebsocketUpgradeCreatePermission, on by default) also
// requires create for it, so a read-only role cannot open one
// (kubernetes#133515); its refusal is the registry's Forbidden, not the
// filter's.
func (r *request) authorizeStreamCreate() error {
	if r.verb == "create" {
		return nil
	}
	_, decision, reason, err := r.authorizeAs(r.ctx, "create")
	if decision == authorizer.DecisionAllow {
		return nil
	}
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	return apierrors.NewForbidden(runtimeschema.GroupResource{Group: r.t.Group, Resource: r.t.Resource}, r.ri.Name, errors.New(reason))
}

// authorizeAs asks the authorizer about this request with another verb.
func (r *request) authorizeAs(ctx context.Context, verb string) (authorizer.AttributesRecord, authorizer.Decision, string, error) {
	attrs, err := filters.GetAuthorizerAttributes(ctx)
	if err != nil {
		return authorizer.AttributesRecord{}, authorizer.DecisionDeny, "", err
	}
	as := authorizer.AttributesRecord{
		User: attrs.GetUser(), ResourceRequest: true, Path: attrs.GetPath(), Verb: verb,
		APIGroup: r.t.Group, APIVersion: r.t.Version, Resource: r.t.Resource, Subresource: r.ri.Subresource,
		Namespace: r.ri.Namespace, Name: r.ri.Name,
	}
	decision, reason, err := r.s.authz.Authorize(ctx, as)
	return as, decision, reason, err
}
