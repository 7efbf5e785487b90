package conformance

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// kubeconfigEnv names an external server to test instead of Tabula.
const kubeconfigEnv = "TABULA_CONFORMANCE_KUBECONFIG"

// externalTarget is the subtest name of the server kubeconfigEnv names.
const externalTarget = "external"

// protobufContentType is what typed clientsets send for built-in kinds.
const protobufContentType = "application/vnd.kubernetes.protobuf"

// Deadlines. Waiting is always on a condition; these only bound it.
const (
	startDeadline   = 60 * time.Second // process start to /readyz ok
	stopDeadline    = 15 * time.Second // SIGTERM to exit
	commandDeadline = 2 * time.Minute  // one kubectl invocation
	waitDeadline    = 30 * time.Second // an event or a state change
)

// target is one server the tests run against.
type target struct {
	// Name is the subtest name: a backend name or externalTarget.
	Name string
	// Kubeconfig is the path clients are pointed at.
	Kubeconfig string
	// Proc is the Tabula process, nil for an external server.
	Proc *tabulaProcess

	config *rest.Config // as loaded, JSON bodies
}

// restConfig returns a copy of the target's client configuration with
// client-side rate limiting off (the suite's loops would otherwise measure
// the limiter).
func (tg *target) restConfig() *rest.Config {
	c := rest.CopyConfig(tg.config)
	c.QPS, c.Burst = -1, 0
	c.UserAgent = "tabula-conformance"
	return c
}

// protobufConfig is restConfig as typed clientsets use it against
// kube-apiserver: protobuf request bodies, protobuf or JSON replies.
func (tg *target) protobufConfig() *rest.Config {
	c := tg.restConfig()
	c.ContentType = protobufContentType
	c.AcceptContentTypes = protobufContentType + ",application/json"
	return c
}

// clientset returns a typed clientset speaking protobuf.
func (tg *target) clientset(t testing.TB) *kubernetes.Clientset {
	t.Helper()
	cs, err := kubernetes.NewForConfig(tg.protobufConfig())
	if err != nil {
		t.Fatalf("clientset for %s: %v", tg.Name, err)
	}
	return cs
}

func loadTarget(name, kubeconfig string, proc *tabulaProcess) (*target, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("loading kubeconfig %s: %w", kubeconfig, err)
	}
	return &target{Name: name, Kubeconfig: kubeconfig, Proc: proc, config: cfg}, nil
}

// backend is a database Tabula can run on.
type backend struct {
	name string
	// database returns the --db URL of a new, empty database, created for
	// tb and living as long as it; dir is a private scratch directory.
	database func(tb testing.TB, dir string) string
}

var backends = []backend{
	{"sqlite", func(_ testing.TB, dir string) string { return "sqlite://" + filepath.Join(dir, "tabula.db") }},
	{"postgres", func(tb testing.TB, _ string) string { return dbtest.Postgres(tb) }},
	{"mariadb", func(tb testing.TB, _ string) string { return dbtest.MariaDB(tb) }},
}

// targetNames lists the matrix columns of this run, in order.
func targetNames() []string {
	if os.Getenv(kubeconfigEnv) != "" {
		return []string{externalTarget}
	}
	var names []string
	for _, b := range backends {
		names = append(names, b.name)
	}
	return names
}

// forEachTarget runs fn as a subtest per target: the external server if
// kubeconfigEnv is set, else the shared Tabula server of each backend.
func forEachTarget(t *testing.T, fn func(t *testing.T, tg *target)) {
	t.Helper()
	if kc := os.Getenv(kubeconfigEnv); kc != "" {
		t.Run(externalTarget, func(t *testing.T) {
			tg, err := external.get(func() (*target, error) { return loadTarget(externalTarget, kc, nil) })
			if err != nil {
				t.Fatal(err)
			}
			fn(t, tg)
		})
		return
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			tg := sharedTarget(t, b)
			t.Cleanup(func() {
				if t.Failed() && tg.Proc != nil {
					t.Logf("warnings and errors in the %s server's log:%s", tg.Name, tg.Proc.logProblems())
				}
			})
			fn(t, tg)
		})
	}
}

