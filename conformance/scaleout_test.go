package conformance

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// Scale-out on PostgreSQL (`make bench-scaleout`): 1, 2 and 4 Tabula
// replicas on one PostgreSQL database, without and with a hot standby
// they read from, each set fresh, measured by one tabula-bench run that
// spreads its clients and watchers over the replicas (-servers; the watch
// workload writes on the first replica, so most deliveries cross
// replicas). Everything shares this machine's cores: the figures show
// how the work divides, not what more machines would add.
//
// Settings, from the environment:
//   - COMPARE_BIN: the directory with tabula-bench;
//   - SCALEOUT_REPLICAS: replica counts (1,2,4);
//   - SCALEOUT_STANDBY: 0, 1 or both (0,1): without and with the standby;
//   - SCALEOUT_ARGS: tabula-bench's workload flags;
//   - SCALEOUT_OUT: where the Markdown table is written;
//   - COMPARE_RAW: a directory for each run's tabula-bench output.
const scaleOutDefaultArgs = "-workloads create,get,list,watch,rewatch -clients 32 -objects 10000 -watchers 100,1000 -duration 10s"

// scaleOutFigures are the table's rows: tabula-bench result names, and
// whether the figure is a rate (else the p50 or p99 in ms).
var scaleOutFigures = []struct {
	name, result, stat string
}{
	{"create 1KiB, 32 clients (/s)", "create 1KiB clients=32", "rate"},
	{"create 10KiB, 32 clients (/s)", "create 10KiB clients=32", "rate"},
	{"get, 32 clients (/s)", "get clients=32", "rate"},
	{"get, 32 clients, p99 (ms)", "get clients=32", "p99"},
	{"list 10000 whole (ms)", "list 10000 whole", "p50"},
	{"list 10000 selective 1% (ms)", "list 10000 selective 1%", "p50"},
	{"watch delivery, 100 watchers, p99 (ms)", "watch delivery watchers=100", "p99"},
	{"watch delivery, 1000 watchers, p99 (ms)", "watch delivery watchers=1000", "p99"},
	{"rewatch 10 events, 32 clients (/s)", "rewatch 10 events clients=32", "rate"},
}

func BenchmarkScaleOut(b *testing.B) {
	bins := os.Getenv("COMPARE_BIN")
	if bins == "" {
		b.Fatal("COMPARE_BIN is not set: run `make bench-scaleout`")
	}
	replicas, err := intList(orDefault(os.Getenv("SCALEOUT_REPLICAS"), "1,2,4"))
	if err != nil {
		b.Fatalf("SCALEOUT_REPLICAS: %v", err)
	}
	standbys, err := intList(orDefault(os.Getenv("SCALEOUT_STANDBY"), "0,1"))
	if err != nil {
		b.Fatalf("SCALEOUT_STANDBY: %v", err)
	}
	args := strings.Fields(orDefault(os.Getenv("SCALEOUT_ARGS"), scaleOutDefaultArgs))
	if _, err := tabulaBinary(); err != nil {
		b.Fatal(err)
	}
	type column struct {
		title   string
		results map[string][3]float64 // rate, p50, p99
		standby string
	}
	var cols []column
	for _, sb := range standbys {
		for _, n := range replicas {
			name := fmt.Sprintf("replicas=%d/standby=%d", n, sb)
			b.Run(name, func(b *testing.B) {
				for range b.N {
					res, standbyReads := scaleOutOnce(b, bins, n, sb == 1, args, strings.ReplaceAll(name, "/", "-"))
					title := fmt.Sprintf("%d replica", n)
					if n > 1 {
						title += "s"
					}
					if sb == 1 {
						title += " + standby"
					}
					cols = append(cols, column{title, res, standbyReads})
				}
			})
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "One run each, %s; tabula-bench %s.\n\n| figure |", time.Now().UTC().Format("2006-01-02"), strings.Join(args, " "))
	for _, c := range cols {
		fmt.Fprintf(&sb, " %s |", c.title)
	}
	sb.WriteString("\n|---|")
	for range cols {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	for _, f := range scaleOutFigures {
		fmt.Fprintf(&sb, "| %s |", f.name)
		for _, c := range cols {
			v, ok := c.results[f.result]
			if !ok {
				sb.WriteString(" – |")
				continue
			}
			x := map[string]float64{"rate": v[0], "p50": v[1], "p99": v[2]}[f.stat]
			fmt.Fprintf(&sb, " %s |", formatFigure(x))
		}
		sb.WriteString("\n")
	}
	sb.WriteString("| reads the standby answered (served / behind / failed) |")
	for _, c := range cols {
		fmt.Fprintf(&sb, " %s |", orDefault(c.standby, "–"))
	}
	sb.WriteString("\n")
	fmt.Println(sb.String())
	if out := os.Getenv("SCALEOUT_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

func intList(s string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, nil
}

// scaleOutOnce starts n replicas (sharing one identity through --token)
// on a fresh database, with the standby if asked, and runs tabula-bench
// across them; it returns each result's rate, p50 and p99 (ms), and the
// standby's read counts summed over the replicas.
func scaleOutOnce(b *testing.B, bins string, n int, withStandby bool, args []string, label string) (map[string][3]float64, string) {
	db := dbtest.Postgres(b)
	var extra []string
	if withStandby {
		extra = []string{"--db-standby", dbtest.PostgresStandby(b, db)}
	}
	dir := b.TempDir()
	var procs []*tabulaProcess
	var addrs []string
	for i := range n {
		p, err := startTabula(b, serveOptions{DB: db, DataDir: filepath.Join(dir, fmt.Sprintf("replica%d", i)),
			Args: append([]string{"--token", "scale-out"}, extra...)})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { _ = p.Stop(stopDeadline) })
		procs = append(procs, p)
		addrs = append(addrs, p.Addr)
	}
	out := filepath.Join(dir, "bench.json")
	cmd := exec.Command(filepath.Join(bins, "tabula-bench"), append([]string{"-kubeconfig", procs[0].Kubeconfig,
		"-servers", strings.Join(addrs, ","), "-json", out}, args...)...)
	cmd.Dir = dir
	text, err := cmd.CombinedOutput()
	if raw := os.Getenv("COMPARE_RAW"); raw != "" {
		_ = os.MkdirAll(raw, 0o755)
		_ = os.WriteFile(filepath.Join(raw, "scaleout-"+label+".txt"), text, 0o644)
	}
	if err != nil {
		b.Fatalf("tabula-bench: %v\n%s", err, text)
	}
	got := map[string][3]float64{}
	for _, r := range readBenchJSON(b, out) {
		got[r.Name] = [3]float64{r.PerSecond, ms(time.Duration(r.P50)), ms(time.Duration(r.P99))}
	}
	if !withStandby {
		return got, ""
	}
	counts := map[string]float64{}
	line := regexp.MustCompile(`(?m)^tabula_sql_standby_reads_total\{[^}]*result="(\w+)"[^}]*\} (\S+)$`)
	for _, p := range procs {
		cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			b.Fatal(err)
		}
		metrics, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
		if err != nil {
			b.Fatal(err)
		}
		for _, m := range line.FindAllSubmatch(metrics, -1) {
			v, _ := strconv.ParseFloat(string(m[2]), 64)
			counts[string(m[1])] += v
		}
	}
	return got, fmt.Sprintf("%.0f / %.0f / %.0f", counts["served"], counts["behind"], counts["failed"])
}
