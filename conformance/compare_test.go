package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// The side-by-side comparison (`make bench-compare`): Tabula and the two
// servers people run instead — kube-apiserver on etcd, and kube-apiserver
// on kine with SQLite, as k3s runs it — each started fresh in turn on
// loopback and measured by the same tabula-bench run, a separate process
// on the same machine. The upstream binaries come prebuilt from
// COMPARE_BIN (the make target builds them once from the module proxy).
//
// Settings, from the environment:
//   - COMPARE_BIN: the directory with kube-apiserver, kube-controller-manager,
//     etcd, kine and tabula-bench;
//   - COMPARE_COUNT: runs per server (3); the table shows medians;
//   - COMPARE_SERVERS: which of tabula-sqlite, tabula-postgres, kube-etcd,
//     kube-kine, tabula-sqlite-noapf, tabula-sqlite-keeppages,
//     kube-etcd-noapf (default: tabula-sqlite,kube-etcd,kube-kine);
//   - COMPARE_ARGS: tabula-bench's workload flags;
//   - COMPARE_OUT: where the Markdown table is written;
//   - COMPARE_RAW: a directory for each run's tabula-bench output;
//   - COMPARE_PIN: SERVER:LOAD, two CPU lists (e.g. 0:1): every process of
//     the server under test (its storage and kube-controller-manager too)
//     runs on SERVER's CPUs once ready, tabula-bench on LOAD's. The
//     default shares every CPU among all of them, so a server's figures
//     also carry the load generator's share of the machine.
const compareDefaultArgs = "-workloads create,get,list,watch,rewatch -clients 1,32 -objects 10000 -watchers 100,1000 -duration 10s"

// compareIdle is how long a fresh server is left alone before its idle
// memory and CPU are read: long enough for start-up work (kube's
// post-start hooks, Tabula's controllers' first sync) to settle.
// compareIdleCPU is the window its idle CPU is then measured over.
const (
	compareIdle    = 10 * time.Second
	compareIdleCPU = 10 * time.Second
)

// figure is one row of the table: how to read it from a run, which way
// is better, and the goal for it, if any.
type figure struct {
	name   string
	unit   string
	higher bool // more is better (rates); otherwise less is (times, memory)
	// goal is the least ratio over each upstream server Tabula must reach
	// (ratios are always "how many times better Tabula is"); 0 for none.
	goal float64
	// abs, when set, is a bound on Tabula's own value (goal text says it);
	// below says the value must be under it, not at it.
	abs      float64
	below    bool
	goalText string
}

