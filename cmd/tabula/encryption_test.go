package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestEncryptionProviderConfig: with --encryption-provider-config a
// Secret's value is not in the database file in clear, reads give it
// back, and /metrics counts the transformations.
func TestEncryptionProviderConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "encryption.yaml")
	if err := os.WriteFile(cfgPath, []byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets]
  providers:
  - aesgcm:
      keys:
      - {name: key1, secret: c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyAxMjM=}
  - identity: {}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	m := NewMain()
	if err := m.ParseFlags([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--encryption-provider-config", cfgPath, "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	rc, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	marker := "very-secret-value-0123456789"
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s"}, StringData: map[string]string{"k": marker}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	got, err := cs.CoreV1().Secrets("default").Get(ctx, "s", metav1.GetOptions{})
	if err != nil || string(got.Data["k"]) != marker {
		t.Fatalf("get: %v %v", got, err)
	}
	// The value travels base64-encoded in the object; neither form may be
	// in the database's files.
	for _, f := range []string{"state.db", "state.db-wal"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			continue
		}
		if bytes.Contains(b, []byte("dmVyeS1zZWNyZXQtdmFsdWUtMDEyMzQ1Njc4OQ")) || bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s holds the Secret's value in clear", f)
		}
	}
	metrics, err := cs.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(metrics), `apiserver_storage_transformation_operations_total{status="OK",transformation_type="to_storage",transformer_prefix="k8s:enc:aesgcm:v1:"}`) {
		t.Errorf("/metrics does not count the encryption:\n%s", grepLines(string(metrics), "transformation"))
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// TestEncryptionRewriteOfUnchangedSecrets: kube's documented way to
// encrypt values stored before a provider was configured (or under an
// older key) is to rewrite them unchanged (kubectl get secrets -o json |
// kubectl replace -f -). Such a rewrite must be stored, not skipped as a
// no-op, and afterwards the value opens with the key alone.
func TestEncryptionRewriteOfUnchangedSecrets(t *testing.T) {
	dir := t.TempDir()
	key := "{name: key1, secret: c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyAxMjM=}"
	writeConfig := func(name, providers string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources:\n- resources: [secrets]\n  providers:\n"+providers), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withIdentity := writeConfig("with-identity.yaml", "  - aesgcm: {keys: ["+key+"]}\n  - identity: {}\n")
	keyOnly := writeConfig("key-only.yaml", "  - aesgcm: {keys: ["+key+"]}\n")
	start := func(extra ...string) (*Main, *kubernetes.Clientset) {
		m := NewMain()
		if err := m.ParseFlags(append([]string{"--data-dir", dir, "--listen", "127.0.0.1:0", "--log-level", "error"}, extra...)); err != nil {
			t.Fatal(err)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		rc, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(rc)
		if err != nil {
			t.Fatal(err)
		}
		return m, cs
	}
	ctx := context.Background()

	m, cs := start()
	if _, err := cs.CoreV1().Secrets("default").Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "old"}, Data: map[string][]byte{"k": []byte("v")}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	m.Close()

	m, cs = start("--encryption-provider-config", withIdentity)
	s, err := cs.CoreV1().Secrets("default").Get(ctx, "old", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	replaced, err := cs.CoreV1().Secrets("default").Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if replaced.ResourceVersion == s.ResourceVersion {
		t.Errorf("the unchanged rewrite of a plaintext Secret was skipped (resourceVersion %s)", s.ResourceVersion)
	}
	// Unchanged again, now under the writing key: a true no-op.
	again, err := cs.CoreV1().Secrets("default").Update(ctx, replaced, metav1.UpdateOptions{})
	if err != nil || again.ResourceVersion != replaced.ResourceVersion {
		t.Errorf("rewriting an encrypted Secret unchanged: resourceVersion %s → %s (%v); want no write", replaced.ResourceVersion, again.ResourceVersion, err)
	}
	m.Close()

	m, cs = start("--encryption-provider-config", keyOnly)
	defer m.Close()
	if got, err := cs.CoreV1().Secrets("default").Get(ctx, "old", metav1.GetOptions{}); err != nil || string(got.Data["k"]) != "v" {
		t.Errorf("with the key alone (no identity provider) the rewritten Secret reads %v, %v", got, err)
	}
}
