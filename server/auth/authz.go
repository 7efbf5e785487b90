package auth

import "context"

// Attributes describe a request for an authorization decision, mirroring
// k8s.io/apiserver's authorizer.Attributes.
type Attributes struct {
	User *User
	// Verb is the Kubernetes verb (get, list, watch, create, update, patch,
	// delete, deletecollection) for resource requests, or the lower-cased
	// HTTP method for non-resource requests.
	Verb        string
	Namespace   string
	APIGroup    string
	APIVersion  string
	Resource    string
	Subresource string
	Name        string
	// Path is the request path; it is what non-resource rules match.
	Path string
	// ResourceRequest is true for /api and /apis resource URLs, false for
	// everything else (e.g. /healthz, /version, discovery documents).
	ResourceRequest bool
}

// Authorizer decides whether a request may proceed. It is the seam where RBAC
// (Roles and ClusterRoles with their bindings, evaluated like
// kube-apiserver's RBAC authorizer) will plug in; until then the server uses
// AlwaysAllow. reason explains a decision for audit logs and 403 messages;
// err means no decision could be made and the request must be denied.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// AlwaysAllow authorizes every request: any authenticated user may do
// anything. It is the placeholder until RBAC lands.
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (bool, string, error) {
	return true, "", nil
}

// Rule is one rule a RuleResolver reports: verbs on API groups and
// resources, or (NonResourceURLs set) on non-resource paths.
type Rule struct {
	Verbs, APIGroups, Resources, ResourceNames, NonResourceURLs []string
}

// RuleResolver lists what a user may do in a namespace, for
// SelfSubjectRulesReview; incomplete means the list may miss rules.
type RuleResolver interface {
	RulesFor(ctx context.Context, u *User, namespace string) (rules []Rule, incomplete bool, err error)
}

// RulesFor implements RuleResolver: everything, everywhere.
func (AlwaysAllow) RulesFor(context.Context, *User, string) ([]Rule, bool, error) {
	return []Rule{
		{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}},
		{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}},
	}, false, nil
}

var (
	_ Authorizer   = AlwaysAllow{}
	_ RuleResolver = AlwaysAllow{}
)
