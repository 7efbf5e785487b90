package conformance

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The Kubernetes end-to-end suite, as the project runs it to prove its
// servers: e2e.test and ginkgo from k8s.io/kubernetes v1.35.4
// (testdata/e2e pins them), with no nodes. `make e2e` runs it; it takes
// too long for every `go test`, so it is a benchmark like the density run.
const (
	e2eFocusDefault = `\[sig-api-machinery\]`
	e2eSkipDefault  = `\[Serial\]|\[Disruptive\]|\[Flaky\]|\[Feature:OffByDefault\]`
)

var e2eBin suiteArtifact

// e2eBinaries returns the directory holding e2e.test, ginkgo and the
// kubectl of the same release (the specs run it): E2E_BIN
// when it is set (make e2e builds them there once), else built into the
// suite's scratch directory.
func e2eBinaries() (string, error) {
	if dir := os.Getenv("E2E_BIN"); dir != "" {
		for _, name := range []string{"e2e.test", "ginkgo", "kubectl"} {
			if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
				return "", fmt.Errorf("E2E_BIN: %v", err)
			}
		}
		return dir, nil
	}
	return e2eBin.get(func(dir string) (string, error) {
		src, err := filepath.Abs(filepath.Join("testdata", "e2e"))
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, "e2e-bin")
		if _, err := goOutside(src, nil, "test", "-c", "-o", filepath.Join(out, "e2e.test"), "k8s.io/kubernetes/test/e2e"); err != nil {
			return "", err
		}
		if _, err := goOutside(src, nil, "build", "-o", filepath.Join(out, "ginkgo"), "github.com/onsi/ginkgo/v2/ginkgo"); err != nil {
			return "", err
		}
		if _, err := goOutside(src, nil, "build", "-ldflags", kubeVersionFlags, "-o", filepath.Join(out, "kubectl"), "k8s.io/kubernetes/cmd/kubectl"); err != nil {
			return "", err
		}
		return out, nil
	})
}