// lazyTarget starts a target on first use and remembers the outcome, so a
// target that cannot start fails every test that needs it with one message.
type lazyTarget struct {
	once sync.Once
	tg   *target
	err  error
}

func (l *lazyTarget) get(start func() (*target, error)) (*target, error) {
	l.once.Do(func() { l.tg, l.err = start() })
	return l.tg, l.err
}

var (
	external lazyTarget
	shared   = map[string]*lazyTarget{"sqlite": {}, "postgres": {}, "mariadb": {}}
)

// sharedTarget returns the Tabula server of backend b that all tests of
// this binary share, starting it on first use.
func sharedTarget(t *testing.T, b backend) *target {
	t.Helper()
	tg, err := shared[b.name].get(func() (*target, error) {
		dir, err := suiteDir()
		if err != nil {
			return nil, err
		}
		dir = filepath.Join(dir, "shared-"+b.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, err
		}
		// The database must outlive the test that happens to start the
		// server, so it belongs to the binary, not to t.
		db, err := binaryDatabase(t, b, dir)
		if err != nil {
			return nil, err
		}
		audit, err := auditArgs(dir)
		if err != nil {
			return nil, err
		}
		authn, err := authenticationArgs(dir)
		if err != nil {
			return nil, err
		}
		proc, err := startTabula(t, serveOptions{DB: db, DataDir: filepath.Join(dir, "data"), Args: append(audit, authn...)})
		if err != nil {
			return nil, err
		}
		running.add(proc)
		measurements.set(b.name, "startup to ready", proc.StartupTime.Round(time.Millisecond).String())
		if rss, err := proc.RSS(); err == nil {
			measurements.set(b.name, "RSS idle after start", formatBytes(rss))
			t.Logf("%s: RSS idle after start: %s", b.name, formatBytes(rss))
		}
		return loadTarget(b.name, proc.Kubeconfig, proc)
	})
	if err != nil {
		t.Fatalf("starting Tabula on %s: %v", b.name, err)
	}
	return tg
}

// sharedAuditPolicy is the audit policy of the shared servers: what
// kube's usual policies record (Secrets at Metadata, writes with their
// bodies, everything else at Metadata; health probes not at all).
const sharedAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/readyz*", "/livez*"]
- level: Metadata
  resources: [{group: "", resources: [secrets]}]
- level: RequestResponse
  verbs: [create, update, patch, delete]
