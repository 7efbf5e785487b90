package conformance

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// The density run: the shape of Kubernetes' own density test, at the
// size this machine holds.
const (
	densityNodes       = 100
	densityDeployments = 100
	densityReplicas    = 30
)

var kubeBin suiteArtifact

// kubeBinaries builds kube-apiserver (testdata/cluster) and etcd
// (testdata/etcd) for the comparison.
func kubeBinaries() (string, error) {
	return kubeBin.get(func(dir string) (string, error) {
		out := filepath.Join(dir, "kube-bin")
		for _, b := range []struct{ module, pkg, name string }{
			{"cluster", "k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"},
			{"etcd", ".", "etcd"},
		} {
			src, err := filepath.Abs(filepath.Join("testdata", b.module))
			if err != nil {
				return "", err
			}
			if _, err := goOutside(src, nil, "build", "-ldflags", kubeVersionFlags, "-o", filepath.Join(out, b.name), b.pkg); err != nil {
				return "", err
			}
		}
		return out, nil
	})
}

// BenchmarkDensity runs kube-controller-manager, kube-scheduler and kwok
// (100 simulated nodes) on each server and creates 100 Deployments of 30
// replicas: the time from the first create to 3,000 Running pods, the
// scheduler's binding rate, every member's request latency by verb (timed
// the same way for every server, at a proxy all members go through), and
// the servers' peak RSS. `make density` runs it once per server:
// kube-apiserver on etcd, Tabula on SQLite, Tabula on PostgreSQL.
func BenchmarkDensity(b *testing.B) {
	bins, err := clusterBinaries()
	if err != nil {
		b.Fatal(err)
	}
	kube, err := kubeBinaries()
	if err != nil {
		b.Fatal(err)
	}
	servers := []struct {
		name  string
		start func(b *testing.B, dir string) densityServer
	}{
		{"kube-apiserver+etcd", func(b *testing.B, dir string) densityServer { return startKube(b, kube, dir, false) }},
		// PostgreSQL as the suite runs it has fsync off; this is etcd alike.
		{"kube-apiserver+etcd-no-fsync", func(b *testing.B, dir string) densityServer { return startKube(b, kube, dir, true) }},
		{"tabula-sqlite", func(b *testing.B, dir string) densityServer {
			return startTabulaServer(b, "sqlite://"+filepath.Join(dir, "tabula.db"), dir)
		}},
		{"tabula-postgres", func(b *testing.B, dir string) densityServer {
			db := dbtest.Postgres(b)
			srv := startTabulaServer(b, db, dir)
			srv.storage = postgresProcesses(b, db)
			return srv
		}},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			for range b.N {
				dir := b.TempDir()
				r := densityRun(b, bins, dir, s.start(b, dir))
				r.report(b, s.name)
			}
		})
	}
}

// densityServer is a server under test: how to reach it as admin, where
// its keys are, and the processes whose memory counts: the API server's,
// and its database's (etcd, PostgreSQL's; SQLite is inside Tabula).
type densityServer struct {
	config  *rest.Config
	pki     string // holds ca.crt, ca.key and sa.key
	server  int
	storage func() []int
	// exited closes when the server's process has exited (nil: not
	// known here).
	exited <-chan struct{}
}

func startTabulaServer(b *testing.B, db, dir string, args ...string) densityServer {
	p, err := startTabula(b, serveOptions{DB: db, DataDir: filepath.Join(dir, "tabula"), Args: args})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = p.Stop(stopDeadline) })
	cfg, err := clientcmd.BuildConfigFromFlags("", p.Kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	return densityServer{config: cfg, pki: filepath.Join(p.Options.DataDir, "pki"), server: p.cmd.Process.Pid, storage: func() []int { return nil }}
}

// startKube runs etcd and kube-apiserver with kube's defaults (admission
// plugins, priority and fairness), AlwaysAllow authorization as Tabula
// has, and an admin certificate from a CA made with Tabula's PKI code.
func startKube(b *testing.B, bins, dir string, noFsync bool) densityServer {
	return startKubeWith(b, bins, dir, noFsync, "AlwaysAllow")
}

