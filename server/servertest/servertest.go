package servertest

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
)

// Server builds a server on cfg, runs its controllers until t ends and
// returns once /readyz passes.
// Unset Registry, Version and Logger are the built-in types, v1.35.0 and
// a logger that discards everything.
func Server(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Registry == nil {
		cfg.Registry = schema.NewBuiltin()
	}
	if cfg.Version.GitVersion == "" {
		cfg.Version = version.Info{GitVersion: "v1.35.0"}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := server.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	if err := srv.RunControllers(ctx); err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() {
		srv.BeginShutdown()
		cancel()
	})
	// Ready: the controllers run, the bootstrap objects exist and the
	// caches are synced (asked directly: /readyz may need credentials).
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := srv.Ready(context.Background())
		if err == nil {
			return srv
		}
		if time.Now().After(deadline) {
			t.Fatalf("servertest: not ready within 30s: %v", err)
		}
		<-time.After(5 * time.Millisecond)
	}
}
