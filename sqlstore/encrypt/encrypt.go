package encrypt

import (
	"context"
	"crypto/aes"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	apiserverv1 "k8s.io/apiserver/pkg/apis/apiserver/v1"
	"k8s.io/apiserver/pkg/storage/value"
	aestransformer "k8s.io/apiserver/pkg/storage/value/encrypt/aes"
	"k8s.io/apiserver/pkg/storage/value/encrypt/identity"
	"k8s.io/apiserver/pkg/storage/value/encrypt/secretbox"
	"sigs.k8s.io/yaml"
)

// Config encrypts the values of the resources an EncryptionConfiguration
// names. Resources it does not name are stored as they are.
type Config struct {
	rules []rule
}

type rule struct {
	// resource is "secrets", "deployments.apps", "*.apps" or "*.*".
	resource    string
	transformer value.Transformer
	// writePrefix names the provider and key writes use ("" = identity).
	writePrefix string
}

var (
	operations = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_storage_transformation_operations_total",
		Help: "Values transformed to and from storage, by transformation type, provider prefix and status.",
	}, []string{"transformation_type", "transformer_prefix", "status"})
)

// Collectors are the package's metrics, for the server's registry.
func Collectors() []prometheus.Collector { return []prometheus.Collector{operations} }

// Load reads an EncryptionConfiguration file.
func Load(path string) (*Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return Parse(b)
}

// Parse builds a Config from an EncryptionConfiguration document.
func Parse(doc []byte) (*Config, error) {
	var ec apiserverv1.EncryptionConfiguration
	if err := yaml.UnmarshalStrict(doc, &ec); err != nil {
		return nil, fmt.Errorf("encryption config: %w", err)
	}
	if ec.Kind != "EncryptionConfiguration" || ec.APIVersion != "apiserver.config.k8s.io/v1" {
		return nil, fmt.Errorf("encryption config: kind %q apiVersion %q; want EncryptionConfiguration apiserver.config.k8s.io/v1", ec.Kind, ec.APIVersion)
	}
	c := &Config{}
	for i, rc := range ec.Resources {
		if len(rc.Providers) == 0 {
			return nil, fmt.Errorf("encryption config: resources[%d] has no providers", i)
		}
		var prefixed []value.PrefixTransformer
		write := ""
		for j, p := range rc.Providers {
			ts, err := providerTransformers(p)
			if err != nil {
				return nil, fmt.Errorf("encryption config: resources[%d].providers[%d]: %w", i, j, err)
			}
			if j == 0 {
				write = prefixOf(ts[0].Prefix)
			}
			prefixed = append(prefixed, ts...)
		}
		t := value.NewPrefixTransformers(errors.New("no provider of the encryption config reads this value"), prefixed...)
		for _, r := range rc.Resources {
			c.rules = append(c.rules, rule{resource: r, transformer: t, writePrefix: write})
		}
	}
	return c, nil
}

// providerTransformers are one provider's keys, in order, with kube's
// prefixes.
func providerTransformers(p apiserverv1.ProviderConfiguration) ([]value.PrefixTransformer, error) {
	switch {
	case p.AESGCM != nil:
		return keyed("aesgcm", p.AESGCM.Keys, func(key []byte) (value.Transformer, error) {
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewGCMTransformer(block)
		})
	case p.AESCBC != nil:
		return keyed("aescbc", p.AESCBC.Keys, func(key []byte) (value.Transformer, error) {
			block, err := aes.NewCipher(key)
			if err != nil {
				return nil, err
			}
			return aestransformer.NewCBCTransformer(block), nil
		})
	case p.Secretbox != nil:
		return keyed("secretbox", p.Secretbox.Keys, func(key []byte) (value.Transformer, error) {
			if len(key) != 32 {
				return nil, fmt.Errorf("secretbox keys are 32 bytes, got %d", len(key))
			}
			var k [32]byte
			copy(k[:], key)
			return secretbox.NewSecretboxTransformer(k), nil
		})
	case p.Identity != nil:
		return []value.PrefixTransformer{{Prefix: []byte{}, Transformer: identity.NewEncryptCheckTransformer()}}, nil
	case p.KMS != nil:
		return nil, errors.New("kms providers are not supported")
	}
	return nil, errors.New("no provider named")
}

func keyed(kind string, keys []apiserverv1.Key, mk func([]byte) (value.Transformer, error)) ([]value.PrefixTransformer, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s: no keys", kind)
	}
	var out []value.PrefixTransformer
	for _, k := range keys {
		secret, err := base64.StdEncoding.DecodeString(k.Secret)
		if err != nil {
			return nil, fmt.Errorf("%s key %q: %w", kind, k.Name, err)
		}
		t, err := mk(secret)
		if err != nil {
			return nil, fmt.Errorf("%s key %q: %w", kind, k.Name, err)
		}
		out = append(out, value.PrefixTransformer{Prefix: []byte("k8s:enc:" + kind + ":v1:" + k.Name + ":"), Transformer: t})
	}
	return out, nil
}

// ruleFor finds the first rule naming resource (a storage resource name:
// "secrets", "deployments.apps"), as kube-apiserver matches them.
func (c *Config) ruleFor(resource string) *rule {
	if c == nil {
		return nil
	}
	group := ""
	if _, g, ok := strings.Cut(resource, "."); ok {
		group = g
	}
	for i := range c.rules {
		r := &c.rules[i]
		switch {
		case r.resource == resource, r.resource == "*.*":
			return r
		case strings.HasPrefix(r.resource, "*.") && strings.TrimPrefix(r.resource, "*.") == group:
			return r // "*.apps"; "*." is the core group's
		}
	}
	return nil
}

// Seal encrypts the stored value of the object at key (resource,
// namespace, name: the authenticated data binding it there).
func (c *Config) Seal(resource, namespace, name string, plain []byte) ([]byte, error) {
	r := c.ruleFor(resource)
	if r == nil {
		return plain, nil
	}
	out, err := r.transformer.TransformToStorage(context.Background(), plain, authData(resource, namespace, name))
	record("to_storage", r.writePrefix, err)
	return out, err
}

// Open decrypts a stored value; values written before encryption was
// configured read through an identity provider, if the rule has one.
// stale reports a value not read by the rule's first provider (the one
// Seal writes with), as kube's transformers report it.
func (c *Config) Open(resource, namespace, name string, stored []byte) (plain []byte, stale bool, err error) {
	r := c.ruleFor(resource)
	if r == nil {
		return stored, false, nil
	}
	out, stale, err := r.transformer.TransformFromStorage(context.Background(), stored, authData(resource, namespace, name))
	record("from_storage", prefixOf(stored), err)
	return out, stale, err
}

func authData(resource, namespace, name string) value.Context {
	return value.DefaultContext(resource + "/" + namespace + "/" + name)
}

// prefixOf is the provider prefix of a stored value, for the metric.
func prefixOf(stored []byte) string {
	if !strings.HasPrefix(string(stored[:min(len(stored), 8)]), "k8s:enc:") {
		// Unprefixed values are the identity provider's.
		return "identity"
	}
	parts := strings.SplitN(string(stored[:min(len(stored), 64)]), ":", 5)
	if len(parts) < 4 {
		return "unknown"
	}
	return strings.Join(parts[:4], ":") + ":"
}

func record(typ, prefix string, err error) {
	status := "OK"
	if err != nil {
		status = "Error"
	}
	operations.WithLabelValues(typ, prefix, status).Inc()
}