// startKubeWith is startKube with the given --authorization-mode and
// more kube-apiserver flags.
func startKubeWith(b *testing.B, bins, dir string, noFsync bool, authorization string, args ...string) densityServer {
	client, peer := freePortArg(b), freePortArg(b)
	etcdArgs := []string{"--name", "default", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", "http://127.0.0.1:" + client, "--advertise-client-urls", "http://127.0.0.1:" + client,
		"--listen-peer-urls", "http://127.0.0.1:" + peer, "--initial-advertise-peer-urls", "http://127.0.0.1:" + peer,
		"--initial-cluster", "default=http://127.0.0.1:" + peer}
	if noFsync {
		etcdArgs = append(etcdArgs, "--unsafe-no-fsync")
	}
	etcd := startMember(b, dir, "etcd", filepath.Join(bins, "etcd"), nil, etcdArgs...)
	return startAPIServer(b, bins, dir, "http://127.0.0.1:"+client, etcd, authorization, args...)
}

// startAPIServer runs kube-apiserver on the etcd API at storageURL, served
// by the storage member (etcd itself, or kine), with more flags args, and
// waits for /readyz.
func startAPIServer(b *testing.B, bins, dir, storageURL string, storage *member, authorization string, args ...string) densityServer {
	pkiDir := filepath.Join(dir, "pki")
	pki, err := auth.EnsurePKI(pkiDir, nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := auth.EnsureServiceAccountKey(pkiDir); err != nil {
		b.Fatal(err)
	}
	secure := freePortArg(b)
	apiserver := startMember(b, dir, "kube-apiserver", filepath.Join(bins, "kube-apiserver"), nil, append([]string{
		"--etcd-servers", storageURL, "--bind-address", "127.0.0.1", "--secure-port", secure,
		"--cert-dir", filepath.Join(dir, "apiserver-certs"), "--client-ca-file", pki.CACertPath,
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", filepath.Join(pkiDir, "sa.key"), "--service-account-signing-key-file", filepath.Join(pkiDir, "sa.key"),
		"--service-cluster-ip-range", "10.96.0.0/12", "--authorization-mode", authorization}, args...)...)
	// The admin's key in memory: client-go would watch files that go with
	// the run's directory.
	certPEM, err := os.ReadFile(pki.AdminCertPath)
	if err != nil {
		b.Fatal(err)
	}
	keyPEM, err := os.ReadFile(pki.AdminKeyPath)
	if err != nil {
		b.Fatal(err)
	}
	cfg := &rest.Config{Host: "https://127.0.0.1:" + secure, TLSClientConfig: rest.TLSClientConfig{
		Insecure: true, CertData: certPEM, KeyData: keyPEM}}
	cs := kubernetes.NewForConfigOrDie(cfg)
	waitFor(b, "kube-apiserver ready", 2*time.Minute, func() (bool, string) {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(context.Background())
		return err == nil, fmt.Sprintf("%s %v", body, err)
	})
	return densityServer{config: cfg, pki: pkiDir, server: apiserver.cmd.Process.Pid, storage: func() []int { return []int{storage.cmd.Process.Pid} }, exited: apiserver.exited}
}

// densityResult is one run's figures.
type densityResult struct {
	toRunning time.Duration // first Deployment create to the last pod Running
	schedPerS float64       // pods bound per second, first to last binding
	latency   map[string][]time.Duration
	// Peak memory (PSS, bytes): the API server alone, and with its
	// database.
	peakServer, peakTotal int64
	// CPU time used during the run: the API server's, and with its
	// database (on 2 cores every member competes for it).
	cpuServer, cpuTotal time.Duration
	requests            int
	scheduling          time.Duration
}

func densityRun(b *testing.B, bins, dir string, srv densityServer) densityResult {
	ctx := context.Background()
	proxy := newLatencyProxy(b, srv.config)
	kc := proxy.kubeconfig(b, dir)
	startServing(b, dir, "kube-controller-manager", filepath.Join(bins, "kube-controller-manager"), nil,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--use-service-account-credentials=false",
		"--service-account-private-key-file", filepath.Join(srv.pki, "sa.key"), "--root-ca-file", filepath.Join(srv.pki, "ca.crt"),
		"--kube-api-qps", "500", "--kube-api-burst", "1000")
	startServing(b, dir, "kube-scheduler", filepath.Join(bins, "kube-scheduler"), nil,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--kube-api-qps", "500", "--kube-api-burst", "1000")
	startMember(b, dir, "kwok", filepath.Join(bins, "kwok"), []string{"HOME=" + dir},
		"--kubeconfig", kc, "--manage-all-nodes=true", "--node-lease-duration-seconds", "40", "--cidr", "10.0.0.1/8")

	cfg := rest.CopyConfig(srv.config)
	cfg.QPS, cfg.Burst = -1, 0
	cs := kubernetes.NewForConfigOrDie(cfg)
	for i := range densityNodes {
		name := fmt.Sprintf("density-%03d", i)
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "type": "kwok"}},
			Status: corev1.NodeStatus{Capacity: nodeResources(), Allocatable: nodeResources()}}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	waitFor(b, "the simulated nodes Ready", 5*time.Minute, func() (bool, string) {
		nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for i := range nodes.Items {
			if nodeCondition(&nodes.Items[i], corev1.NodeReady, corev1.ConditionTrue) {
				ready++
			}
		}
		return ready == densityNodes, fmt.Sprintf("%d Ready", ready)
	})
	const ns = "density"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	waitFor(b, "the namespace's default ServiceAccount", time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})

	// Bindings and Running pods are seen by an informer of the
	// benchmark's own, straight to the server.
	var mu sync.Mutex
	bound, running := map[string]time.Time{}, map[string]time.Time{}
	total := densityDeployments * densityReplicas
	done := make(chan struct{})
	observe := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		if _, seen := bound[pod.Name]; !seen && pod.Spec.NodeName != "" {
			bound[pod.Name] = now
		}
		if _, seen := running[pod.Name]; !seen && pod.Status.Phase == corev1.PodRunning {
			running[pod.Name] = now
			if len(running) == total {
				close(done)
			}
		}
	}
	inf := cache.NewSharedIndexInformer(cache.NewListWatchFromClient(cs.CoreV1().RESTClient(), "pods", ns, fields.Everything()), &corev1.Pod{}, 0, cache.Indexers{})
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: observe, UpdateFunc: func(_, obj any) { observe(obj) }}); err != nil {
		b.Fatal(err)
	}
	stop := make(chan struct{})
	defer close(stop)
	go inf.Run(stop)
	if !cache.WaitForCacheSync(stop, inf.HasSynced) {
		b.Fatal("pod informer did not sync")
	}

	mem := sampleMemory(srv)
	cpuBefore := cpuTimes(srv)
	proxy.reset()
	b.ResetTimer()
	began := time.Now()
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, densityDeployments)
	for range 4 {
		wg.Go(func() {
			for i := range work {
				name := fmt.Sprintf("d%03d", i)
				labels := map[string]string{"app": name}
				replicas := int32(densityReplicas)
				d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: appsv1.DeploymentSpec{Replicas: &replicas,
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}}}
				if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range densityDeployments {
		work <- i
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(20 * time.Minute):
		mu.Lock()
		b.Fatalf("%d of %d pods bound and %d Running after 20 minutes", len(bound), total, len(running))
	}
	b.StopTimer()
	cpuAfter := cpuTimes(srv)
	r := densityResult{latency: proxy.snapshot()}
	for pid, after := range cpuAfter {
		used := after - cpuBefore[pid]
		r.cpuTotal += used
		if pid == srv.server {
			r.cpuServer = used
		}
	}
	r.peakServer, r.peakTotal = mem.stop()
	mu.Lock()
	defer mu.Unlock()
	var last time.Time
	for _, t := range running {
		if t.After(last) {
			last = t
		}
	}
	r.toRunning = last.Sub(began)
	first, lastBound := time.Time{}, time.Time{}
	for _, t := range bound {
		if first.IsZero() || t.Before(first) {
			first = t
		}
		if t.After(lastBound) {
			lastBound = t
		}
	}
	r.scheduling = lastBound.Sub(first)
	r.schedPerS = float64(len(bound)) / r.scheduling.Seconds()
	for _, d := range r.latency {
		r.requests += len(d)
	}
	return r
}

func (r densityResult) report(b *testing.B, name string) {
	b.ReportMetric(r.toRunning.Seconds(), "s-to-all-running")
	b.ReportMetric(r.schedPerS, "pods-bound/s")
	b.ReportMetric(float64(r.peakServer)/(1<<20), "MiB-peak-apiserver")
	b.ReportMetric(float64(r.peakTotal)/(1<<20), "MiB-peak-with-db")
	b.ReportMetric(r.cpuServer.Seconds(), "cpu-s-apiserver")
	b.ReportMetric(r.cpuTotal.Seconds(), "cpu-s-with-db")
	verbs := slices.Sorted(func(yield func(string) bool) {
		for v := range r.latency {
			if !yield(v) {
				return
			}
		}
	})
	var rows []string
	for _, v := range verbs {
		d := r.latency[v]
		slices.Sort(d)
		p50, p99 := d[len(d)*50/100], d[min(len(d)-1, len(d)*99/100)]
		b.ReportMetric(float64(p99.Microseconds())/1000, "ms-p99-"+v)
		rows = append(rows, fmt.Sprintf("%s %d requests p50 %.1f ms p99 %.1f ms", v, len(d), float64(p50.Microseconds())/1000, float64(p99.Microseconds())/1000))
	}
	b.Logf("%s: %d pods Running %.1f s after the first create; %.1f pods bound/s (%.1f s first to last binding); peak memory %.0f MiB, %.0f MiB with the database; CPU %.1f s, %.1f s with the database; %d requests: %s",
		name, densityDeployments*densityReplicas, r.toRunning.Seconds(), r.schedPerS, r.scheduling.Seconds(),
		float64(r.peakServer)/(1<<20), float64(r.peakTotal)/(1<<20), r.cpuServer.Seconds(), r.cpuTotal.Seconds(), r.requests, strings.Join(rows, "; "))
}

// latencyProxy is the one door every member goes through: it forwards
// with the admin's credentials and times each request that is not a
// watch, by verb, the same way whatever the server behind it.
type latencyProxy struct {
	srv    *httptest.Server
	mu     sync.Mutex
	byVerb map[string][]time.Duration
}

func newLatencyProxy(b *testing.B, target *rest.Config) *latencyProxy {
	u, err := url.Parse(target.Host)
	if err != nil {
		b.Fatal(err)
	}
	tr, err := rest.TransportFor(target)
	if err != nil {
		b.Fatal(err)
	}
	rp := &httputil.ReverseProxy{Transport: tr, FlushInterval: -1, Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(u)
		r.Out.Host = u.Host
	}}
	p := &latencyProxy{byVerb: map[string][]time.Duration{}}
	p.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		rp.ServeHTTP(w, r)
		if verb := requestVerb(r); verb != "" {
			p.mu.Lock()
			p.byVerb[verb] = append(p.byVerb[verb], time.Since(start))
			p.mu.Unlock()
		}
	}))
	p.srv.EnableHTTP2 = true
	p.srv.StartTLS()
	b.Cleanup(p.srv.Close)
	return p
}

