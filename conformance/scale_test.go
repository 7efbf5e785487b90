package conformance

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// The scale run (`make bench-scale`): SCALE_OBJECTS (1,000,000)
// ConfigMaps of 1 KiB across 1,000 namespaces, loaded through the API,
// then a tenth of them updated (history for compaction), on each of
// SCALE_SERVERS (tabula-sqlite, tabula-postgres, kube-etcd), fresh: the
// load's rate, a page of 500 across all namespaces, 1% selectors (one
// namespace, and cluster-wide), gets, a watch from a recent
// resourceVersion, the memory and database size, the time to start again
// on the data, and Tabula's compaction time. Each figure is printed with
// the same figure at 10,000 objects (SCALE_BASELINE, a fresh server
// loaded the same way), so what grows with the total is plain.
const scaleNamespaces = 1000

type scaleServer struct {
	name    string
	srv     densityServer
	restart func(b *testing.B) (time.Duration, densityServer)
	dbSize  func(b *testing.B) int64
	// metrics reads the server's /metrics (nil: not read).
	metrics func(b *testing.B) []byte
}

func BenchmarkScale(b *testing.B) {
	objects := 1_000_000
	if v := os.Getenv("SCALE_OBJECTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < scaleNamespaces {
			b.Fatalf("SCALE_OBJECTS=%q: want a number of at least %d", v, scaleNamespaces)
		}
		objects = n
	}
	baseline := 10_000
	if v := os.Getenv("SCALE_BASELINE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			b.Fatalf("SCALE_BASELINE=%q", v)
		}
		baseline = n
	}
	names := strings.Split(orDefault(os.Getenv("SCALE_SERVERS"), "tabula-sqlite,tabula-postgres,kube-etcd"), ",")
	bins := os.Getenv("COMPARE_BIN")
	if slices.Contains(names, "kube-etcd") && bins == "" {
		b.Fatal("COMPARE_BIN is not set: run `make bench-scale`, which builds kube-apiserver and etcd")
	}
	if _, err := tabulaBinary(); err != nil {
		b.Fatal(err)
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%s: ConfigMaps of 1 KiB across %d namespaces, loaded by 64 clients (Protobuf), then a tenth updated; in brackets the same figure at %d objects.\n\n",
		time.Now().UTC().Format("2006-01-02"), scaleNamespaces, baseline)
	fmt.Fprintf(&sb, "| figure | %s |\n|---|", strings.Join(names, " | "))
	for range names {
		sb.WriteString("---|")
	}
	sb.WriteString("\n")
	results := map[string]map[string]string{}
	var order []string
	for _, name := range names {
		name = strings.TrimSpace(name)
		// Each size in its own sub-benchmark, so the first server is
		// stopped before the second starts.
		var small, big scaleFigures
		b.Run(fmt.Sprintf("%s/objects=%d", name, baseline), func(b *testing.B) {
			for range b.N {
				small = scaleOnce(b, bins, name, baseline)
			}
		})
		b.Run(fmt.Sprintf("%s/objects=%d", name, objects), func(b *testing.B) {
			for range b.N {
				big = scaleOnce(b, bins, name, objects)
			}
		})
		results[name] = map[string]string{}
		for _, f := range big.order {
			if !slices.Contains(order, f) {
				order = append(order, f)
			}
			v := big.v[f]
			if s, ok := small.v[f]; ok {
				v += " (" + s + ")"
			}
			results[name][f] = v
		}
	}
	for _, f := range order {
		fmt.Fprintf(&sb, "| %s |", f)
		for _, name := range names {
			fmt.Fprintf(&sb, " %s |", orDefault(results[strings.TrimSpace(name)][f], "–"))
		}
		sb.WriteString("\n")
	}
	fmt.Println(sb.String())
	if out := os.Getenv("SCALE_OUT"); out != "" {
		if err := os.WriteFile(out, []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

type scaleFigures struct {
	v     map[string]string
	order []string
}

func (f *scaleFigures) set(name, format string, args ...any) {
	if f.v == nil {
		f.v = map[string]string{}
	}
	if _, ok := f.v[name]; !ok {
		f.order = append(f.order, name)
	}
	f.v[name] = fmt.Sprintf(format, args...)
}

func startScaleServer(b *testing.B, bins, name, dir string) scaleServer {
	switch name {
	case "tabula-sqlite", "tabula-postgres":
		db := "sqlite://" + filepath.Join(dir, "tabula.db")
		var storage func() []int
		if name == "tabula-postgres" {
			db = dbtest.Postgres(b)
			storage = postgresProcesses(b, db)
		}
		// Compaction every 10 s of what is older than 30 s, so a run
		// happens within the measurement.
		o := serveOptions{DB: db, DataDir: filepath.Join(dir, "tabula"), Args: []string{"--compaction-window", "30s", "--compaction-interval", "10s"}}
		var p *tabulaProcess
		s := scaleServer{name: name}
		start := func(b *testing.B) densityServer {
			var err error
			p, err = startTabula(b, o)
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = p.Stop(stopDeadline) })
			cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
			if err != nil {
				b.Fatal(err)
			}
			srv := densityServer{config: cfg, server: p.cmd.Process.Pid, storage: func() []int { return nil }}
			if storage != nil {
				srv.storage = storage
			}
			return srv
		}
		s.srv = start(b)
		s.restart = func(b *testing.B) (time.Duration, densityServer) {
			if err := p.Stop(stopDeadline); err != nil {
				b.Fatal(err)
			}
			o.Listen = ""
			began := time.Now()
			srv := start(b)
			return time.Since(began), srv
		}
		s.dbSize = func(b *testing.B) int64 {
			if name == "tabula-sqlite" {
				var n int64
				for _, suffix := range []string{"", "-wal", "-shm"} {
					if fi, err := os.Stat(filepath.Join(dir, "tabula.db") + suffix); err == nil {
						n += fi.Size()
					}
				}
				return n
			}
			pg, err := sql.Open("pgx", db)
			if err != nil {
				b.Fatal(err)
			}
			defer pg.Close()
			var n int64
			if err := pg.QueryRow("SELECT pg_database_size(current_database())").Scan(&n); err != nil {
				b.Fatal(err)
			}
			return n
		}
		s.metrics = func(b *testing.B) []byte {
			cs := scaleClient(b, s.srv.config)
			m, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
			if err != nil {
				b.Fatal(err)
			}
			return m
		}
		return s
	case "kube-etcd":
		client, peer := freePortArg(b), freePortArg(b)
		etcd := startMember(b, dir, "etcd", filepath.Join(bins, "etcd"), nil, "--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
			"--listen-client-urls", "http://127.0.0.1:"+client, "--advertise-client-urls", "http://127.0.0.1:"+client,
			"--listen-peer-urls", "http://127.0.0.1:"+peer, "--initial-advertise-peer-urls", "http://127.0.0.1:"+peer,
			"--initial-cluster", "default=http://127.0.0.1:"+peer,
			// Room for a million objects and their history (etcd's 2 GiB
			// default would be too small).
			"--quota-backend-bytes", strconv.Itoa(8<<30))
		s := scaleServer{name: name}
		s.srv = startAPIServer(b, bins, dir, "http://127.0.0.1:"+client, etcd, "AlwaysAllow")
		s.restart = func(b *testing.B) (time.Duration, densityServer) {
			_ = syscall.Kill(s.srv.server, syscall.SIGTERM)
			select {
			case <-s.srv.exited:
			case <-time.After(stopDeadline):
				b.Fatalf("kube-apiserver did not exit within %v of SIGTERM", stopDeadline)
			}
			began := time.Now()
			srv := startAPIServer(b, bins, dir, "http://127.0.0.1:"+client, etcd, "AlwaysAllow")
			return time.Since(began), srv
		}
		s.dbSize = func(b *testing.B) int64 {
			fi, err := os.Stat(filepath.Join(dir, "etcd", "member", "snap", "db"))
			if err != nil {
				b.Fatal(err)
			}
			return fi.Size()
		}
		return s
	}
	b.Fatalf("SCALE_SERVERS: unknown server %q", name)
	return scaleServer{}
}

