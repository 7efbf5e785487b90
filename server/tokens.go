package server

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/google/uuid"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	"k8s.io/kubernetes/pkg/apis/authentication"
	authenticationvalidation "k8s.io/kubernetes/pkg/apis/authentication/validation"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server/auth"
)

// serviceaccounts/token issues a service account token (kubectl create
// token), as kube-apiserver's TokenRequest storage does; the
// authenticator accepts it while the account (and the object it is
// bound to) exist.

var tokenRequestKind = &schema.Type{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest",
	New: func() runtime.Object { return &authenticationv1.TokenRequest{} }}

// tokenObjects are the kinds a token names, with where they live.
var tokenObjects = map[string]struct{ group, resource string }{
	"ServiceAccount": {"", "serviceaccounts"},
	"Pod":            {"", "pods"},
	"Secret":         {"", "secrets"},
	"Node":           {"", "nodes"},
}

// tokenObjectUID is the authenticator's check that what a token names
// still exists.
func (s *Server) tokenObjectUID(ctx context.Context, kind, namespace, name string) (string, bool, error) {
	where, ok := tokenObjects[kind]
	if !ok {
		return "", false, nil
	}
	obj, _, err := s.api.MustLookup(where.group, "v1", where.resource).Get(ctx, namespace, name)
	if apierrors.IsNotFound(err) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	acc, ok := obj.(metav1.Object)
	if !ok {
		return "", false, nil
	}
	if at := acc.GetDeletionTimestamp(); at != nil && at.Time.Before(time.Now().Add(-auth.DeletedLeeway)) {
		return "", false, nil
	}
	return string(acc.GetUID()), true, nil
}

// legacyTokens is what the authenticator reads and writes for legacy
// Secret-based tokens (auth.LegacyTokenObjects), through the registry.
type legacyTokens struct{ s *Server }

func (l legacyTokens) Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error) {
	obj, _, err := l.s.api.MustLookup("", "v1", "secrets").Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Secret), nil
}

func (l legacyTokens) ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	obj, _, err := l.s.api.MustLookup("", "v1", "serviceaccounts").Get(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.ServiceAccount), nil
}