func (p *latencyProxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.byVerb = map[string][]time.Duration{}
}

func (p *latencyProxy) snapshot() map[string][]time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string][]time.Duration{}
	for v, d := range p.byVerb {
		out[v] = slices.Clone(d)
	}
	return out
}

// kubeconfig writes a kubeconfig that points at the proxy.
func (p *latencyProxy) kubeconfig(b *testing.B, dir string) string {
	path := filepath.Join(dir, "proxy.kubeconfig")
	writeInsecureKubeconfig(b, path, p.srv.URL, nil, nil)
	return path
}

// writeInsecureKubeconfig writes a kubeconfig for server, not verifying
// its certificate, with a client certificate when one is given.
func writeInsecureKubeconfig(b *testing.B, path, server string, certPEM, keyPEM []byte) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["server"] = &clientcmdapi.Cluster{Server: server, InsecureSkipTLSVerify: true}
	cfg.AuthInfos["member"] = &clientcmdapi.AuthInfo{ClientCertificateData: certPEM, ClientKeyData: keyPEM}
	cfg.Contexts["server"] = &clientcmdapi.Context{Cluster: "server", AuthInfo: "member"}
	cfg.CurrentContext = "server"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		b.Fatal(err)
	}
}

// requestVerb is kube-apiserver's verb for a resource request; "" for a
// watch or a request that is not for a resource.
func requestVerb(r *http.Request) string {
	path := r.URL.Path
	var rest string
	switch {
	case strings.HasPrefix(path, "/api/v1/"):
		rest = strings.TrimPrefix(path, "/api/v1/")
	case strings.HasPrefix(path, "/apis/"):
		parts := strings.SplitN(strings.TrimPrefix(path, "/apis/"), "/", 3)
		if len(parts) < 3 {
			return ""
		}
		rest = parts[2]
	default:
		return ""
	}
	if r.URL.Query().Get("watch") == "true" || r.URL.Query().Get("watch") == "1" || strings.HasPrefix(rest, "watch/") {
		return ""
	}
	parts := strings.Split(strings.Trim(rest, "/"), "/")
	if parts[0] == "namespaces" && len(parts) > 2 {
		parts = parts[2:]
	}
	collection := len(parts) == 1
	switch r.Method {
	case http.MethodGet:
		if collection {
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		return "patch"
	case http.MethodDelete:
		if collection {
			return "deletecollection"
		}
		return "delete"
	}
	return ""
}

// memorySampler follows a server's memory (PSS, so PostgreSQL's shared
// buffers count once across its processes) and keeps the peaks.
type memorySampler struct {
	stopCh chan struct{}
	peaks  chan [2]int64
}

func sampleMemory(srv densityServer) *memorySampler {
	s := &memorySampler{stopCh: make(chan struct{}), peaks: make(chan [2]int64, 1)}
	go func() {
		var peak [2]int64
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			server := pidPSS(srv.server)
			total := server
			for _, pid := range srv.storage() {
				total += pidPSS(pid)
			}
			peak[0], peak[1] = max(peak[0], server), max(peak[1], total)
			select {
			case <-s.stopCh:
				s.peaks <- peak
				return
			case <-tick.C:
			}
		}
	}()
	return s
}

