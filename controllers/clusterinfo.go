package controllers

import (
	"context"
	"encoding/json"
	"maps"
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
//     certificates are verified with (client-ca-file) and the front
//     proxy's CA, names and headers (requestheader-*), kept current;
//   - kube-apiserver-legacy-service-account-token-tracking: the day from
//     which the use of legacy service-account tokens is tracked (since),
//     written once and never moved.
const (
	authenticationConfigMap = "extension-apiserver-authentication"
	tokenTrackingConfigMap  = "kube-apiserver-legacy-service-account-token-tracking"
)

// RequestHeaderInfo is what extension-apiserver-authentication says of
// front-proxy authentication, for members that trust the same proxy.
type RequestHeaderInfo struct {
	CAPEM                                                                        []byte
	AllowedNames, UsernameHeaders, UIDHeaders, GroupHeaders, ExtraHeaderPrefixes []string
}

// authenticationData is extension-apiserver-authentication's content, in
// kube-apiserver's keys (the lists as JSON arrays).
func (m *Manager) authenticationData() map[string]string {
	data := map[string]string{}
	if len(m.cfg.ClientCABundle) > 0 {
		data["client-ca-file"] = string(m.cfg.ClientCABundle)
	}
	if rh := m.cfg.RequestHeader; rh != nil {
		list := func(v []string) string {
			b, _ := json.Marshal(append([]string{}, v...))
			return string(b)
		}
		data["requestheader-client-ca-file"] = string(rh.CAPEM)
		data["requestheader-allowed-names"] = list(rh.AllowedNames)
		data["requestheader-username-headers"] = list(rh.UsernameHeaders)
		data["requestheader-uid-headers"] = list(rh.UIDHeaders)
		data["requestheader-group-headers"] = list(rh.GroupHeaders)
		data["requestheader-extra-headers-prefix"] = list(rh.ExtraHeaderPrefixes)
	}
	return data
}

func (m *Manager) publishClusterInfo(ctx context.Context) error {
	cms := m.api.MustLookup("", "v1", "configmaps")
	if data := m.authenticationData(); len(data) > 0 {
		want := &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: authenticationConfigMap, Namespace: metav1.NamespaceSystem},
			Data:       data,
		}
		if err := m.putIfChanged(ctx, cms, want, func(cur runtime.Object) bool {
			return maps.Equal(cur.(*corev1.ConfigMap).Data, data)
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
