package controllers

import (
	"bytes"
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/registry"
)

// What kube-apiserver publishes in kube-system for the cluster's members,
// which kube-controller-manager, kube-scheduler and extension API servers
// read at start:
//   - extension-apiserver-authentication: the CA bundle client
//     certificates are verified with (client-ca-file), kept current;
//   - kube-apiserver-legacy-service-account-token-tracking: the day from
//     which the use of legacy service-account tokens is tracked (since),
//     written once and never moved.
const (
	authenticationConfigMap = "extension-apiserver-authentication"
	tokenTrackingConfigMap  = "kube-apiserver-legacy-service-account-token-tracking"
)

func (m *Manager) publishClusterInfo(ctx context.Context) error {
	cms := m.api.MustLookup("", "v1", "configmaps")
	if len(m.cfg.ClientCABundle) > 0 {
		want := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: authenticationConfigMap, Namespace: metav1.NamespaceSystem},
			Data:       map[string]string{"client-ca-file": string(m.cfg.ClientCABundle)},
		}
		if err := m.putIfChanged(ctx, cms, want, func(cur runtime.Object) bool {
			c := cur.(*corev1.ConfigMap)
			return len(c.Data) == 1 && bytes.Equal([]byte(c.Data["client-ca-file"]), m.cfg.ClientCABundle)
		}); err != nil {
			return err
		}
	}
	tracking := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: tokenTrackingConfigMap, Namespace: metav1.NamespaceSystem},
		Data:       map[string]string{"since": time.Now().UTC().Format(time.DateOnly)},
	}
	if _, err := cms.Create(ctx, metav1.NamespaceSystem, tracking, registry.WriteOptions{Manager: registry.ManagerAPIServer}); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}
