package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPublishedClusterInfo: like kube-apiserver, Tabula publishes in
// kube-system the client CA bundle (its own CA and --client-ca-file's) in
// extension-apiserver-authentication, with the generated front proxy's
// CA, name and headers (kubeadm's settings) that aggregated API servers
// trust, and the day legacy service-account token tracking started,
// which kube-controller-manager reads at start.
func TestPublishedClusterInfo(t *testing.T) {
	dir := t.TempDir()
	extra := newTestCA(t, "extra client CA")
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, extra.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	_, cs := serve(t, "--data-dir", dir, "--client-ca-file", caFile)
	own, err := os.ReadFile(filepath.Join(dir, "pki", "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	frontProxy, err := os.ReadFile(filepath.Join(dir, "pki", "front-proxy-ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, name := range []string{"extension-apiserver-authentication", "kube-apiserver-legacy-service-account-token-tracking"} {
		for {
			cm, err := cs.CoreV1().ConfigMaps("kube-system").Get(ctx, name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) && ctx.Err() == nil {
				<-time.After(20 * time.Millisecond) // polling with a deadline
				continue
			}
			if err != nil {
				t.Fatalf("get kube-system/%s: %v", name, err)
			}
			switch name {
			case "extension-apiserver-authentication":
				bundle := cm.Data["client-ca-file"]
				if !strings.Contains(bundle, string(extra.pem)) || !strings.Contains(bundle, string(own)) || strings.Contains(bundle, string(frontProxy)) {
					t.Errorf("%s's client-ca-file is %s; want the generated CA and --client-ca-file's", name, bundle)
				}
				want := map[string]string{"requestheader-client-ca-file": string(frontProxy), "requestheader-allowed-names": `["front-proxy-client"]`,
					"requestheader-username-headers": `["X-Remote-User"]`, "requestheader-uid-headers": `["X-Remote-Uid"]`,
					"requestheader-group-headers": `["X-Remote-Group"]`, "requestheader-extra-headers-prefix": `["X-Remote-Extra-"]`}
				for k, v := range want {
					if cm.Data[k] != v {
						t.Errorf("%s: %s is %q, want %q", name, k, cm.Data[k], v)
					}
				}
				if len(cm.Data) != len(want)+1 {
					t.Errorf("%s holds %d keys, want %d: %v", name, len(cm.Data), len(want)+1, cm.Data)
				}
			default:
				if _, err := time.Parse(time.DateOnly, cm.Data["since"]); err != nil || len(cm.Data) != 1 {
					t.Errorf("%s holds %v; want since, a date", name, cm.Data)
				}
			}
			break
		}
	}
}