// BenchmarkE2E runs the e2e suite's api-machinery specs (E2E_FOCUS and
// E2E_SKIP replace the focus and skip) against one server — E2E_SERVER
// "tabula" (the default, on E2E_DB: sqlite, postgres or mariadb) or
// "kube" (kube-apiserver + etcd, the reference) — with
// kube-controller-manager beside it, in E2E_PROCS parallel processes
// (default 4), leaving out the specs testdata/e2e/needs-nodes.txt lists
// (E2E_ALL=1 runs them too). It prints the specs that ran with each
// failure's first line, writes the outcome to bin/e2e-<server>.txt, and
// fails when a spec testdata/e2e/expected-pass.txt lists did not pass on
// Tabula; E2E_UPDATE=1 rewrites that list from the run instead.
// E2E_SET=beyond runs the specs testdata/e2e/beyond.txt names (the
// [Conformance] specs of other SIGs that use only the API) against
// expected-pass-beyond.txt.
func BenchmarkE2E(b *testing.B) {
	bins, err := e2eBinaries()
	if err != nil {
		b.Fatal(err)
	}
	cluster, err := clusterBinaries()
	if err != nil {
		b.Fatal(err)
	}
	server := envOr("E2E_SERVER", "tabula")
	dbName := envOr("E2E_DB", "sqlite")
	set := envOr("E2E_SET", "api-machinery")
	focus := envOr("E2E_FOCUS", e2eFocusDefault)
	expectedFile := "expected-pass.txt"
	switch set {
	case "api-machinery":
	case "beyond":
		// Named specs: the focus is their exact names.
		names, err := readSpecList(filepath.Join("testdata", "e2e", "beyond.txt"))
		if err != nil {
			b.Fatal(err)
		}
		for i, n := range names {
			names[i] = regexp.QuoteMeta(n) + "$"
		}
		focus, expectedFile = strings.Join(names, "|"), "expected-pass-beyond.txt"
	default:
		b.Fatalf("E2E_SET=%q: want api-machinery or beyond", set)
	}
	for range b.N {
		dir := b.TempDir()
		kubeconfig, pki := startE2EServer(b, server, dbName, dir)
		// kcm uses the admin kubeconfig on both servers alike.
		startServing(b, dir, "kube-controller-manager", filepath.Join(cluster, "kube-controller-manager"), nil,
			"--kubeconfig", kubeconfig, "--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
			"--bind-address", "127.0.0.1", "--use-service-account-credentials=true",
			"--service-account-private-key-file", filepath.Join(pki, "sa.key"), "--root-ca-file", filepath.Join(pki, "ca.crt"),
			"--cluster-signing-cert-file", filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file", filepath.Join(pki, "ca.key"))

		skip := envOr("E2E_SKIP", e2eSkipDefault)
		if os.Getenv("E2E_ALL") != "1" {
			// The specs that need running pods wait minutes each for a
			// kubelet before failing, on kube-apiserver as on Tabula.
			nodes, err := readNeedsNodes()
			if err != nil {
				b.Fatal(err)
			}
			// Anchored at the end only: ginkgo matches the text with
			// something of its own in front.
			for name := range nodes {
				skip += "|" + regexp.QuoteMeta(name) + "$"
			}
		}
		report := filepath.Join(dir, "report.json")
		args := []string{
			"--procs", envOr("E2E_PROCS", "4"), "--timeout", envOr("E2E_TIMEOUT", "3h"),
			"--focus", focus, "--skip", skip,
			"--json-report", report, "--no-color", "--silence-skips",
			filepath.Join(bins, "e2e.test"), "--",
			"--kubeconfig", kubeconfig, "--provider", "skeleton", "--num-nodes", "0", "--kubectl-path", filepath.Join(bins, "kubectl"),
			"--report-dir", dir, "--e2e-output-dir", dir,
		}
		name := fmt.Sprintf("e2e-%s", server)
		if server == "tabula" {
			name += "-" + dbName
		}
		if set != "api-machinery" {
			name += "-" + set
		}
		if os.Getenv("E2E_FOCUS") != "" {
			name += "-focus" // a focused run leaves the whole run's files alone
		}
		log := filepath.Join(repoBin(b), name+".log")
		cmd := exec.Command(filepath.Join(bins, "ginkgo"), args...)
		f, err := os.Create(log)
		if err != nil {
			b.Fatal(err)
		}
		cmd.Stdout, cmd.Stderr = f, f
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
		b.Logf("running the e2e suite against %s; its output goes to %s", name, log)
		began := time.Now()
		runErr := cmd.Run()
		f.Close()
		specs, err := readGinkgoReport(report)
		if err != nil {
			b.Fatalf("ginkgo (%v) left no report: %v; see %s", runErr, err, log)
		}
		out := summariseE2E(specs, time.Since(began))
		if err := os.WriteFile(filepath.Join(repoBin(b), name+".txt"), []byte(out), 0o644); err != nil {
			b.Fatal(err)
		}
		b.Log("\n" + out)
		b.ReportMetric(float64(countState(specs, "passed")), "passed")
		b.ReportMetric(float64(countState(specs, "failed")), "failed")
		if server == "tabula" {
			checkExpectedE2E(b, specs, filepath.Join("testdata", "e2e", expectedFile))
		}
	}
}

// startE2EServer starts the server under test: Tabula on the named
// database, or kube-apiserver and etcd. It returns an admin kubeconfig and
// the directory holding the CA and service-account keys.
func startE2EServer(b *testing.B, server, dbName, dir string) (kubeconfig, pki string) {
	switch server {
	case "tabula":
		i := slices.IndexFunc(backends, func(be backend) bool { return be.name == dbName })
		if i < 0 {
			b.Fatalf("E2E_DB=%q: want sqlite, postgres or mariadb", dbName)
		}
		p, err := startTabula(b, serveOptions{DB: backends[i].database(b, dir), DataDir: filepath.Join(dir, "tabula")})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Stop(stopDeadline) })
		return p.Kubeconfig, filepath.Join(p.Options.DataDir, "pki")
	case "kube":
		kube, err := kubeBinaries()
		if err != nil {
			b.Fatal(err)
		}
		return startKubeForE2E(b, kube, dir)
	}
	b.Fatalf("E2E_SERVER=%q: want tabula or kube", server)
	return "", ""
}

// e2eSpec is one spec of ginkgo's JSON report, as far as the run needs.
type e2eSpec struct {
	Name    string
	State   string
	Failure string // its first line
	RunTime time.Duration
}

// readGinkgoReport reads the spec reports of a ginkgo --json-report (the
// fields of ginkgo's types.Report the summary uses).
func readGinkgoReport(path string) ([]e2eSpec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var reports []struct {
		SpecReports []struct {
			ContainerHierarchyTexts []string
			LeafNodeType            string
			LeafNodeText            string
			State                   string
			RunTime                 time.Duration
			Failure                 struct {
				Message  string
				Location struct {
					FileName   string
					LineNumber int
				}
			}
		}
	}
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, err
	}
	var specs []e2eSpec
	for _, r := range reports {
		for _, s := range r.SpecReports {
			name := strings.Join(append(slices.Clone(s.ContainerHierarchyTexts), s.LeafNodeText), " ")
			if s.LeafNodeType != "It" {
				// A suite node's failure fails every spec: show it.
				if s.State == "passed" || s.State == "skipped" {
					continue
				}
				name = "[" + s.LeafNodeType + "]"
			}
			first, _, _ := strings.Cut(strings.TrimSpace(s.Failure.Message), "\n")
			if first != "" && s.Failure.Location.FileName != "" {
				first += fmt.Sprintf(" (%s:%d)", filepath.Base(s.Failure.Location.FileName), s.Failure.Location.LineNumber)
			}
			specs = append(specs, e2eSpec{Name: name, State: s.State, Failure: first, RunTime: s.RunTime})
		}
	}
	sort.Slice(specs, func(i, j int) bool { return specs[i].Name < specs[j].Name })
	return specs, nil
}

