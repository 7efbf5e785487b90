package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/flowcontrol"
)

// options are the command's flags.
type options struct {
	kubeconfig string
	workloads  []string
	duration   time.Duration
	clients    []int
	objects    []int
	watchers   []int
	pid        int
	// cpuPIDs are the processes whose CPU time is the server's (the
	// server and, for kube-apiserver, its etcd); by default pid.
	cpuPIDs  []int
	jsonOut  string
	protobuf bool
	watchMem watchMemOptions
	// servers, when set, are the replicas to spread load over (the
	// kubeconfig's credentials on each address).
	servers []string
}

func parseInts(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		n, err := strconv.Atoi(f)
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("bad count %q", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func main() {
	var o options
	var workloads, clients, objects, watchers string
	flag.StringVar(&o.kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the server to measure")
	flag.StringVar(&workloads, "workloads", "create,get,update,list,watch", "comma-separated: create, get, update, list, watch, rewatch, churn, watchmem, encodings")
	flag.DurationVar(&o.duration, "duration", 10*time.Second, "how long each timed workload runs")
	flag.StringVar(&clients, "clients", "1,32", "concurrent clients for create/get/update")
	flag.StringVar(&objects, "objects", "10000", "collection sizes for the list workloads (e.g. 10000,100000)")
	flag.StringVar(&watchers, "watchers", "1,100,1000", "watcher counts for the watch workload")
	flag.IntVar(&o.pid, "pid", 0, "server process id, to sample its RSS (same machine only)")
	flag.StringVar(&o.jsonOut, "json", "", "write results as JSON to this file")
	flag.BoolVar(&o.protobuf, "protobuf", true, "send Protobuf like client-go's typed clients")
	var modes string
	flag.IntVar(&o.watchMem.objects, "watchmem-objects", 60, "watchmem: objects in the watched namespace")
	flag.IntVar(&o.watchMem.size, "watchmem-size", 100_000, "watchmem: bytes of data in each object")
	flag.IntVar(&o.watchMem.watchers, "watchmem-watchers", 500, "watchmem: watches opened at once (reset, noread, initial)")
	flag.IntVar(&o.watchMem.idleWatchers, "watchmem-idle-watchers", 10_000, "watchmem: ordinary watches held on an empty namespace (idle)")
	flag.StringVar(&modes, "watchmem-modes", "reset,noread,initial,idle", "watchmem: reset (read a few bytes, reset), noread (never read), initial (sendInitialEvents, read to the end), idle (ordinary watches)")
	flag.DurationVar(&o.watchMem.hold, "watchmem-hold", 10*time.Second, "watchmem: how long noread and idle watchers stay")
	flag.DurationVar(&o.watchMem.settle, "watchmem-settle", 35*time.Second, "watchmem: how long after the clients leave the RSS is followed")
	cpuPIDs := flag.String("cpu-pids", "", "comma-separated process ids whose CPU time is the server's, reported per operation of the timed workloads (same machine only; default: --pid)")
	servers := flag.String("servers", "", "comma-separated host:port of replicas of one cluster (the kubeconfig's credentials work on each): create, get and update clients and watchers are spread over them round robin; the watch workload writes on the first")
	cpuProfile := flag.String("cpuprofile", "", "write the load generator's own CPU profile here (it shares the machine with a local server)")
	flag.Parse()
	allowCBOR()
	// The load generator collects its own garbage a quarter as often
	// (unless GOGC says otherwise): reading and decoding large lists, its
	// collector took a third of a whole JSON list's measured time (with
	// the default, 83–89 ms against 60 ms), a cost of the client that
	// every server measured paid alike.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "tabula-bench:", err)
			os.Exit(2)
		}
		defer pprof.StopCPUProfile()
	}
	var err error
	o.workloads = strings.Split(workloads, ",")
	if *servers != "" {
		o.servers = strings.Split(*servers, ",")
	}
	o.watchMem.modes = strings.Split(modes, ",")
	if o.clients, err = parseInts(clients); err == nil {
		if o.objects, err = parseInts(objects); err == nil {
			if o.watchers, err = parseInts(watchers); err == nil {
				o.cpuPIDs, err = parseInts(*cpuPIDs)
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tabula-bench:", err)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	results, err := run(ctx, o)
	printTable(results)
	if o.jsonOut != "" {
		b, _ := json.MarshalIndent(results, "", "  ")
		if werr := os.WriteFile(o.jsonOut, b, 0o644); werr != nil {
			fmt.Fprintln(os.Stderr, "tabula-bench:", werr)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "tabula-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// client builds a clientset without client-side rate limits: the server is
// what is measured.
func client(o options) (*kubernetes.Clientset, error) {
	return clientOn(o, "")
}

// clientOn is client on server (host:port; empty: the kubeconfig's).
func clientOn(o options, server string) (*kubernetes.Clientset, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err != nil {
		return nil, err
	}
	if server != "" {
		cfg.Host = serverURL(server)
	}
	// No client-side rate limiting at all: the server is what is measured
	// (a limiter also fails requests near a context deadline).
	cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	cfg.Timeout = 2 * time.Minute
	if o.protobuf {
		cfg.ContentType = "application/vnd.kubernetes.protobuf"
		cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	}
	return kubernetes.NewForConfig(cfg)
}

// serverURL: a -servers entry is host:port (HTTPS) or a whole URL.
func serverURL(server string) string {
	if strings.Contains(server, "://") {
		return server
	}
	return "https://" + server
}

// restConfigOn is restConfig on server (host:port; empty: the kubeconfig's).
func restConfigOn(o options, server string) (*rest.Config, error) {
	cfg, err := restConfig(o)
	if err == nil && server != "" {
		cfg.Host = serverURL(server)
	}
	return cfg, err
}

// restConfig exposes the config for workloads that need several transports.
func restConfig(o options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.kubeconfig)
	if err == nil {
		cfg.RateLimiter = flowcontrol.NewFakeAlwaysRateLimiter()
	}
	return cfg, err
}

func run(ctx context.Context, o options) ([]Result, error) {
	if len(o.cpuPIDs) == 0 && o.pid > 0 {
		o.cpuPIDs = []int{o.pid}
	}
	servers := o.servers
	if len(servers) == 0 {
		servers = []string{""} // the kubeconfig's
	}
	var replicas []*kubernetes.Clientset
	for _, srv := range servers {
		c, err := clientOn(o, strings.TrimSpace(srv))
		if err != nil {
			return nil, err
		}
		replicas = append(replicas, c)
	}
	cs := replicas[0]
	ns := fmt.Sprintf("bench-%d", time.Now().UnixNano()%1_000_000)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("create namespace: %w", err)
	}
	defer func() {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	}()
	b := &bench{o: o, cs: cs, ns: ns, replicas: replicas}
	b.rss = startRSS(o.pid)
	defer b.rss.stop()
	if r, ok := b.rss.idle(); ok {
		b.results = append(b.results, r)
	}
	for _, w := range o.workloads {
		if ctx.Err() != nil {
			break
		}
		var err error
		switch strings.TrimSpace(w) {
		case "create":
			err = b.create(ctx)
		case "get":
			err = b.get(ctx)
		case "update":
			err = b.update(ctx)
		case "list":
			err = b.list(ctx)
		case "watch":
			err = b.watch(ctx)
		case "churn":
			err = b.churn(ctx)
		case "rewatch":
			err = b.rewatch(ctx)
		case "watchmem":
			err = b.watchMem(ctx)
		case "encodings":
			err = b.encodings(ctx)
		case "":
		default:
			err = fmt.Errorf("unknown workload %q", w)
		}
		if err != nil {
			return b.results, fmt.Errorf("%s: %w", w, err)
		}
		if r, ok := b.rss.peakSince(strings.TrimSpace(w)); ok {
			b.results = append(b.results, r)
		}
	}
	return b.results, nil
}

func printTable(results []Result) {
	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKLOAD\tOPS\tOPS/S\tP50\tP99\tNOTE")
	for _, r := range results {
		fmt.Fprintf(tw, "%s\t%d\t%.0f\t%s\t%s\t%s\n", r.Name, r.Ops, r.PerSecond, ms(r.P50), ms(r.P99), r.Note)
	}
	tw.Flush()
}

func ms(d time.Duration) string {
	if d == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2fms", float64(d)/float64(time.Millisecond))
}