var compareFigures = []figure{
	{name: "ready", unit: "ms", abs: 300, goalText: "≤ 300 ms"},
	{name: "idle CPU", unit: "%", abs: 1, below: true, goalText: "< 1 %"},
	{name: "RSS idle, server", unit: "MiB", goal: 4, goalText: "≤ ¼ of kube-apiserver's"},
	{name: "RSS idle, with storage", unit: "MiB"},
	{name: "anonymous memory idle, server", unit: "MiB", abs: 25, goalText: "≤ 25 MiB"},
	{name: "create 1KiB clients=32", unit: "/s", higher: true, goal: 5, goalText: "≥ 5×"},
	{name: "create 1KiB clients=1", unit: "/s", higher: true, goal: 3, goalText: "≥ 3×"},
	{name: "create 10KiB clients=32", unit: "/s", higher: true, goal: 3, goalText: "≥ 3×"},
	{name: "create 10KiB clients=1", unit: "/s", higher: true, goal: 3, goalText: "≥ 3×"},
	// The CPU time the server's processes (the server and its storage;
	// kube-controller-manager's is not counted, as for the idle figures,
	// while Tabula's controllers run in its process) spent per create.
	{name: "create 1KiB clients=32, server CPU", unit: "µs/op"},
	{name: "create 1KiB clients=1, server CPU", unit: "µs/op"},
	{name: "create 10KiB clients=32, server CPU", unit: "µs/op"},
	{name: "get clients=32", unit: "/s", higher: true, goal: 3, goalText: "≥ 3×"},
	{name: "get clients=32 p99", unit: "ms", abs: 5, goalText: "≤ 5 ms"},
	{name: "get clients=1", unit: "/s", higher: true},
	{name: "list 10000 whole", unit: "ms", goal: 2, goalText: "≤ ½ kube's"},
	{name: "list 10000 whole, JSON", unit: "ms", goal: 2, goalText: "≤ ½ kube's"},
	{name: "list 10000 whole, Table", unit: "ms", goal: 2, goalText: "≤ ½ kube's"},
	{name: "list 10000 in pages of 500", unit: "ms", goal: 1, goalText: "≤ kube's"},
	{name: "list 10000 selective 1%", unit: "ms", goal: 1, goalText: "≤ kube's"},
	// How far the server's anonymous memory rises during a whole list,
	// over the size of the (uncompressed) answer: the first list of each
	// form after the objects were created, then the median of four more.
	{name: "list 10000 whole, memory, first", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "list 10000 whole, memory, again", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "list 10000 whole, JSON, memory, first", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "list 10000 whole, JSON, memory, again", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "list 10000 whole, Table, memory, first", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "list 10000 whole, Table, memory, again", unit: "× answer", abs: 2, goalText: "≤ 2× the answer"},
	{name: "watch delivery watchers=100 p50", unit: "ms"},
	{name: "watch delivery watchers=100 p99", unit: "ms", goal: 1, abs: 10, goalText: "≤ kube's, ≤ 10 ms"},
	{name: "watch delivery watchers=1000 p50", unit: "ms"},
	{name: "watch delivery watchers=1000 p99", unit: "ms", goal: 1, abs: 50, goalText: "≤ kube's, ≤ 50 ms"},
	// An informer's watch after its list: opened from a revision ten
	// creates back, until their events arrive.
	{name: "rewatch 10 events clients=1", unit: "/s", higher: true},
	{name: "rewatch 10 events clients=32", unit: "/s", higher: true},
	{name: "RSS peak, server", unit: "MiB"},
	{name: "RSS peak, with storage", unit: "MiB"},
}

// compareRun is one server's figures from one run, by figure name.
type compareRun map[string]float64

type compareServerKind struct {
	name  string
	title string
	short string // in the ratio columns' headers
	start func(b *testing.B, bins, dir string) densityServer
}

var compareServers = []compareServerKind{
	{"tabula-sqlite", "Tabula (SQLite)", "Tabula", func(b *testing.B, _, dir string) densityServer {
		return startTabulaServer(b, "sqlite://"+filepath.Join(dir, "tabula.db"), dir)
	}},
	{"tabula-postgres", "Tabula (PostgreSQL)", "Tabula (PostgreSQL)", func(b *testing.B, _, dir string) densityServer {
		db := dbtest.Postgres(b)
		srv := startTabulaServer(b, db, dir)
		srv.storage = postgresProcesses(b, db)
		return srv
	}},
	{"kube-etcd", "kube-apiserver + etcd", "kube + etcd", func(b *testing.B, bins, dir string) densityServer {
		return startKube(b, bins, dir, false)
	}},
	// The two servers with API Priority and Fairness off (their
	// max-in-flight limits instead), for what it costs each.
	{"tabula-sqlite-noapf", "Tabula (SQLite), no APF", "Tabula, no APF", func(b *testing.B, _, dir string) densityServer {
		return startTabulaServer(b, "sqlite://"+filepath.Join(dir, "tabula.db"), dir, "--enable-priority-and-fairness=false")
	}},
	// Tabula keeping the binary's start-up pages resident, for what
	// releasing them saves and costs.
	{"tabula-sqlite-keeppages", "Tabula (SQLite), start-up pages kept", "Tabula, pages kept", func(b *testing.B, _, dir string) densityServer {
		return startTabulaServer(b, "sqlite://"+filepath.Join(dir, "tabula.db"), dir, "--release-startup-pages=false")
	}},
	{"kube-etcd-noapf", "kube-apiserver + etcd, no APF", "kube + etcd, no APF", func(b *testing.B, bins, dir string) densityServer {
		return startKubeWith(b, bins, dir, false, "AlwaysAllow", "--enable-priority-and-fairness=false")
	}},
	{"kube-kine", "kube-apiserver + kine (SQLite)", "kube + kine", func(b *testing.B, bins, dir string) densityServer {
		// kine with no endpoint keeps its SQLite file in ./db, with the
		// connection settings k3s uses by default.
		port := freePortArg(b)
		kine := startMember(b, dir, "kine", filepath.Join(bins, "kine"), nil, "--listen-address", "127.0.0.1:"+port)
		return startAPIServer(b, bins, dir, "http://127.0.0.1:"+port, kine, "AlwaysAllow")
	}},
}