func countState(specs []e2eSpec, state string) int {
	n := 0
	for _, s := range specs {
		if s.State == state {
			n++
		}
	}
	return n
}

// summariseE2E is the run's outcome: the counts, then every spec that ran
// with its state, failures with their first line.
func summariseE2E(specs []e2eSpec, took time.Duration) string {
	var sb strings.Builder
	states := map[string]int{}
	for _, s := range specs {
		states[s.State]++
	}
	var keys []string
	for k := range states {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	fmt.Fprintf(&sb, "e2e: %d specs ran in %s:", len(specs)-states["skipped"], took.Round(time.Second))
	for _, k := range keys {
		if k != "skipped" {
			fmt.Fprintf(&sb, " %s %d", k, states[k])
		}
	}
	fmt.Fprintf(&sb, " (%d skipped: outside the focus, or needing nodes)", states["skipped"])
	sb.WriteString("\n")
	for _, s := range specs {
		if s.State == "skipped" {
			continue
		}
		fmt.Fprintf(&sb, "%-8s %5.0fs %s\n", s.State, s.RunTime.Seconds(), s.Name)
		if s.Failure != "" && s.State != "passed" {
			fmt.Fprintf(&sb, "         %s\n", s.Failure)
		}
	}
	return sb.String()
}

// checkExpectedE2E compares the run with testdata/e2e/expected-pass.txt:
// a listed spec that did not pass is a regression; one that passed and is
// not listed is reported, to be added. With E2E_UPDATE=1 the list takes
// the run's outcome instead, for the specs that ran (a focused run leaves
// the others listed as they were).
func checkExpectedE2E(b *testing.B, specs []e2eSpec, path string) {
	expected, err := readSpecList(path)
	if err != nil && !(os.IsNotExist(err) && os.Getenv("E2E_UPDATE") == "1") {
		b.Fatal(err)
	}
	ran := map[string]e2eSpec{}
	for _, s := range specs {
		if s.State != "skipped" {
			ran[s.Name] = s
		}
	}
	if os.Getenv("E2E_UPDATE") == "1" {
		keep := map[string]bool{}
		for _, name := range expected {
			if _, ok := ran[name]; !ok {
				keep[name] = true
			}
		}
		for _, s := range specs {
			if s.State == "passed" {
				keep[s.Name] = true
			}
		}
		names := make([]string, 0, len(keep))
		for name := range keep {
			names = append(names, name)
		}
		sort.Strings(names)
		out := "# The e2e specs that pass on Tabula with no nodes (make e2e), one per line;\n" +
			"# E2E_UPDATE=1 make e2e rewrites the lines of the specs a run ran.\n" + strings.Join(names, "\n") + "\n"
		if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
			b.Fatal(err)
		}
		return
	}
	for _, name := range expected {
		s, ok := ran[name]
		switch {
		case !ok && os.Getenv("E2E_FOCUS") == "":
			// A focused run leaves the others out on purpose.
			b.Errorf("expected to pass, did not run: %s", name)
		case !ok:
		case s.State != "passed":
			b.Errorf("expected to pass, %s: %s\n    %s", s.State, name, s.Failure)
		}
	}
	for _, s := range specs {
		if s.State == "passed" && !slices.Contains(expected, s.Name) {
			b.Logf("passed, not yet in %s: %s", path, s.Name)
		}
	}
}

// readNeedsNodes reads testdata/e2e/needs-nodes.txt: the specs that
// cannot pass without nodes (they fail on kube-apiserver + etcd +
// kube-controller-manager too), each with its reason after a tab.
func readNeedsNodes() (map[string]string, error) {
	lines, err := readSpecList(filepath.Join("testdata", "e2e", "needs-nodes.txt"))
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, l := range lines {
		name, reason, _ := strings.Cut(l, "\t")
		out[name] = reason
	}
	return out, nil
}

// readSpecList reads one spec name per line, skipping # comments.
func readSpecList(path string) ([]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line != "" && !strings.HasPrefix(line, "#") {
			names = append(names, line)
		}
	}
	return names, sc.Err()
}

// repoBin is the repository's bin/, where make puts what runs leave.
func repoBin(b *testing.B) string {
	dir, err := filepath.Abs(filepath.Join("..", "bin"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

func envOr(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// startKubeForE2E runs etcd and kube-apiserver as kubeadm configures them
// (Node,RBAC, the front proxy left out), for the reference run, and
// returns an admin kubeconfig and the PKI directory kcm signs with.
func startKubeForE2E(b *testing.B, bins, dir string) (kubeconfig, pki string) {
	srv := startKubeWith(b, bins, dir, false, "Node,RBAC")
	kubeconfig = filepath.Join(dir, "admin.kubeconfig")
	writeInsecureKubeconfig(b, kubeconfig, srv.config.Host, srv.config.CertData, srv.config.KeyData)
	return kubeconfig, srv.pki
}