// MarkUsed writes the last-used label as kube-apiserver's merge patch
// does (the patch names the uid, so a Secret recreated since is left).
func (l legacyTokens) MarkUsed(ctx context.Context, secret *corev1.Secret, day string) {
	_, _, err := l.s.api.MustLookup("", "v1", "secrets").Update(ctx, secret.Namespace, secret.Name, func(cur runtime.Object) (runtime.Object, error) {
		cs, ok := cur.(*corev1.Secret)
		if !ok {
			return nil, l.s.api.MustLookup("", "v1", "secrets").NotFound(secret.Name)
		}
		if cs.UID != secret.UID {
			return nil, apierrors.NewConflict(runtimeschema.GroupResource{Resource: "secrets"}, secret.Name, fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s)", secret.UID, cs.UID))
		}
		if cs.Labels[auth.LegacyTokenLastUsedLabel] == day {
			return nil, registry.ErrNoChange
		}
		if cs.Labels == nil {
			cs.Labels = map[string]string{}
		}
		cs.Labels[auth.LegacyTokenLastUsedLabel] = day
		return cs, nil
	}, registry.UpdateOptions{WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	if err != nil {
		l.s.log.Error("labelling a legacy service account token with its last-used date", "secret", secret.Namespace+"/"+secret.Name, "err", err)
	}
}

func (r *request) serviceAccountToken() error {
	if r.verb != "create" {
		return methodNotAllowed()
	}
	obj, dryRun, err := r.readObject(tokenRequestKind)
	if err != nil {
		return err
	}
	tr := obj.(*authenticationv1.TokenRequest)
	if err := r.bodyNamespace(tr); err != nil {
		return err
	}
	if tr.Spec.ExpirationSeconds == nil {
		one := int64(3600) // the v1 default, set as the body is decoded
		tr.Spec.ExpirationSeconds = &one
	}
	// kube's create handler records the writer's fields of the request as
	// decoded, before admission and the token storage fill it in.
	written, err := r.s.api.WrittenFields(schema.TokenRequestKind, "token", tr, r.manager())
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	tr.ManagedFields = written
	// Mutating admission sees the request as sent, audiences unset
	// included (NodeRestriction reads them so); validating admission
	// sees it as the token storage filled it in, as in kube.
	accounts := r.s.api.MustLookup("", "v1", "serviceaccounts")
	if err := accounts.MutateSubresource(r.ctx, r.ri.Namespace, r.ri.Name, "token", tokenRequestKind, tr, dryRun); err != nil {
		return err
	}
	if tr.Name != "" && tr.Name != r.ri.Name {
		return apierrors.NewInvalid(tokenRequestGK, r.ri.Name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), tr.Name, "must match the service account name if specified")})
	}
	saObj, _, err := r.res.Get(r.ctx, r.ri.Namespace, r.ri.Name)
	if err != nil {
		return err
	}
	sa := saObj.(*corev1.ServiceAccount)
	// kube 1.35's TokenRequestServiceAccountUIDValidation (on by default).
	if tr.UID != "" && tr.UID != sa.UID {
		return apierrors.NewConflict(runtimeschema.GroupResource{Group: tokenRequestGK.Group, Resource: tokenRequestGK.Kind}, r.ri.Name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", tr.UID, sa.UID))
	}
	if len(tr.Spec.Audiences) == 0 {
		tr.Spec.Audiences = r.s.cfg.ServiceAccountTokens.Audiences
	}
	tr.Name, tr.Namespace, tr.UID = sa.Name, sa.Namespace, sa.UID
	now := time.Now()
	tr.CreationTimestamp = metav1.NewTime(now)
	tr.Status = authenticationv1.TokenRequestStatus{}
	in := &authentication.TokenRequest{}
	if err := legacyscheme.Scheme.Convert(tr, in, nil); err != nil {
		return err
	}
	if errs := authenticationvalidation.ValidateTokenRequest(in); len(errs) > 0 {
		return apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	if err := accounts.ValidateSubresource(r.ctx, r.ri.Namespace, r.ri.Name, "token", tokenRequestKind, tr.DeepCopy(), dryRun); err != nil {
		return err
	}
	subject := auth.TokenSubject{Namespace: sa.Namespace, Name: sa.Name, UID: string(sa.UID), Audiences: tr.Spec.Audiences}
	if ref := tr.Spec.BoundObjectRef; ref != nil {
		// As kube's: the reference's group (from its apiVersion) and kind.
		gvk := runtimeschema.FromAPIVersionAndKind(ref.APIVersion, ref.Kind)
		where, ok := tokenObjects[ref.Kind]
		if !ok || ref.Kind == "ServiceAccount" || gvk.Group != where.group {
			return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token to object of type %s", gvk.String()))
		}
		ns := r.ri.Namespace
		if ref.Kind == "Node" {
			ns = ""
		}
		// kube reads the object through its storage, whose key function
		// refuses a name no path could hold.
		if err := keyNameError(ref.Name); err != nil {
			return err
		}
		bound, _, err := r.s.api.MustLookup(where.group, "v1", where.resource).Get(r.ctx, ns, ref.Name)
		if err != nil {
			return err
		}
		if pod, ok := bound.(*corev1.Pod); ok {
			if pod.Spec.ServiceAccountName != sa.Name {
				return apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
			}
			if subject.NodeName = pod.Spec.NodeName; subject.NodeName != "" {
				// A Node not (or no longer) there is named without a uid.
				node, _, err := r.s.api.MustLookup("", "v1", "nodes").Get(r.ctx, "", subject.NodeName)
				switch {
				case err == nil:
					subject.NodeUID = string(node.(metav1.Object).GetUID())
				case !apierrors.IsNotFound(err):
					return apierrors.NewInternalError(err)
				}
			}
		}
		acc := bound.(metav1.Object)
		if ref.UID != "" && ref.UID != acc.GetUID() {
			return apierrors.NewConflict(runtimeschema.GroupResource{Group: gvk.Group, Resource: gvk.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		// The answer echoes the reference as sent (kube's token storage
		// keeps the uid it read to itself).
		subject.BoundKind, subject.BoundName, subject.BoundUID = ref.Kind, ref.Name, string(acc.GetUID())
	}
	// Longer than --service-account-max-token-expiration is shortened,
	// with kube-apiserver's warning.
	if max := int64(r.s.cfg.ServiceAccountTokens.MaxExpiration / time.Second); max > 0 && *tr.Spec.ExpirationSeconds > max {
		warning.AddWarning(r.ctx, "", fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *tr.Spec.ExpirationSeconds, max))
		tr.Spec.ExpirationSeconds = &max
	}
	subject.Expiry = time.Duration(*tr.Spec.ExpirationSeconds) * time.Second
	// The kubelet asks 3607 s for a projected volume's token: as kube-apiserver
	// does by default (--service-account-extend-token-expiration), such a
	// Pod's token for this server's audiences lives a year and says when it
	// should have been renewed.
	if subject.BoundKind == "Pod" && *tr.Spec.ExpirationSeconds == warnOnlyTokenSeconds &&
		!slices.ContainsFunc(tr.Spec.Audiences, func(a string) bool { return !slices.Contains(r.s.cfg.ServiceAccountTokens.Audiences, a) }) {
		subject.WarnAfter, subject.Expiry = subject.Expiry, extendedTokenLifetime
	}
	subject.ID = uuid.NewString()
	token, err := r.s.cfg.ServiceAccountTokens.Issue(subject, now)
	if err != nil {
		return err
	}
	// As kube's token storage: the issued token's credential id, which its
	// later uses carry in their user's extra (and audit events).
	audit.AddAuditAnnotation(r.ctx, "authentication.kubernetes.io/issued-credential-id", "JTI="+subject.ID)
	tr.Status = authenticationv1.TokenRequestStatus{Token: token,
		ExpirationTimestamp: metav1.NewTime(now.Add(time.Duration(*tr.Spec.ExpirationSeconds) * time.Second))}
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	return r.writeObject(http.StatusCreated, out, tr)
}

// kube's WarnOnlyBoundTokenExpirationSeconds and ExpirationExtensionSeconds.
const (
	warnOnlyTokenSeconds  = 60*60 + 7
	extendedTokenLifetime = 365 * 24 * time.Hour
)

var tokenRequestGK = runtimeschema.GroupKind{Group: "authentication.k8s.io", Kind: "TokenRequest"}