- level: Metadata
`

// auditArgs writes the shared audit policy into dir and returns the
// flags that record to dir/audit.log.
func auditArgs(dir string) ([]string, error) {
	policy := filepath.Join(dir, "audit-policy.yaml")
	if err := os.WriteFile(policy, []byte(sharedAuditPolicy), 0o600); err != nil {
		return nil, err
	}
	return []string{"--audit-policy-file", policy, "--audit-log-path", filepath.Join(dir, "audit.log")}, nil
}

// running lists the shared servers, which TestMain stops.
var running procList

type procList struct {
	mu    sync.Mutex
	procs []*tabulaProcess
}

func (l *procList) add(p *tabulaProcess) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.procs = append(l.procs, p)
}

// stopAll stops every shared server, reporting those that do not exit
// cleanly.
func (l *procList) stopAll() error {
	l.mu.Lock()
	procs := l.procs
	l.procs = nil
	l.mu.Unlock()
	var errs []error
	for _, p := range procs {
		if err := p.Stop(stopDeadline); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// The suite's scratch directory holds the tabula binary and the shared
// servers' data; TestMain removes it.
var scratch struct {
	once sync.Once
	dir  string
	err  error
}

func suiteDir() (string, error) {
	scratch.once.Do(func() { scratch.dir, scratch.err = os.MkdirTemp("", "tabula-conformance-") })
	return scratch.dir, scratch.err
}

// A suiteArtifact is made once per test binary, on first use, in the
// suite's scratch directory: a tool built from the module proxy, files
// fetched from a module.
type suiteArtifact struct {
	once sync.Once
	path string
	err  error
}

func (a *suiteArtifact) get(make func(dir string) (string, error)) (string, error) {
	a.once.Do(func() {
		dir, err := suiteDir()
		if err != nil {
			a.err = err
			return
		}
		a.path, a.err = make(dir)
	})
	return a.path, a.err
}

// goOutside runs the go tool in dir as for a module other than this one:
// its own go.mod decides the dependencies. It returns stdout (and stderr
// within the error).
func goOutside(dir string, env []string, args ...string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, goTool(), args...)
	cmd.Dir = dir
	cmd.Env = append(append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "CGO_ENABLED=0"), env...)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("go %s: %v\n%s%s", strings.Join(args, " "), err, out, stderr.String())
	}
	return out, nil
}

// The tabula binary, built once per test binary on first use.
var binary struct {
	once sync.Once
	path string
	err  error
}

func tabulaBinary() (string, error) {
	binary.once.Do(func() {
		dir, err := suiteDir()
		if err != nil {
			binary.err = err
			return
		}
		binary.path = filepath.Join(dir, "tabula")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, goTool(), "build", "-o", binary.path, "github.com/tabula-dev/tabula/cmd/tabula")
		if out, err := cmd.CombinedOutput(); err != nil {
			binary.err = fmt.Errorf("go build ./cmd/tabula: %v\n%s", err, out)
		}
	})
	return binary.path, binary.err
}

// goTool is the go command of the toolchain running the tests.
func goTool() string {
	if p := filepath.Join(runtime.GOROOT(), "bin", "go"); isExecutable(p) {
		return p
	}
	return "go"
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

// binaryTB stands in for a testing.TB that lives as long as the test
// binary, for databases that shared servers keep between tests. dbtest
// drops a database when its TB's cleanups run; these run in TestMain,
// after the servers using them have stopped.
//
// Only the methods dbtest calls are implemented; the embedded nil TB makes
// any other call panic loudly rather than misbehave quietly.
type binaryTB struct {
	testing.TB
	name string

	mu       sync.Mutex
	logf     func(format string, args ...any)
	cleanups []func()
}

// tbFailure is what binaryTB's Fatal and Skip panic with; binaryDatabase
// turns it back into an error.
type tbFailure struct{ msg string }

func (b *binaryTB) Helper()      {}
func (b *binaryTB) Name() string { return b.name }
func (b *binaryTB) Failed() bool { return false }

func (b *binaryTB) Logf(format string, args ...any) {
	b.mu.Lock()
	logf := b.logf
	b.mu.Unlock()
	logf(format, args...)
}

func (b *binaryTB) Log(args ...any) { b.Logf("%s", fmt.Sprint(args...)) }

func (b *binaryTB) Fatalf(format string, args ...any) { panic(tbFailure{fmt.Sprintf(format, args...)}) }
func (b *binaryTB) Fatal(args ...any)                 { panic(tbFailure{fmt.Sprint(args...)}) }
func (b *binaryTB) Errorf(format string, args ...any) { b.Fatalf(format, args...) }
func (b *binaryTB) Error(args ...any)                 { b.Fatal(args...) }

func (b *binaryTB) Cleanup(f func()) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.cleanups = append(b.cleanups, f)
}

func (b *binaryTB) setLog(f func(string, ...any)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.logf = f
}

func (b *binaryTB) runCleanups() {
	b.mu.Lock()
	fs := b.cleanups
	b.cleanups = nil
	b.mu.Unlock()
	for i := len(fs) - 1; i >= 0; i-- {
		fs[i]()
	}
}

func stderrLogf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

// binaryTBs are run down by TestMain.
var binaryTBs struct {
	mu  sync.Mutex
	all []*binaryTB
}

func runBinaryCleanups() {
	binaryTBs.mu.Lock()
	all := binaryTBs.all
	binaryTBs.all = nil
	binaryTBs.mu.Unlock()
	for _, b := range all {
		b.setLog(stderrLogf)
		b.runCleanups()
	}
}

// binaryDatabase creates a database for backend b that lives until
// TestMain ends; log lines while creating it go to t.
func binaryDatabase(t *testing.T, b backend, dir string) (url string, err error) {
	tb := &binaryTB{name: "conformance_shared_" + b.name}
	tb.setLog(t.Logf)
	binaryTBs.mu.Lock()
	binaryTBs.all = append(binaryTBs.all, tb)
	binaryTBs.mu.Unlock()
	defer tb.setLog(stderrLogf) // t may be long gone when the cleanups log
	defer func() {
		if r := recover(); r != nil {
			f, ok := r.(tbFailure)
			if !ok {
				panic(r)
			}
			err = errors.New(f.msg)
		}
	}()
	return b.database(tb, dir), nil
}

// serveOptions is how the suite starts `tabula serve`.
type serveOptions struct {
	DB      string
	DataDir string
	// Listen is the address to listen on; empty picks a free loopback port.
	Listen string
	// Args are more flags for `tabula serve`.
	Args []string
}

// tabulaProcess is a running `tabula serve`.
type tabulaProcess struct {
	Addr        string // host:port it serves on
	Kubeconfig  string // the admin kubeconfig it wrote
	StartupTime time.Duration
	Options     serveOptions

	cmd     *exec.Cmd
	log     *lineLog
	exited  chan struct{}
	waitErr error
}

// servingLine is what `tabula serve` prints on stderr once it listens.
var servingLine = regexp.MustCompile(`Tabula is serving on https://(\S+) — run: export KUBECONFIG=(\S+)`)