func scaleClient(b *testing.B, cfg *rest.Config) *kubernetes.Clientset {
	c := rest.CopyConfig(cfg)
	c.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	c.ContentType = "application/vnd.kubernetes.protobuf"
	c.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	c.Timeout = 5 * time.Minute
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		b.Fatal(err)
	}
	return cs
}

// scaleParallel runs fn(i) for i in [0, n) from workers goroutines.
func scaleParallel(b *testing.B, n, workers int, fn func(i int) error) time.Duration {
	var next atomic.Int64
	var wg sync.WaitGroup
	var first atomic.Value
	began := time.Now()
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= n || first.Load() != nil {
					return
				}
				if err := fn(i); err != nil {
					first.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := first.Load().(error); ok {
		b.Fatal(err)
	}
	return time.Since(began)
}

func scaleNS(i int) string   { return fmt.Sprintf("scale-%d", i%scaleNamespaces) }
func scaleName(i int) string { return fmt.Sprintf("cm-%d", i) }

func scaleObject(i int, v string) *corev1.ConfigMap {
	labels := map[string]string{"group": strconv.Itoa(i % 7)}
	if i%100 == 0 {
		labels["selected"] = "yes"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: scaleName(i), Namespace: scaleNS(i), Labels: labels},
		Data: map[string]string{"v": strings.Repeat(v, 1024)}}
}

