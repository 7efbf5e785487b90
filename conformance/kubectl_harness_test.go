package conformance

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// kubectlVersion is the kubectl the suite drives: the versioned binary the
// machine's kubectl dispatcher would exec, pinned so results do not depend
// on the server's reported minor.
const kubectlVersion = "1.32"

var kubectlPath struct {
	once sync.Once
	path string
	err  error
}

// kubectlBinary returns kubectl.1.32 from beside the real kubectl (the
// dispatcher's directory), or kubectl itself if there is none.
func kubectlBinary() (string, error) {
	kubectlPath.once.Do(func() {
		p, err := exec.LookPath("kubectl")
		if err != nil {
			kubectlPath.err = errors.New("kubectl not found on $PATH: install the kubectl package from the Kubernetes or Google Cloud apt repository " +
				"(Debian's own kubernetes-client is v1.20, too old); the suite prefers kubectl." + kubectlVersion + " beside it")
			return
		}
		real, err := filepath.EvalSymlinks(p)
		if err != nil {
			kubectlPath.err = err
			return
		}
		versioned := filepath.Join(filepath.Dir(real), "kubectl."+kubectlVersion)
		if isExecutable(versioned) {
			kubectlPath.path = versioned
			return
		}
		kubectlPath.path = real
	})
	return kubectlPath.path, kubectlPath.err
}

// kubectl runs the kubectl binary against one target, with a HOME of its
// own so that the discovery cache starts empty.
type kubectl struct {
	bin        string
	home       string
	kubeconfig string
}

func newKubectl(t *testing.T, tg *target) *kubectl {
	t.Helper()
	bin, err := kubectlBinary()
	if err != nil {
		t.Fatal(err)
	}
	return &kubectl{bin: bin, home: t.TempDir(), kubeconfig: tg.Kubeconfig}
}

// result is one kubectl invocation's outcome.
type result struct {
	args           []string
	stdout, stderr string
	code           int
}

func (r result) String() string {
	return "kubectl " + strings.Join(r.args, " ") + "\n  exit code: " + strconv.Itoa(r.code) +
		"\n  stdout: " + indent(r.stdout) + "\n  stderr: " + indent(r.stderr)
}

func indent(s string) string {
	s = strings.TrimRight(s, "\n")
	if s == "" {
		return "(empty)"
	}
	return strings.ReplaceAll(s, "\n", "\n          ")
}

// runOpts are the less common inputs of a kubectl run.
type runOpts struct {
	stdin string
	env   []string
}

func (k *kubectl) env(extra []string) []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch name {
		case "HOME", "KUBECONFIG", "KUBE_EDITOR", "EDITOR", "KUBECTL_EXTERNAL_DIFF":
			continue
		}
		env = append(env, kv)
	}
	return append(append(env, "HOME="+k.home, "KUBECONFIG="+k.kubeconfig), extra...)
}

func (k *kubectl) command(ctx context.Context, o runOpts, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Env = k.env(o.env)
	cmd.Dir = k.home
	if o.stdin != "" {
		cmd.Stdin = strings.NewReader(o.stdin)
	}
	return cmd
}

// runWith runs kubectl and returns what it did; it fails t only if kubectl
// could not be run at all.
func (k *kubectl) runWith(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandDeadline)
	defer cancel()
	cmd := k.command(ctx, o, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case ctx.Err() != nil:
		t.Fatalf("kubectl %s: no exit within %v\n%s", strings.Join(args, " "), commandDeadline, r)
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
	default:
		t.Fatalf("running kubectl %s: %v", strings.Join(args, " "), err)
	}
	return r
}

func (k *kubectl) run(t *testing.T, args ...string) result {
	t.Helper()
	return k.runWith(t, runOpts{}, args...)
}

// ok runs kubectl, fails t unless it exits 0, and returns its stdout.
func (k *kubectl) ok(t *testing.T, args ...string) string {
	t.Helper()
	return k.okWith(t, runOpts{}, args...)
}

func (k *kubectl) okWith(t *testing.T, o runOpts, args ...string) string {
	t.Helper()
	r := k.runWith(t, o, args...)
	if r.code != 0 {
		t.Fatalf("got exit code %d, want 0:\n%s", r.code, r)
	}
	return r.stdout
}

// fails runs kubectl and fails t unless it exits non-zero.
func (k *kubectl) fails(t *testing.T, o runOpts, args ...string) result {
	t.Helper()
	r := k.runWith(t, o, args...)
	if r.code == 0 {
		t.Fatalf("got exit code 0, want a failure:\n%s", r)
	}
	return r
}

// expectOutput fails t unless kubectl's stdout, trimmed, is want.
func expectOutput(t *testing.T, got, want string) {
	t.Helper()
	if g := strings.TrimSpace(got); g != want {
		t.Errorf("kubectl printed %q, want %q", g, want)
	}
}

// lineStream reads a background kubectl's stdout line by line.
type lineStream struct {
	lines chan string
	cmd   *exec.Cmd
	// stderr is what the process printed on stderr, complete once it
	// exited.
	stderr bytes.Buffer
	done   chan struct{}
}

// start runs kubectl in the background; it is killed when t ends.
func (k *kubectl) start(t *testing.T, args ...string) *lineStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.command(ctx, runOpts{}, args...)
	s := &lineStream{lines: make(chan string, 100), cmd: cmd, done: make(chan struct{})}
	cmd.Stderr = &s.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatalf("starting kubectl %s: %v", strings.Join(args, " "), err)
	}
	go func() {
		defer close(s.done)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
		_, _ = io.Copy(io.Discard, out)
		_ = cmd.Wait()
	}()
	t.Cleanup(func() {
		cancel()
		<-s.done
	})
	return s
}

// next returns the next line, failing t if none arrives within timeout or
// the process ends.
func (s *lineStream) next(t *testing.T, timeout time.Duration) string {
	t.Helper()
	select {
	case l, ok := <-s.lines:
		if !ok {
			<-s.done
			t.Fatalf("kubectl %s ended early; stderr:\n%s", strings.Join(s.cmd.Args[1:], " "), s.stderr.String())
		}
		return l
	case <-time.After(timeout):
		t.Fatalf("no output line from kubectl %s within %v", strings.Join(s.cmd.Args[1:], " "), timeout)
	}
	return ""
}

// parseTable splits kubectl's column output into rows of cells, keyed by
// the header: columns start where their header does, so empty cells
// (such as SHORTNAMES) are kept.
func parseTable(t *testing.T, out string) (header []string, rows []map[string]string) {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || strings.TrimSpace(lines[0]) == "" {
		t.Fatalf("no table in kubectl output %q", out)
	}
	head := lines[0]
	// kubectl pads columns with at least three spaces; a single space is
	// inside a header ("LAST SCHEDULE").
	var starts []int
	for i := 0; i < len(head); i++ {
		if head[i] != ' ' && (i == 0 || (i >= 2 && head[i-1] == ' ' && head[i-2] == ' ')) {
			starts = append(starts, i)
		}
	}
	for i, start := range starts {
		end := len(head)
		if i+1 < len(starts) {
			end = starts[i+1]
		}
		header = append(header, strings.TrimSpace(head[start:end]))
	}
	for _, l := range lines[1:] {
		row := map[string]string{}
		for i, start := range starts {
			end := len(l)
			if i+1 < len(starts) && starts[i+1] < end {
				end = starts[i+1]
			}
			cell := ""
			if start < len(l) {
				cell = strings.TrimSpace(l[start:end])
			}
			row[header[i]] = cell
		}
		rows = append(rows, row)
	}
	return header, rows
}