// startTabula starts `tabula serve` and waits for /readyz. A free port
// taken by someone else between picking and binding is retried.
func startTabula(t testing.TB, o serveOptions) (*tabulaProcess, error) {
	bin, err := tabulaBinary()
	if err != nil {
		return nil, err
	}
	for attempt := 1; ; attempt++ {
		p, err := launchTabula(bin, o)
		if err == nil {
			t.Logf("tabula on %s ready at %s in %v (start of process to /readyz ok)",
				dbKind(o.DB), p.Addr, p.StartupTime.Round(time.Millisecond))
			return p, nil
		}
		if o.Listen != "" || attempt == 3 || !strings.Contains(err.Error(), "address already in use") {
			return nil, err
		}
	}
}

func dbKind(db string) string {
	kind, _, _ := strings.Cut(db, ":")
	return kind
}

func launchTabula(bin string, o serveOptions) (*tabulaProcess, error) {
	listen := o.Listen
	if listen == "" {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		listen = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if err := os.MkdirAll(filepath.Dir(o.DataDir), 0o700); err != nil {
		return nil, err
	}
	// The log sits beside the data directory, which belongs to the server.
	log, err := newLineLog(o.DataDir+".log", servingLine)
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--db", o.DB, "--data-dir", o.DataDir, "--listen", listen}, o.Args...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	p := &tabulaProcess{Options: o, cmd: cmd, log: log, exited: make(chan struct{})}
	p.Options.Listen = listen
	began := time.Now()
	if err := spawn(cmd); err != nil {
		log.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	go func() {
		p.waitErr = cmd.Wait()
		log.Close()
		close(p.exited)
	}()

	deadline := time.NewTimer(startDeadline)
	defer deadline.Stop()
	select {
	case m := <-log.matched:
		p.Addr, p.Kubeconfig = m[1], m[2]
	case <-p.exited:
		return nil, fmt.Errorf("tabula serve exited before serving: %v%s", p.waitErr, p.log.tail())
	case <-deadline.C:
		p.kill()
		return nil, fmt.Errorf("tabula serve printed no serving line within %v%s", startDeadline, p.log.tail())
	}
	if err := p.waitReady(time.Until(began.Add(startDeadline))); err != nil {
		p.kill()
		return nil, err
	}
	p.StartupTime = time.Since(began)
	return p, nil
}

// waitReady polls /readyz anonymously, as a load balancer would.
func (p *tabulaProcess) waitReady(timeout time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		return fmt.Errorf("kubeconfig written by tabula: %w", err)
	}
	hc, err := rest.HTTPClientFor(rest.AnonymousClientConfig(cfg))
	if err != nil {
		return err
	}
	defer hc.CloseIdleConnections()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(cfg.Host, "/")+"/readyz", nil)
		resp, err := hc.Do(req)
		if err == nil {
			var body bytes.Buffer
			_, _ = body.ReadFrom(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				cancel()
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, strings.TrimSpace(body.String()))
		} else {
			last = err.Error()
		}
		cancel()
		select {
		case <-p.exited:
			return fmt.Errorf("tabula serve exited before /readyz was ok: %v%s", p.waitErr, p.log.tail())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("/readyz not ok within %v: %s%s", startDeadline, last, p.log.tail())
		}
	}
}