func (s *memorySampler) stop() (server, total int64) {
	close(s.stopCh)
	p := <-s.peaks
	return p[0], p[1]
}

// cpuTimes is the user and system CPU time of the server's processes so
// far, by pid.
func cpuTimes(srv densityServer) map[int]time.Duration {
	out := map[int]time.Duration{}
	for _, pid := range append([]int{srv.server}, srv.storage()...) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// After "(comm)": state ppid … utime is the 12th field, stime the
		// 13th, in clock ticks (100 a second on Linux).
		f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
		if len(f) < 13 {
			continue
		}
		utime, _ := strconv.ParseInt(f[11], 10, 64)
		stime, _ := strconv.ParseInt(f[12], 10, 64)
		out[pid] = time.Duration(utime+stime) * 10 * time.Millisecond
	}
	return out
}

// pidPSS is a process's proportional set size in bytes (0 once it is
// gone).
func pidPSS(pid int) int64 { return procKiB(fmt.Sprintf("/proc/%d/smaps_rollup", pid), "Pss:") << 10 }

// procKiB reads the "<field> <n> kB" line of a /proc file (0 when the
// file or line is missing).
func procKiB(path, field string) int64 {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			f := strings.Fields(v)
			if len(f) == 2 && f[1] == "kB" {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb
			}
		}
	}
	return 0
}

