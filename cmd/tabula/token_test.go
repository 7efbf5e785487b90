package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// TestReplicasShareOneIdentity: replicas started on one database with one
// --token share the CA and service-account key, so one kubeconfig works
// on every replica and kube-root-ca.crt is the same bundle; a replica with
// another token refuses to start and changes nothing.
func TestReplicasShareOneIdentity(t *testing.T) {
	for _, b := range []struct {
		name string
		db   func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite://" + filepath.Join(t.TempDir(), "shared.db") }},
		{"postgres", func(t *testing.T) string { return dbtest.Postgres(t) }},
		{"mariadb", func(t *testing.T) string { return dbtest.MariaDB(t) }},
	} {
		t.Run(b.name, func(t *testing.T) {
			db := b.db(t)
			start := func(token string, extra ...string) (*Main, string, error) {
				dir := t.TempDir()
				m := NewMain()
				if err := m.ParseFlags(append([]string{"--db", db, "--data-dir", dir, "--listen", "127.0.0.1:0", "--token", token, "--log-level", "error"}, extra...)); err != nil {
					t.Fatal(err)
				}
				err := m.Run(context.Background())
				if err == nil {
					t.Cleanup(func() { m.Close() })
				}
				return m, dir, err
			}
			a, dirA, err := start("s3cret")
			if err != nil {
				t.Fatal(err)
			}
			bm, dirB, err := start("s3cret")
			if err != nil {
				t.Fatal(err)
			}
			caA, _ := os.ReadFile(filepath.Join(dirA, "pki", auth.CACertFile))
			caB, _ := os.ReadFile(filepath.Join(dirB, "pki", auth.CACertFile))
			if len(caA) == 0 || !bytes.Equal(caA, caB) {
				t.Fatal("the replicas have different CAs")
			}
			fpA, _ := os.ReadFile(filepath.Join(dirA, "pki", auth.FrontProxyCACertFile))
			fpB, _ := os.ReadFile(filepath.Join(dirB, "pki", auth.FrontProxyCACertFile))
			if len(fpA) == 0 || !bytes.Equal(fpA, fpB) {
				t.Fatal("the replicas have different front-proxy CAs")
			}

			// A's kubeconfig, pointed at B.
			cfg, err := clientcmd.BuildConfigFromFlags("", a.KubeconfigPath)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Host = "https://" + bm.Addr
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			var cm string
			deadline := time.Now().Add(20 * time.Second)
			for {
				c, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kube-root-ca.crt", metav1.GetOptions{})
				if err == nil {
					cm = c.Data["ca.crt"]
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("A's kubeconfig against B: %v", err)
				}
				<-time.After(50 * time.Millisecond) // the namespace defaults controller writes it
			}
			if cm != string(caA) {
				t.Errorf("kube-root-ca.crt holds %q; want the shared CA", cm)
			}

			sealedBefore := readSealed(t, a)
			_, dirC, err := start("wrong")
			if !errors.Is(err, auth.ErrWrongToken) {
				t.Fatalf("start with another token: %v; want ErrWrongToken", err)
			}
			if _, err := os.Stat(filepath.Join(dirC, "pki")); !os.IsNotExist(err) {
				t.Errorf("the refused replica wrote its PKI directory: %v", err)
			}
			if !bytes.Equal(readSealed(t, a), sealedBefore) {
				t.Error("the refused replica changed the stored secrets")
			}

			// Rotation: a replica given the new token and the old one
			// seals the secrets again; then the new token alone works and
			// the old one no longer does.
			if _, _, err := start("n3w", "--previous-token", "s3cret"); err != nil {
				t.Fatalf("start with the new token and --previous-token: %v", err)
			}
			_, dirD, err := start("n3w")
			if err != nil {
				t.Fatalf("start with the new token alone: %v", err)
			}
			if caD, _ := os.ReadFile(filepath.Join(dirD, "pki", auth.CACertFile)); !bytes.Equal(caD, caA) {
				t.Error("the CA changed with the token")
			}
			if _, _, err := start("s3cret"); !errors.Is(err, auth.ErrWrongToken) {
				t.Errorf("start with the old token after rotation: %v; want ErrWrongToken", err)
			}
		})
	}
}

// TestSharedSecretsGainFrontProxy: secrets a Tabula without a front
// proxy stored gain the first replica's front-proxy CA, which the next
// replica then takes; the cluster CA stays.
func TestSharedSecretsGainFrontProxy(t *testing.T) {
	db := "sqlite://" + filepath.Join(t.TempDir(), "shared.db")
	old := t.TempDir()
	if _, err := auth.EnsurePKI(old, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := auth.EnsureServiceAccountKey(old); err != nil {
		t.Fatal(err)
	}
	secrets, err := auth.LocalSecrets(old)
	if err != nil {
		t.Fatal(err)
	}
	secrets.FrontProxyCACert, secrets.FrontProxyCAKey = nil, nil
	sealed, err := auth.SealSecrets("s3cret", secrets)
	if err != nil {
		t.Fatal(err)
	}
	st, err := openStore(db, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Create(context.Background(), clusterSecretsKey, func(int64) (kv.Entry, error) { return kv.Entry{Value: sealed}, nil }); err != nil {
		t.Fatal(err)
	}
	st.Close()
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		m := NewMain()
		if err := m.ParseFlags([]string{"--db", db, "--data-dir", dir, "--listen", "127.0.0.1:0", "--token", "s3cret", "--log-level", "error"}); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		dirs = append(dirs, dir)
	}
	read := func(dir, name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, "pki", name))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if !bytes.Equal(read(dirs[0], auth.CACertFile), secrets.CACert) || !bytes.Equal(read(dirs[1], auth.CACertFile), secrets.CACert) {
		t.Error("the cluster CA changed")
	}
	if !bytes.Equal(read(dirs[0], auth.FrontProxyCACertFile), read(dirs[1], auth.FrontProxyCACertFile)) {
		t.Error("the replicas have different front-proxy CAs")
	}
}

func readSealed(t *testing.T, m *Main) []byte {
	t.Helper()
	rec, err := m.store.Get(context.Background(), clusterSecretsKey)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Value
}

// TestEveryIssuerIsAnAudience: with several --service-account-issuer,
// every one is an API audience by default, as kube-apiserver defaults
// --api-audiences: a TokenRequest naming none gets them all, and a token
// of the issuer being retired (its audience that issuer) still
// authenticates while it lasts.
func TestEveryIssuerIsAnAudience(t *testing.T) {
	_, cs := serve(t, "--service-account-issuer", "https://new.example", "--service-account-issuer", "https://old.example")
	ctx := context.Background()
	if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "issuers"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "issuers", &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(tr.Spec.Audiences, ","); got != "https://new.example,https://old.example" {
		t.Fatalf("a TokenRequest's default audiences: %s; want both issuers", got)
	}
	old, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, "issuers",
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{Audiences: []string{"https://old.example"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: old.Status.Token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !review.Status.Authenticated {
		t.Fatalf("a token for the other issuer: %+v; want it authenticated", review.Status)
	}
}
