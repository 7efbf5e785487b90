package auth

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/warning"
)

// Legacy service account tokens are those kube-controller-manager's token
// controller writes into kubernetes.io/service-account-token Secrets,
// signed with the same key (its --service-account-private-key-file is
// Tabula's pki/sa.key). They never expire, so kube-apiserver accepts one
// only while its Secret holds exactly it and its ServiceAccount is the
// one it names, and records each day it is used on the Secret, so that
// unused ones can be found and removed (kcm's legacy token cleaner).

// LegacyIssuer is the issuer of Secret-based tokens.
const LegacyIssuer = "kubernetes/serviceaccount"

// The labels kube-apiserver reads and writes on a token's Secret.
const (
	// LegacyTokenLastUsedLabel is the day (UTC, 2006-01-02) the token was
	// last used.
	LegacyTokenLastUsedLabel = "kubernetes.io/legacy-token-last-used"
	// LegacyTokenInvalidSinceLabel marks a token refused from that day.
	LegacyTokenInvalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"
)

type legacyClaims struct {
	LegacyServiceAccount    string `json:"kubernetes.io/serviceaccount/service-account.name,omitempty"`
	LegacyServiceAccountUID string `json:"kubernetes.io/serviceaccount/service-account.uid,omitempty"`
	LegacySecret            string `json:"kubernetes.io/serviceaccount/secret.name,omitempty"`
	LegacyNamespace         string `json:"kubernetes.io/serviceaccount/namespace,omitempty"`
}

// LegacyTokenObjects reads what a legacy token names and records its use;
// the server implements it over its registry.
type LegacyTokenObjects interface {
	// Secret and ServiceAccount return the object, or a NotFound error.
	Secret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	ServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	// MarkUsed sets the Secret's last-used label to day, if the Secret
	// still has its uid; a failure is logged, not the request's.
	MarkUsed(ctx context.Context, s *corev1.Secret, day string)
}

// SetLegacyTokenObjects enables legacy Secret tokens; call it before
// serving. Without it they are refused.
func (a *Authenticator) SetLegacyTokenObjects(o LegacyTokenObjects) {
	if a != nil {
		a.legacy = o
	}
}

// kube-apiserver's answers for a token whose Secret is gone or going, or
// holds another token.
var (
	errLegacyInvalidated = errors.New("Token has been invalidated")         //nolint:staticcheck // kube's text
	errLegacyMismatch    = errors.New("Token does not match server's copy") //nolint:staticcheck // kube's text
)

// authenticateLegacyToken checks a Secret-based token as kube-apiserver's
// legacy validator does, with its errors, audit annotations and warning.
func (a *Authenticator) authenticateLegacyToken(ctx context.Context, token string, c *claims, audiences []string) (*User, bool, error) {
	if a.legacy == nil {
		return nil, false, errors.New("legacy service account tokens are not accepted")
	}
	// kube's JWT authenticator marks every token without audiences (a
	// Secret's) so, before its claims are checked.
	audit.AddAuditAnnotation(ctx, "authentication.k8s.io/legacy-token", c.Subject)
	ns, secretName, saName, saUID := c.LegacyNamespace, c.LegacySecret, c.LegacyServiceAccount, c.LegacyServiceAccountUID
	switch {
	case c.Subject == "":
		return nil, false, errors.New("sub claim is missing")
	case ns == "":
		return nil, false, errors.New("namespace claim is missing")
	case secretName == "":
		return nil, false, errors.New("secretName claim is missing")
	case saName == "":
		return nil, false, errors.New("serviceAccountName claim is missing")
	case saUID == "":
		return nil, false, errors.New("serviceAccountUID claim is missing")
	case c.Subject != "system:serviceaccount:"+ns+":"+saName:
		return nil, false, errors.New("sub claim is invalid")
	}
	secret, err := a.legacy.Secret(ctx, ns, secretName)
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, false, errLegacyInvalidated
		}
		return nil, false, err
	}
	if secret.DeletionTimestamp != nil {
		return nil, false, errLegacyInvalidated
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(token)) == 0 {
		return nil, false, errLegacyMismatch
	}
	sa, err := a.legacy.ServiceAccount(ctx, ns, saName)
	if err != nil {
		return nil, false, err
	}
	if sa.DeletionTimestamp != nil {
		return nil, false, fmt.Errorf("ServiceAccount %s/%s has been deleted", ns, saName)
	}
	if string(sa.UID) != saUID {
		return nil, false, fmt.Errorf("ServiceAccount UID (%s) does not match claim (%s)", sa.UID, saUID)
	}
	if since := secret.Labels[LegacyTokenInvalidSinceLabel]; since != "" {
		audit.AddAuditAnnotation(ctx, "authentication.k8s.io/legacy-token-invalidated", secret.Name+"/"+secret.Namespace)
		a.markLegacyTokenUsed(ctx, secret)
		return nil, false, fmt.Errorf("the token in secret %s/%s for service account %s/%s has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '%s' label from the secret to temporarily allow use of this token", ns, secretName, ns, saName, LegacyTokenInvalidSinceLabel)
	}
	autoGenerated := false
	for _, ref := range sa.Secrets {
		if ref.Name == secret.Name {
			autoGenerated = true
			break
		}
	}
	if autoGenerated {
		warning.AddWarning(ctx, "", "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens.")
		audit.AddAuditAnnotation(ctx, "authentication.k8s.io/legacy-token-autogenerated-secret", secret.Name)
	} else {
		audit.AddAuditAnnotation(ctx, "authentication.k8s.io/legacy-token-manual-secret", secret.Name)
	}
	a.markLegacyTokenUsed(ctx, secret)
	u := &User{Name: c.Subject, UID: saUID,
		Groups:    []string{"system:serviceaccounts", "system:serviceaccounts:" + ns},
		audiences: intersect(a.saTokens.legacyAudiences(c), audiences)}
	return u, true, nil
}

// markLegacyTokenUsed labels the Secret with today's date unless it
// already says today (or tomorrow, a replica's clock ahead), so a token
// costs one write a day.
func (a *Authenticator) markLegacyTokenUsed(ctx context.Context, s *corev1.Secret) {
	now := time.Now().UTC()
	today, tomorrow := now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)
	if last := s.Labels[LegacyTokenLastUsedLabel]; last == today || last == tomorrow {
		return
	}
	a.legacy.MarkUsed(ctx, s, today)
}