// Stop sends SIGTERM and waits up to timeout for the process to exit; it
// is an error if it does not, or exits with a non-zero status.
func (p *tabulaProcess) Stop(timeout time.Duration) error {
	select {
	case <-p.exited:
		return fmt.Errorf("tabula (%s) had already exited: %v%s", p.Addr, p.waitErr, p.log.tail())
	default:
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		return err
	}
	select {
	case <-p.exited:
		if p.waitErr != nil {
			return fmt.Errorf("tabula (%s) exited with %v after SIGTERM%s", p.Addr, p.waitErr, p.log.tail())
		}
		return nil
	case <-time.After(timeout):
		p.kill()
		return fmt.Errorf("tabula (%s) did not exit within %v of SIGTERM; killed it%s", p.Addr, timeout, p.log.tail())
	}
}

func (p *tabulaProcess) kill() {
	_ = p.cmd.Process.Kill()
	<-p.exited
}

// RSS is the process's resident set size in bytes (VmRSS).
func (p *tabulaProcess) RSS() (int64, error) { return pidRSS(p.cmd.Process.Pid) }

// pidRSS is a process's VmRSS in bytes.
func pidRSS(pid int) (int64, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) != 2 || f[1] != "kB" {
				return 0, fmt.Errorf("unexpected VmRSS line %q", line)
			}
			kb, err := strconv.ParseInt(f[0], 10, 64)
			return kb << 10, err
		}
	}
	return 0, errors.New("no VmRSS in /proc status")
}

// logProblems returns the log's WARN and ERROR lines (the last 30).
func (p *tabulaProcess) logProblems() string {
	var lines []string
	for _, l := range strings.Split(p.log.contents(), "\n") {
		if strings.Contains(l, "level=WARN") || strings.Contains(l, "level=ERROR") || strings.Contains(l, "panic") {
			lines = append(lines, l)
		}
	}
	if len(lines) > 30 {
		lines = lines[len(lines)-30:]
	}
	if len(lines) == 0 {
		return " none"
	}
	return "\n" + strings.Join(lines, "\n")
}

// freePortArg is a free loopback port as a flag value, failing tb if none.
func freePortArg(tb testing.TB) string {
	tb.Helper()
	p, err := freePort()
	if err != nil {
		tb.Fatal(err)
	}
	return strconv.Itoa(p)
}

// freePort is dbtest's: one record of the ports handed out in this
// process, for the database servers and the upstream ones alike.
func freePort() (int, error) { return dbtest.FreePort() }

// lineLog receives a process's output: it appends it to a file and
// reports the first line matching a pattern.
type lineLog struct {
	mu      sync.Mutex
	f       *os.File
	path    string
	partial []byte
	re      *regexp.Regexp
	matched chan []string // receives the first match's submatches
	found   bool
}

func newLineLog(path string, re *regexp.Regexp) (*lineLog, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &lineLog{f: f, path: path, re: re, matched: make(chan []string, 1)}, nil
}

