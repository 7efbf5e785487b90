// Package dbtest gives tests a fresh, empty PostgreSQL or MariaDB database
// on a throwaway server that the test binary starts itself.
//
// Each server is started lazily, once per test binary, from the system's
// packaged binaries (Debian's postgresql and mariadb-server) in its own
// temporary directory on a free loopback port, with durability switched
// off for speed. Every call to Postgres or MariaDB then creates a database
// with a unique name for the calling test and drops it when the test ends,
// so tests may run in parallel without seeing each other's tables.
//
// A missing server binary fails the test with the package to install; it
// never skips, because a skipped storage test is a silently untested
// backend.
//
// Packages that use dbtest should stop the servers when their tests end:
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
//
// The servers also die with the test binary if it is killed (Linux's
// parent-death signal), so a crashed or timed-out run leaves no daemons
// behind, though it may leave their temporary directories. The package is
// Linux-only.
package dbtest
