package registry_test

import (
	"context"

	"github.com/tabula-dev/tabula/registry"
)

// mustNew is registry.New for configurations that cannot fail.
func mustNew(cfg registry.Config) *registry.Registry {
	g, err := registry.New(cfg)
	if err != nil {
		panic(err)
	}
	// Admission waits for the caches (webhook configurations, namespaces);
	// they run until the store closes.
	if cfg.Store != nil {
		g.RunCaches(context.Background(), func(ctx context.Context, _ string, fn func(context.Context) error) {
			go func() { _ = fn(ctx) }()
		})
	}
	return g
}