func (l *lineLog) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		_, _ = l.f.Write(b)
	}
	if l.found {
		return len(b), nil
	}
	l.partial = append(l.partial, b...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			break
		}
		line := string(l.partial[:i])
		l.partial = l.partial[i+1:]
		if m := l.re.FindStringSubmatch(line); m != nil {
			l.found = true
			l.partial = nil
			l.matched <- m
			break
		}
	}
	return len(b), nil
}

func (l *lineLog) Close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f != nil {
		l.f.Close()
		l.f = nil
	}
}

func (l *lineLog) contents() string {
	b, _ := os.ReadFile(l.path)
	return string(b)
}

// tail formats the end of the log to follow an error message.
func (l *lineLog) tail() string {
	s := strings.TrimRight(l.contents(), "\n")
	if s == "" {
		return " (no output)"
	}
	if len(s) > 4000 {
		s = "…" + s[len(s)-4000:]
	}
	return "\n--- tabula output (" + filepath.Base(l.path) + ") ---\n" + s
}

// Linux sends the parent-death signal when the thread that forked the
// child exits, not the process, and the Go runtime retires threads that a
// goroutine leaves locked. Forking every server from one goroutine locked
// to its thread for the life of the binary keeps servers alive exactly as
// long as the test binary.
var spawner struct {
	once sync.Once
	reqs chan spawnRequest
}

type spawnRequest struct {
	cmd  *exec.Cmd
	errc chan error
}

func spawn(cmd *exec.Cmd) error {
	spawner.once.Do(func() {
		spawner.reqs = make(chan spawnRequest)
		go func() {
			runtime.LockOSThread() // for good: this thread must not exit
			for r := range spawner.reqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawner.reqs <- spawnRequest{cmd, errc}
	return <-errc
}

// newNamespace creates a namespace of the test's own and deletes it when
// the test ends (without waiting for the deletion to finish).
func newNamespace(t testing.TB, tg *target) string {
	t.Helper()
	cs := tg.clientset(t)
	name := uniqueName("conf-" + slug(lastElem(t.Name()), 40))
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating namespace %s: %v", name, err)
	}
	t.Cleanup(func() { deleteNamespace(t, tg, name) })
	return name
}

func deleteNamespace(t testing.TB, tg *target, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), waitDeadline)
	defer cancel()
	err := tg.clientset(t).CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("deleting namespace %s after the test: %v", name, err)
	}
}

// uniqueName appends a random suffix to prefix.
func uniqueName(prefix string) string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}

// slug turns a test name into a DNS label fragment of at most max bytes.
func slug(s string, max int) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(s) {
		if b.Len() >= max {
			break
		}
		switch {
		case r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
			b.WriteRune(r)
			dash = false
		case !dash && b.Len() > 0:
			b.WriteByte('-')
			dash = true
		}
	}
	return strings.Trim(b.String(), "-")
}

func lastElem(name string) string {
	return name[strings.LastIndex(name, "/")+1:]
}

// waitFor polls cond until it returns true or an error, or the deadline
// passes; the last non-nil message explains a timeout.
func waitFor(t testing.TB, what string, timeout time.Duration, cond func() (done bool, status string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	interval := 10 * time.Millisecond
	var status string
	for {
		var done bool
		done, status = cond()
		if done {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not done within %v; last state: %s", what, timeout, status)
		}
		<-time.After(interval) // polling with a deadline, not synchronisation
		if interval < 200*time.Millisecond {
			interval *= 2
		}
	}
}

// testContext is a context that ends with the test or after timeout.
func testContext(t testing.TB, timeout time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	return ctx
}

func formatBytes(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// ownServerOnly reports whether the suite runs its own Tabula servers; a
// test that needs one (to restart it, to run its binary) calls it first,
// and against an external kubeconfig it records n/a, saying why.
func ownServerOnly(t *testing.T, why string) bool {
	t.Helper()
	if os.Getenv(kubeconfigEnv) == "" {
		return true
	}
	results.set(scenarioRow(t, ""), externalTarget, resultNA)
	t.Logf("%s is set: %s", kubeconfigEnv, why)
	return false
}