// timed runs fn n times and returns the median.
func timed(b *testing.B, n int, fn func() error) time.Duration {
	d := make([]float64, n)
	for i := range n {
		t := time.Now()
		if err := fn(); err != nil {
			b.Fatal(err)
		}
		d[i] = float64(time.Since(t))
	}
	return time.Duration(median(d))
}

func scaleOnce(b *testing.B, bins, name string, objects int) scaleFigures {
	var f scaleFigures
	dir := b.TempDir()
	began := time.Now()
	s := startScaleServer(b, bins, name, dir)
	f.set("ready, empty (ms)", "%.0f", ms(time.Since(began)))
	cs := scaleClient(b, s.srv.config)
	ctx := context.Background()
	scaleParallel(b, scaleNamespaces, 16, func(i int) error {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: scaleNS(i)}}, metav1.CreateOptions{})
		return err
	})
	load := scaleParallel(b, objects, 64, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(scaleNS(i)).Create(ctx, scaleObject(i, "x"), metav1.CreateOptions{})
		return err
	})
	f.set("load (s)", "%.0f", load.Seconds())
	f.set("load (objects/s)", "%.0f", float64(objects)/load.Seconds())
	updates := objects / 10
	upd := scaleParallel(b, updates, 64, func(i int) error {
		_, err := cs.CoreV1().ConfigMaps(scaleNS(i)).Update(ctx, scaleObject(i, "y"), metav1.UpdateOptions{})
		return err
	})
	f.set("update a tenth (objects/s)", "%.0f", float64(updates)/upd.Seconds())

	measure := func(f *scaleFigures, cs *kubernetes.Clientset, suffix string) {
		f.set("page of 500, all namespaces"+suffix+" (ms)", "%.1f", ms(timed(b, 10, func() error {
			_, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{Limit: 500})
			return err
		})))
		f.set("1% selector, one namespace"+suffix+" (ms)", "%.2f", ms(timed(b, 20, func() error {
			_, err := cs.CoreV1().ConfigMaps(scaleNS(rand.IntN(scaleNamespaces))).List(ctx, metav1.ListOptions{LabelSelector: "selected=yes"})
			return err
		})))
		f.set("1% selector, all namespaces"+suffix+" (ms)", "%.0f", ms(timed(b, 3, func() error {
			_, err := cs.CoreV1().ConfigMaps("").List(ctx, metav1.ListOptions{LabelSelector: "selected=yes"})
			return err
		})))
		f.set("get"+suffix+" (ms)", "%.2f", ms(timed(b, 200, func() error {
			i := rand.IntN(objects)
			_, err := cs.CoreV1().ConfigMaps(scaleNS(i)).Get(ctx, scaleName(i), metav1.GetOptions{})
			return err
		})))
	}
	measure(&f, cs, "")

	// A watch from a recent resourceVersion: 100 writes after it, then
	// the time from opening the watch to the 100th event. Single tries
	// on this machine range over ten times (1.5–16 ms on one server):
	// the median of fifteen.
	var watchTimes []float64
	for try := range 15 {
		ns := scaleNS(rand.IntN(scaleNamespaces))
		l, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			b.Fatal(err)
		}
		for i := range 100 {
			cm := scaleObject(i, "z")
			cm.Name, cm.Namespace = fmt.Sprintf("watched-%d-%d", try, i), ns
			if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
		}
		t := time.Now()
		w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
		if err != nil {
			b.Fatal(err)
		}
		got := 0
		for ev := range w.ResultChan() {
			if cm, ok := ev.Object.(*corev1.ConfigMap); ok && strings.HasPrefix(cm.Name, fmt.Sprintf("watched-%d-", try)) {
				if got++; got == 100 {
					break
				}
			}
		}
		w.Stop()
		if got < 100 {
			b.Fatalf("watch from %s: %d of 100 events", l.ResourceVersion, got)
		}
		watchTimes = append(watchTimes, float64(time.Since(t)))
	}
	f.set("watch from a recent resourceVersion, 100 events (ms)", "%.1f", ms(time.Duration(median(watchTimes))))
	updated := time.Now()
	leaveAlone(b, s.srv, 5*time.Second)
	f.set("RSS, server (MiB)", "%.0f", mibOf(pidPSS(s.srv.server)))
	total := pidPSS(s.srv.server)
	for _, pid := range s.srv.storage() {
		total += pidPSS(pid)
	}
	f.set("RSS, with storage (MiB)", "%.0f", mibOf(total))
	f.set("database size (MiB)", "%.0f", mibOf(s.dbSize(b)))
	if s.metrics != nil {
		// Compaction runs every 10 s of what is 30 s old: 45 s after
		// the last write, the updates' history has been compacted.
		if wait := 45*time.Second - time.Since(updated); wait > 0 {
			leaveAlone(b, s.srv, wait)
		}
		sum, count := compactionMetric(s.metrics(b))
		f.set("compaction: runs, mean (ms), total (s)", "%.0f, %.0f, %.1f", count, 1000*sum/max(count, 1), sum)
	}
	d, srv := s.restart(b)
	s.srv = srv
	f.set("ready again on the data (ms)", "%.0f", ms(d))
	leaveAlone(b, srv, 5*time.Second)
	f.set("RSS after restart, server (MiB)", "%.0f", mibOf(pidPSS(srv.server)))
	measure(&f, scaleClient(b, srv.config), ", after restart")
	return f
}

var compactLine = regexp.MustCompile(`(?m)^tabula_sql_query_duration_seconds_(sum|count)\{[^}]*query="compact"[^}]*\} (\S+)$`)

// compactionMetric sums the compaction runs' seconds and counts them.
func compactionMetric(metrics []byte) (sum, count float64) {
	for _, m := range compactLine.FindAllSubmatch(metrics, -1) {
		v, _ := strconv.ParseFloat(string(m[2]), 64)
		if string(m[1]) == "sum" {
			sum += v
		} else {
			count += v
		}
	}
	return sum, count
}