// postgresProcesses finds the PostgreSQL server behind a database URL
// (the postmaster listening on its port) and lists it with its backends
// at each call.
func postgresProcesses(b *testing.B, db string) func() []int {
	u, err := url.Parse(db)
	if err != nil {
		b.Fatal(err)
	}
	port := u.Port()
	type proc struct {
		ppid    int
		cmdline []string
	}
	procs := func() map[int]proc {
		out := map[int]proc{}
		entries, _ := os.ReadDir("/proc")
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			cmd, err1 := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
			stat, err2 := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err1 != nil || err2 != nil {
				continue
			}
			// stat: pid (comm) state ppid …; comm may hold spaces.
			f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
			if len(f) < 2 {
				continue
			}
			ppid, _ := strconv.Atoi(f[1])
			out[pid] = proc{ppid, strings.Split(strings.TrimRight(string(cmd), "\x00"), "\x00")}
		}
		return out
	}
	postmaster := 0
	for pid, p := range procs() {
		if i := slices.Index(p.cmdline, "-p"); filepath.Base(p.cmdline[0]) == "postgres" && i >= 0 && i+1 < len(p.cmdline) && p.cmdline[i+1] == port {
			postmaster = pid
		}
	}
	if postmaster == 0 {
		b.Fatalf("no postmaster listening on port %s", port)
	}
	return func() []int {
		pids := []int{postmaster}
		for pid, p := range procs() {
			if p.ppid == postmaster {
				pids = append(pids, pid)
			}
		}
		return pids
	}
}
