package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// server is one running database server owned by this test binary.
type server struct {
	kind    string // "PostgreSQL" or "MariaDB", for messages
	version string
	port    int
	dir     string // temporary directory with data, socket and log; removed on stop
	logPath string // the server's stdout and stderr

	cmd     *exec.Cmd
	exited  chan struct{} // closed once cmd has been waited for
	waitErr error         // cmd.Wait's result, valid after exited is closed
	stopSig syscall.Signal

	// admin is a pool on a maintenance database, used to create and drop
	// the per-test databases.
	admin *sql.DB

	// How long the server took to be ready, and the part of that spent
	// creating its data directory.
	started, initialised time.Duration
}

// lazyServer starts a server on first use and remembers the outcome, so a
// server that failed to start fails every test that asks for it, with the
// same message, instead of being retried by each.
type lazyServer struct {
	once sync.Once
	srv  *server
	err  error
}

func (l *lazyServer) get(t testing.TB, start func() (*server, error)) *server {
	t.Helper()
	l.once.Do(func() {
		l.srv, l.err = start()
		if l.err != nil {
			return
		}
		running.Lock()
		running.servers = append(running.servers, l.srv)
		running.Unlock()
		t.Logf("dbtest: started %s %s on 127.0.0.1:%d in %v (%v of it creating the data directory)",
			l.srv.kind, l.srv.version, l.srv.port,
			l.srv.started.Round(time.Millisecond), l.srv.initialised.Round(time.Millisecond))
	})
	if l.err != nil {
		t.Fatalf("dbtest: %v", l.err)
	}
	return l.srv
}

// running lists the servers that Shutdown stops.
var running struct {
	sync.Mutex
	servers []*server
}

// Shutdown stops the servers this test binary started and removes their
// files. Call it after m.Run in TestMain, or use Main.
func Shutdown() {
	running.Lock()
	servers := running.servers
	running.servers = nil
	running.Unlock()
	for _, s := range servers {
		s.stop()
	}
}

// Main runs the tests, stops the servers and exits with the tests' status:
//
//	func TestMain(m *testing.M) { dbtest.Main(m) }
func Main(m *testing.M) {
	code := m.Run()
	Shutdown()
	os.Exit(code)
}

// stop asks the server to shut down, kills it if it has not within 15
// seconds, and removes its directory.
func (s *server) stop() {
	if s.admin != nil {
		s.admin.Close()
	}
	_ = s.cmd.Process.Signal(s.stopSig)
	select {
	case <-s.exited:
	case <-time.After(15 * time.Second):
		// The negative pid addresses the whole process group, which also
		// takes PostgreSQL's backend processes.
		_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
		<-s.exited
	}
	_ = os.RemoveAll(s.dir)
}

// newDatabase creates a database for t by running createSQL on s.admin and
// drops it with dropDatabase when t ends; name, which both already hold, is
// for messages.
func newDatabase(t testing.TB, s *server, name, createSQL string, dropDatabase func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := s.admin.ExecContext(ctx, createSQL); err != nil {
		t.Fatalf("dbtest: creating %s database %s: %v", s.kind, name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// Best effort: the server and everything in it goes at Shutdown.
		if err := dropDatabase(ctx); err != nil {
			t.Logf("dbtest: dropping %s database %s: %v", s.kind, name, err)
		}
	})
}

var dbCounter atomic.Int64

// databaseName returns a name unique within this test binary (and so on
// its servers) that still says which test the database belongs to. It uses
// only [a-z0-9_], so it needs no quoting and folds the same way on every
// server, and stays under PostgreSQL's 63-byte identifier limit.
func databaseName(t testing.TB) string {
	var b strings.Builder
	for _, r := range strings.ToLower(t.Name()) {
		if b.Len() == 40 {
			break
		}
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return fmt.Sprintf("t%d_%s", dbCounter.Add(1), b.String())
}

// FreePort returns a loopback TCP port that nothing listens on right now
// and that it has not returned before in this process: the kernel may
// give again the port of a listener just closed, and two servers started
// together (etcd's client port and kube-apiserver's, in a bench-compare
// run) were given the same one. Another process could still take it
// before the server binds it; the server then fails to start and its log
// says so.
func FreePort() (int, error) {
	handedOut.Lock()
	defer handedOut.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		p := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if !handedOut.ports[p] {
			handedOut.ports[p] = true
			return p, nil
		}
	}
	return 0, errors.New("dbtest: no free loopback port that was not handed out already")
}