func BenchmarkCompare(b *testing.B) {
	bins := os.Getenv("COMPARE_BIN")
	if bins == "" {
		b.Fatal("COMPARE_BIN is not set: run `make bench-compare`, which builds the upstream servers it compares")
	}
	count := 3
	if v := os.Getenv("COMPARE_COUNT"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			b.Fatalf("COMPARE_COUNT=%q: want a positive number", v)
		}
		count = n
	}
	var servers []compareServerKind
	for name := range strings.SplitSeq(orDefault(os.Getenv("COMPARE_SERVERS"), "tabula-sqlite,kube-etcd,kube-kine"), ",") {
		i := slices.IndexFunc(compareServers, func(s compareServerKind) bool { return s.name == strings.TrimSpace(name) })
		if i < 0 {
			b.Fatalf("COMPARE_SERVERS: unknown server %q", name)
		}
		servers = append(servers, compareServers[i])
	}
	args := strings.Fields(orDefault(os.Getenv("COMPARE_ARGS"), compareDefaultArgs))
	pins, err := parsePinning(os.Getenv("COMPARE_PIN"))
	if err != nil {
		b.Fatalf("COMPARE_PIN: %v", err)
	}
	// Build Tabula before any clock starts.
	if _, err := tabulaBinary(); err != nil {
		b.Fatal(err)
	}
	runs := map[string][]compareRun{}
	// Servers take turns run by run, so a noisy minute of the machine
	// falls on every server alike rather than on one.
	for i := range count {
		for _, s := range servers {
			b.Run(fmt.Sprintf("%s/run%d", s.name, i+1), func(b *testing.B) {
				for range b.N {
					r := compareOnce(b, bins, s, i+1, args, pins)
					runs[s.name] = append(runs[s.name], r)
				}
			})
		}
	}
	table := compareTable(servers, runs, count, pins)
	fmt.Println(table)
	if out := os.Getenv("COMPARE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(table), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func orDefault(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// compareOnce starts one server fresh, reads its idle figures, runs
// tabula-bench against it and reads the peaks.
func compareOnce(b *testing.B, bins string, s compareServerKind, run int, args []string, pins *pinning) compareRun {
	dir := b.TempDir()
	r := compareRun{}
	start := time.Now()
	srv := s.start(b, bins, dir)
	r["ready"] = ms(time.Since(start))
	if strings.HasPrefix(s.name, "kube-") {
		// kube-apiserver serves no namespace deletion, service accounts
		// or root CA ConfigMaps on its own; Tabula does all three in
		// process. kcm's own memory and CPU are not counted.
		kc := filepath.Join(dir, "admin.kubeconfig")
		writeInsecureKubeconfig(b, kc, srv.config.Host, srv.config.CertData, srv.config.KeyData)
		kcm := startServing(b, dir, "kube-controller-manager", filepath.Join(bins, "kube-controller-manager"), nil,
			"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
			"--bind-address", "127.0.0.1", "--use-service-account-credentials=false",
			"--service-account-private-key-file", filepath.Join(srv.pki, "sa.key"), "--root-ca-file", filepath.Join(srv.pki, "ca.crt"),
			"--kube-api-qps", "500", "--kube-api-burst", "1000")
		pins.server(b, kcm.cmd.Process.Pid)
	}
	pins.server(b, srv.server)
	for _, pid := range srv.storage() {
		pins.server(b, pid)
	}
	// Left alone: the idle figures, once start-up work has settled (it
	// used to be counted in the window).
	leaveAlone(b, srv, compareIdle)
	before := cpuTimes(srv)
	t0 := time.Now()
	leaveAlone(b, srv, compareIdleCPU)
	after := cpuTimes(srv)
	var busy time.Duration
	for pid, t := range after {
		busy += t - before[pid]
	}
	r["idle CPU"] = 100 * busy.Seconds() / time.Since(t0).Seconds()
	r["RSS idle, server"] = mibOf(pidPSS(srv.server))
	total := pidPSS(srv.server)
	for _, pid := range srv.storage() {
		total += pidPSS(pid)
	}
	r["RSS idle, with storage"] = mibOf(total)
	r["anonymous memory idle, server"] = mibOf(rssAnon(srv.server))

	kc := filepath.Join(dir, "bench.kubeconfig")
	writeInsecureKubeconfig(b, kc, srv.config.Host, srv.config.CertData, srv.config.KeyData)
	out := filepath.Join(dir, "bench.json")
	mem := sampleMemory(srv)
	// -pid: the server's memory is followed during each whole list.
	// -cpu-pids: the CPU per operation is the server's and its storage's.
	cpuPIDs := []string{strconv.Itoa(srv.server)}
	for _, pid := range srv.storage() {
		cpuPIDs = append(cpuPIDs, strconv.Itoa(pid))
	}
	cmd := exec.Command(filepath.Join(bins, "tabula-bench"), append([]string{"-kubeconfig", kc, "-json", out, "-pid", strconv.Itoa(srv.server),
		"-cpu-pids", strings.Join(cpuPIDs, ",")}, args...)...)
	cmd.Dir = dir
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	err := cmd.Start()
	if err == nil {
		pins.load(b, cmd.Process.Pid)
		err = cmd.Wait()
	}
	text := output.Bytes()
	peakServer, peakTotal := mem.stop()
	if dir := os.Getenv("COMPARE_RAW"); dir != "" {
		// tabula-bench's own table, every line of it, for the notes.
		_ = os.MkdirAll(dir, 0o755)
		_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-run%d.txt", s.name, run)), text, 0o644)
	}
	if err != nil {
		b.Fatalf("tabula-bench against %s: %v", s.name, err)
	}
	r["RSS peak, server"] = mibOf(peakServer)
	r["RSS peak, with storage"] = mibOf(peakTotal)
	for _, res := range readBenchJSON(b, out) {
		switch {
		case strings.HasPrefix(res.Name, "rewatch "):
			r[res.Name] = res.PerSecond
		case strings.HasPrefix(res.Name, "create ") || strings.HasPrefix(res.Name, "get "):
			r[res.Name] = res.PerSecond
			r[res.Name+" p99"] = ms(time.Duration(res.P99))
			if res.CPUPerOp > 0 {
				r[res.Name+", server CPU"] = float64(res.CPUPerOp) / float64(time.Microsecond)
			}
		case strings.Contains(res.Name, ", memory, "):
			r[res.Name] = res.Ratio
		case strings.HasPrefix(res.Name, "list "):
			r[res.Name] = ms(time.Duration(res.P50))
		case strings.HasPrefix(res.Name, "watch delivery"):
			r[res.Name+" p50"] = ms(time.Duration(res.P50))
			r[res.Name+" p99"] = ms(time.Duration(res.P99))
		}
	}
	return r
}

// benchResult is one line of tabula-bench's -json output.
type benchResult struct {
	Name      string  `json:"name"`
	PerSecond float64 `json:"perSecond"`
	P50       int64   `json:"p50ns"`
	P99       int64   `json:"p99ns"`
	Ratio     float64 `json:"ratio"`
	CPUPerOp  int64   `json:"cpuPerOpNs"`
}

func readBenchJSON(b *testing.B, path string) []benchResult {
	raw, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	var results []benchResult
	if err := json.Unmarshal(raw, &results); err != nil {
		b.Fatal(err)
	}
	return results
}

// leaveAlone lets the server's processes run untouched for d, a
// measurement window, checking twice a second that they still run: one
// that died would read as perfectly idle.
func leaveAlone(b *testing.B, srv densityServer, d time.Duration) {
	b.Helper()
	end := time.NewTimer(d)
	defer end.Stop()
	check := time.NewTicker(500 * time.Millisecond)
	defer check.Stop()
	for {
		select {
		case <-end.C:
			return
		case <-check.C:
			for _, pid := range append([]int{srv.server}, srv.storage()...) {
				if !processAlive(pid) {
					b.Fatalf("process %d exited while the server was left alone", pid)
				}
			}
		}
	}
}

// processAlive says whether pid is a live process (not gone, not a zombie).
func processAlive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// rssAnon is a process's resident anonymous memory (heap, stacks: what
// is not file-backed), in bytes.
func rssAnon(pid int) int64 { return procKiB(fmt.Sprintf("/proc/%d/status", pid), "RssAnon:") << 10 }

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
func mibOf(n int64) float64      { return float64(n) / (1 << 20) }

func median(v []float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	s := slices.Sorted(slices.Values(v))
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// compareTable lays the medians out as a Markdown table: one column per
// server, then Tabula's ratio over each upstream server (always "times
// better": above 1 Tabula leads) and whether the goal holds.
func compareTable(servers []compareServerKind, runs map[string][]compareRun, count int, pins *pinning) string {
	var tabula []compareServerKind
	var others []compareServerKind
	for _, s := range servers {
		if strings.HasPrefix(s.name, "tabula-") {
			tabula = append(tabula, s)
		} else {
			others = append(others, s)
		}
	}
	med := func(server, fig string) float64 {
		var v []float64
		for _, r := range runs[server] {
			if x, ok := r[fig]; ok {
				v = append(v, x)
			}
		}
		return median(v)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "Medians of %d runs per server, %s%s.\n\n| figure |", count, time.Now().UTC().Format("2006-01-02"), pins.describe())
	for _, s := range servers {
		fmt.Fprintf(&sb, " %s |", s.title)
	}
	// A server with API Priority and Fairness off is compared only with
	// its like, and the goals are judged on the servers as they run.
	noAPF := func(s compareServerKind) bool { return strings.HasSuffix(s.name, "-noapf") }
	columns := 0
	for _, t := range tabula {
		for _, o := range others {
			if noAPF(t) == noAPF(o) {
				fmt.Fprintf(&sb, " %s vs %s |", t.short, o.short)
				columns++
			}
		}
	}
	sb.WriteString(" goal |\n|---|")
	for range len(servers) + columns + 1 {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	for _, f := range compareFigures {
		fmt.Fprintf(&sb, "| %s (%s) |", f.name, f.unit)
		for _, s := range servers {
			fmt.Fprintf(&sb, " %s |", formatFigure(med(s.name, f.name)))
		}
		met := f.goal > 0 || f.abs > 0
		for _, t := range tabula {
			tv := med(t.name, f.name)
			judged := !noAPF(t)
			if judged && f.abs > 0 && (!(tv <= f.abs) || f.below && tv == f.abs) {
				met = false
			}
			for _, o := range others {
				if noAPF(t) != noAPF(o) {
					continue
				}
				ratio := med(o.name, f.name) / tv
				if f.higher {
					ratio = 1 / ratio
				}
				if judged && f.goal > 0 && !(ratio >= f.goal) {
					met = false
				}
				fmt.Fprintf(&sb, " %s |", formatRatio(ratio))
			}
		}
		switch {
		case f.goalText == "":
			sb.WriteString(" |\n")
		case met:
			fmt.Fprintf(&sb, " %s: met |\n", f.goalText)
		default:
			fmt.Fprintf(&sb, " %s: **not met** |\n", f.goalText)
		}
	}
	return sb.String()
}

func formatFigure(v float64) string {
	switch {
	case math.IsNaN(v):
		return "–"
	case v >= 100:
		return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
	case v >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

func formatRatio(r float64) string {
	if math.IsNaN(r) || math.IsInf(r, 0) {
		return "–"
	}
	return strconv.FormatFloat(r, 'f', 2, 64) + "×"
}

// TestProcessAlive: a running process is alive; once it exits it is not,
// whether or not it has been reaped yet (a zombie).
func TestProcessAlive(t *testing.T) {
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if !processAlive(pid) {
		t.Fatal("a running process reads as gone")
	}
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	// Not reaped yet, it becomes a zombie as soon as the kill lands.
	deadline := time.After(10 * time.Second)
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for processAlive(pid) {
		select {
		case <-deadline:
			t.Fatal("a killed, unreaped process still reads as alive")
		case <-poll.C:
		}
	}
	_ = cmd.Wait()
	if processAlive(pid) {
		t.Fatal("a reaped process reads as alive")
	}
}
