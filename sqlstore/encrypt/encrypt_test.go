package encrypt

import (
	"bytes"
	"strings"
	"testing"
)

const key1 = "c2VjcmV0IGlzIHNlY3VyZSwgSSB0aGluayBzbyAxMjM=" // 32 bytes
const key2 = "dGhpcyBpcyBhbm90aGVyIGtleSBmb3IgdGVzdHMhISE=" // 32 bytes

func config(t *testing.T, providers string) *Config {
	t.Helper()
	c, err := Parse([]byte(`apiVersion: apiserver.config.k8s.io/v1
kind: EncryptionConfiguration
resources:
- resources: [secrets, "*.example.com"]
  providers:
` + providers))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestProviders: each provider writes kube's prefix, reads its own
// writes, and binds a value to its key.
func TestProviders(t *testing.T) {
	for name, providers := range map[string]string{
		"aesgcm":    "  - aesgcm: {keys: [{name: key1, secret: " + key1 + "}]}\n",
		"aescbc":    "  - aescbc: {keys: [{name: key1, secret: " + key1 + "}]}\n",
		"secretbox": "  - secretbox: {keys: [{name: key1, secret: " + key1 + "}]}\n",
	} {
		t.Run(name, func(t *testing.T) {
			c := config(t, providers)
			plain := []byte(`{"data":{"password":"hunter2"}}`)
			sealed, err := c.Seal("secrets", "ns", "s", plain)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.HasPrefix(sealed, []byte("k8s:enc:"+name+":v1:key1:")) || bytes.Contains(sealed, []byte("hunter2")) {
				t.Fatalf("sealed %q", sealed)
			}
			got, stale, err := c.Open("secrets", "ns", "s", sealed)
			if err != nil || !bytes.Equal(got, plain) || stale {
				t.Fatalf("open: %q stale=%v %v", got, stale, err)
			}
			if name == "aesgcm" { // only GCM binds the value to its key (kube: authenticated data)
				if _, _, err := c.Open("secrets", "ns", "other", sealed); err == nil {
					t.Error("a value moved to another key opened")
				}
			}
		})
	}
}

// TestResourcesAndRotation: only named resources are sealed; with a new
// key first and the old one after, old values read and writes use the
// new key; identity reads values stored before encryption.
func TestResourcesAndRotation(t *testing.T) {
	old := config(t, "  - aesgcm: {keys: [{name: key1, secret: "+key1+"}]}\n  - identity: {}\n")
	if v, _ := old.Seal("configmaps", "ns", "c", []byte("x")); string(v) != "x" {
		t.Errorf("configmaps sealed: %q", v)
	}
	if v, _ := old.Seal("widgets.example.com", "ns", "w", []byte("x")); !strings.HasPrefix(string(v), "k8s:enc:aesgcm:v1:key1:") {
		t.Errorf("*.example.com not sealed: %q", v)
	}
	if v, stale, err := old.Open("secrets", "ns", "s", []byte(`{"plain":true}`)); err != nil || string(v) != `{"plain":true}` || !stale {
		t.Errorf("a value stored before encryption: %q stale=%v %v (want it stale: a rewrite encrypts it)", v, stale, err)
	}
	sealed1, _ := old.Seal("secrets", "ns", "s", []byte("v1"))

	rotated := config(t, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}, {name: key1, secret: "+key1+"}]}\n")
	if v, stale, err := rotated.Open("secrets", "ns", "s", sealed1); err != nil || string(v) != "v1" || !stale {
		t.Errorf("old key's value after rotation: %q stale=%v %v (want it stale)", v, stale, err)
	}
	sealed2, _ := rotated.Seal("secrets", "ns", "s", []byte("v2"))
	if !strings.HasPrefix(string(sealed2), "k8s:enc:aesgcm:v1:key2:") {
		t.Errorf("rotated write uses %q", sealed2[:24])
	}
	onlyNew := config(t, "  - aesgcm: {keys: [{name: key2, secret: "+key2+"}]}\n")
	if _, _, err := onlyNew.Open("secrets", "ns", "s", sealed1); err == nil {
		t.Error("a value of a removed key opened")
	}
	if _, _, err := onlyNew.Open("secrets", "ns", "s", []byte(`{"plain":true}`)); err == nil {
		t.Error("a plain value opened without an identity provider")
	}
}

func TestBadConfigs(t *testing.T) {
	for name, doc := range map[string]string{
		"wrong kind":     "apiVersion: apiserver.config.k8s.io/v1\nkind: Other\n",
		"no providers":   "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets]}]\n",
		"short aes key":  "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets], providers: [{aesgcm: {keys: [{name: k, secret: c2hvcnQ=}]}}]}]\n",
		"kms":            "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets], providers: [{kms: {name: x, endpoint: unix:///x}}]}]\n",
		"unknown field":  "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresource: []\n",
		"not base64 key": "apiVersion: apiserver.config.k8s.io/v1\nkind: EncryptionConfiguration\nresources: [{resources: [secrets], providers: [{secretbox: {keys: [{name: k, secret: '!!'}]}}]}]\n",
	} {
		if _, err := Parse([]byte(doc)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