var handedOut = struct {
	sync.Mutex
	ports map[int]bool
}{ports: map[int]bool{}}

// command returns a Cmd that writes its output to log, runs in its own
// process group (so a terminal's Ctrl-C reaches only the test binary, which
// then shuts the server down properly) and is killed when the test binary
// dies. cred, if not nil, is the user to run it as.
func command(log *os.File, cred *syscall.Credential, dir, name string, args ...string) *exec.Cmd {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	cmd.Stdout = log
	cmd.Stderr = log
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Setpgid:    true,
		Pdeathsig:  syscall.SIGKILL,
		Credential: cred,
	}
	return cmd
}

// Linux sends the parent-death signal when the thread that forked the child
// exits, not the process. The Go runtime ends a thread only when a
// goroutine exits while locked to it, but a test or library may do just
// that on the thread a server happened to be forked from, killing the
// server mid-run. So every child is forked from one goroutine locked, for
// the life of the binary, to a thread no other goroutine can run on.
var (
	spawnOnce sync.Once
	spawnReqs chan spawnReq
)

type spawnReq struct {
	cmd  *exec.Cmd
	errc chan<- error
}

// start starts cmd from the spawning thread.
func start(cmd *exec.Cmd) error {
	spawnOnce.Do(func() {
		spawnReqs = make(chan spawnReq)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread must live on
			for r := range spawnReqs {
				r.errc <- r.cmd.Start()
			}
		}()
	})
	errc := make(chan error, 1)
	spawnReqs <- spawnReq{cmd, errc}
	return <-errc
}

// run runs a setup tool such as initdb to completion, failing with the tail
// of its log.
func run(cmd *exec.Cmd, logPath string) error {
	err := start(cmd)
	if err == nil {
		err = cmd.Wait()
	}
	if err != nil {
		return fmt.Errorf("%s: %v%s", strings.Join(cmd.Args, " "), err, logTail(logPath))
	}
	return nil
}

// launch starts the server process of s and watches for its exit.
func (s *server) launch(cmd *exec.Cmd) error {
	if err := start(cmd); err != nil {
		return fmt.Errorf("starting %s: %v", cmd.Path, err)
	}
	s.cmd = cmd
	s.exited = make(chan struct{})
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()
	return nil
}

// waitReady polls until the server accepts TCP connections and ready
// succeeds, the server exits, or timeout passes. On failure it stops the
// server and removes its directory.
func (s *server) waitReady(timeout time.Duration, ready func(context.Context) error) error {
	deadline := time.Now().Add(timeout)
	addr := fmt.Sprintf("127.0.0.1:%d", s.port)
	var lastErr error
	for {
		// Probe the port first: a SQL driver would log each refused
		// connection, and the port opens only once the server is nearly up.
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err = ready(ctx)
			cancel()
			if err == nil {
				return nil
			}
		}
		lastErr = err

		select {
		case <-s.exited:
			err := fmt.Errorf("%s exited before it was ready: %v%s", s.kind, s.waitErr, logTail(s.logPath))
			s.stop()
			return err
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			err := fmt.Errorf("%s not ready after %v: %v%s", s.kind, timeout, lastErr, logTail(s.logPath))
			s.stop()
			return err
		}
	}
}

// logTail returns the end of a log file, formatted to follow an error.
func logTail(path string) string {
	const max = 4 << 10
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > max {
		_, _ = f.Seek(-max, io.SeekEnd)
	}
	tail, _ := io.ReadAll(f)
	if len(tail) == 0 {
		return ""
	}
	return fmt.Sprintf("\n--- end of %s ---\n%s", filepath.Base(path), strings.TrimRight(string(tail), "\n"))
}

// findExecutable returns the first of names found in dirs, then on $PATH.
func findExecutable(names []string, dirs []string) (string, error) {
	for _, dir := range dirs {
		for _, name := range names {
			p := filepath.Join(dir, name)
			if isExecutable(p) {
				return p, nil
			}
		}
	}
	for _, name := range names {
		if p, err := exec.LookPath(name); err == nil {
			return p, nil
		}
	}
	return "", errors.New("not found")
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
