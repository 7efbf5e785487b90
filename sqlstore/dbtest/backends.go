package dbtest

import (
	"os"
	"strings"
	"testing"
)

// BackendsEnv, when set, names the backends a developer chose to run
// (comma-separated: sqlite, postgres, mariadb). `make test-sqlite` and
// `make check` set it for a quick loop without database servers. Unset —
// as in `make test` and CI — every backend runs and a missing server binary
// fails the test.
const BackendsEnv = "TABULA_TEST_BACKENDS"

// Selected reports whether backend runs in this test binary.
func Selected(backend string) bool {
	v, ok := os.LookupEnv(BackendsEnv)
	if !ok || strings.TrimSpace(v) == "" {
		return true
	}
	for _, b := range strings.Split(v, ",") {
		if strings.TrimSpace(b) == backend {
			return true
		}
	}
	return false
}

// requireBackend skips t, saying so, when the developer deselected
// backend with TABULA_TEST_BACKENDS.
func requireBackend(t testing.TB, backend string) {
	t.Helper()
	if !Selected(backend) {
		t.Skipf("%s deselected by %s=%s", backend, BackendsEnv, os.Getenv(BackendsEnv))
	}
}
