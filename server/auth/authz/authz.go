package authz

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/union"
	rbaclisters "k8s.io/client-go/listers/rbac/v1"
	"k8s.io/kubernetes/pkg/auth/nodeidentifier"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/node"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac"
	"k8s.io/kubernetes/plugin/pkg/auth/authorizer/rbac/bootstrappolicy"
)

// The authorization modes of kube-apiserver's --authorization-mode that
// Tabula has.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeAlwaysDeny  = "AlwaysDeny"
	ModeNode        = "Node"
	ModeRBAC        = "RBAC"
)

// DefaultModes is what every production distribution runs.
var DefaultModes = []string{ModeNode, ModeRBAC}

var knownModes = []string{ModeAlwaysAllow, ModeAlwaysDeny, ModeNode, ModeRBAC}

// Authorizer decides requests and lists what a user may do
// (SelfSubjectRulesReview), as kube-apiserver's authorizer chain does.
type Authorizer interface {
	authorizer.Authorizer
	authorizer.RuleResolver
}

// RBACListers are the RBAC objects the RBAC authorizer reads: the
// watch-fed caches of every replica.
type RBACListers struct {
	Roles               rbaclisters.RoleLister
	RoleBindings        rbaclisters.RoleBindingLister
	ClusterRoles        rbaclisters.ClusterRoleLister
	ClusterRoleBindings rbaclisters.ClusterRoleBindingLister
}

// Policy is what the authorizers read.
type Policy struct {
	RBAC RBACListers
	// NodeGraph relates nodes to the pods, volumes and secrets they may
	// reach (kube's node authorizer graph, fed by the watch).
	NodeGraph *node.Graph
	// Ready waits until the caches behind RBAC and NodeGraph hold a
	// complete view; no decision is made before (kube-apiserver does not
	// serve before its informers sync).
	Ready func(context.Context) error
}

// CheckModes validates an --authorization-mode list as kube-apiserver does.
func CheckModes(modes []string) error {
	if len(modes) == 0 {
		return fmt.Errorf("at least one authorization-mode must be passed")
	}
	for i, m := range modes {
		if !slices.Contains(knownModes, m) {
			return fmt.Errorf("authorization-mode %q is not a valid mode (valid: %s)", m, strings.Join(knownModes, ", "))
		}
		if slices.Contains(modes[:i], m) {
			return fmt.Errorf("authorization-mode %q has mode specified more than once", m)
		}
	}
	return nil
}

// NewAuthorizer builds kube-apiserver's chain: system:masters first, then
// each mode in order; the first to allow or deny decides. RulesFor unites
// the modes that can list rules, as kube's does (system:masters is not
// one of them: its rules are what RBAC binds to it).
func NewAuthorizer(modes []string, p Policy) (Authorizer, error) {
	if err := CheckModes(modes); err != nil {
		return nil, err
	}
	authorizers := []authorizer.Authorizer{authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)}
	var resolvers []authorizer.RuleResolver
	needsPolicy := false
	for _, m := range modes {
		switch m {
		case ModeAlwaysAllow:
			a := authorizerfactory.NewAlwaysAllowAuthorizer()
			authorizers, resolvers = append(authorizers, a), append(resolvers, a)
		case ModeAlwaysDeny:
			a := authorizerfactory.NewAlwaysDenyAuthorizer()
			authorizers, resolvers = append(authorizers, a), append(resolvers, a)
		case ModeNode:
			if p.NodeGraph == nil {
				return nil, fmt.Errorf("authorization-mode Node needs the node graph")
			}
			a := node.NewAuthorizer(p.NodeGraph, nodeidentifier.NewDefaultNodeIdentifier(), bootstrappolicy.NodeRules())
			authorizers, resolvers = append(authorizers, a), append(resolvers, a)
			needsPolicy = true
		case ModeRBAC:
			l := p.RBAC
			if l.Roles == nil || l.RoleBindings == nil || l.ClusterRoles == nil || l.ClusterRoleBindings == nil {
				return nil, fmt.Errorf("authorization-mode RBAC needs the RBAC listers")
			}
			a := rbac.New(&rbac.RoleGetter{Lister: l.Roles}, &rbac.RoleBindingLister{Lister: l.RoleBindings},
				&rbac.ClusterRoleGetter{Lister: l.ClusterRoles}, &rbac.ClusterRoleBindingLister{Lister: l.ClusterRoleBindings})
			authorizers, resolvers = append(authorizers, a), append(resolvers, a)
			needsPolicy = true
		}
	}
	c := chain{Authorizer: union.New(authorizers...), RuleResolver: union.NewRuleResolvers(resolvers...)}
	if needsPolicy && p.Ready != nil {
		c.ready = p.Ready
	}
	return c, nil
}

// chain is the united authorizers, deciding only once the policy caches
// are complete.
type chain struct {
	authorizer.Authorizer
	authorizer.RuleResolver
	ready func(context.Context) error
}

func (c chain) Authorize(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
	if c.ready != nil {
		if err := c.ready(ctx); err != nil {
			return authorizer.DecisionNoOpinion, "", fmt.Errorf("authorization policy not loaded: %w", err)
		}
	}
	return c.Authorizer.Authorize(ctx, a)
}

func (c chain) RulesFor(ctx context.Context, u user.Info, namespace string) ([]authorizer.ResourceRuleInfo, []authorizer.NonResourceRuleInfo, bool, error) {
	if c.ready != nil {
		if err := c.ready(ctx); err != nil {
			return nil, nil, true, fmt.Errorf("authorization policy not loaded: %w", err)
		}
	}
	return c.RuleResolver.RulesFor(ctx, u, namespace)
}

// AllowAll is the chain of AlwaysAllow alone: everything for everyone (the
// embedded server's default, where every request is the admin's).
func AllowAll() Authorizer {
	a, _ := NewAuthorizer([]string{ModeAlwaysAllow}, Policy{})
	return a
}
