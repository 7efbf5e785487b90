// Package servertest runs Tabula in process for tests: an event log on a
// database URL and a server on it, both closed when the test ends.
package servertest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/sqlstore"
)

// Quiet is a logger that discards everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Store opens the event log at url; it closes when t ends.
func Store(t testing.TB, url string) *sqlstore.Store {
	t.Helper()
	st, err := sqlstore.Open(context.Background(), url, sqlstore.Options{Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// Server builds a server on cfg and runs its controllers until t ends.
// Unset Registry, Version and Logger are the built-in types, v1.35.0 and
// Quiet.
func Server(t testing.TB, cfg server.Config) *server.Server {
	t.Helper()
	if cfg.Registry == nil {
		cfg.Registry = schema.NewBuiltin()
	}
	if cfg.Version.GitVersion == "" {
		cfg.Version = version.Info{GitVersion: "v1.35.0"}
	}
	if cfg.Logger == nil {
		cfg.Logger = Quiet
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
	return srv
}
