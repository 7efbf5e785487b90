// Package conformance is Tabula's end-to-end suite: it drives a running
// server the way real clients do — the kubectl binary (kubectl.1.32, the
// version the machine's kubectl dispatcher would pick) and client-go's typed
// clientset, informers, watches and leader election — and checks what those
// clients print and the state they leave behind.
//
// The target is chosen once, when the test binary starts:
//
//   - By default every test runs against Tabula on each database backend, as
//     subtests named sqlite, postgres and mariadb. The suite builds
//     ./cmd/tabula once and starts one `tabula serve` process per backend,
//     lazily, shared by all tests; each test works in namespaces of its own,
//     so tests do not see each other's objects. PostgreSQL and MariaDB come
//     from sqlstore/dbtest, which fails (never skips) when their binaries are
//     missing.
//   - With TABULA_CONFORMANCE_KUBECONFIG=/path/to/kubeconfig the same tests
//     run once, as subtests named external, against that server — a real
//     kube-apiserver, for comparison — and nothing is started.
//
// Tests that must stop and restart a server (restart_test.go) start their
// own processes; against an external server they have nothing to do and
// report n/a.
//
// Every scenario records pass or FAIL per target, and the test binary prints
// the scenario × target matrix, followed by the measured startup times,
// create rates and memory, when it ends. Known gaps show up there as
// failures: nothing is skipped. A failing scenario asserts what
// kube-apiserver does; the fix belongs in the server, not in the test.
//
// The package holds tests only; this file exists so that the package
// documents itself like every other package in the module.
package conformance
