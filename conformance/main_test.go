package conformance

import (
	"fmt"
	"os"
	"testing"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

func TestMain(m *testing.M) {
	// The test binary doubles as a helper process for checks that need a
	// fresh process, such as client-go feature gates read from the
	// environment (see informer_test.go).
	if child := os.Getenv(childEnv); child != "" {
		os.Exit(runChild(child))
	}

	code := m.Run()

	// Servers first, then their databases, then the database servers.
	if err := running.stopAll(); err != nil {
		fmt.Fprintf(os.Stderr, "conformance: stopping the shared Tabula servers: %v\n", err)
		code = 1
	}
	stopIssuer()
	runBinaryCleanups()
	dbtest.Shutdown()
	if scratch.dir != "" {
		_ = os.RemoveAll(scratch.dir)
	}
	printReport(os.Stdout)
	os.Exit(code)
}
