package main

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Result is one measured line.
type Result struct {
	Name      string        `json:"name"`
	Ops       int           `json:"ops"`
	PerSecond float64       `json:"perSecond"`
	P50       time.Duration `json:"p50ns"`
	P99       time.Duration `json:"p99ns"`
	Note      string        `json:"note,omitempty"`
	// Ratio, on a memory row, is how far the server's anonymous memory
	// rose during a request over the size of its (uncompressed) answer.
	Ratio float64 `json:"ratio,omitempty"`
	// CPUPerOp, on a timed row, is the CPU time the server's processes
	// (--cpu-pids) spent per operation: a cost the load generator's share
	// of the machine does not move, unlike operations per second.
	CPUPerOp time.Duration `json:"cpuPerOpNs,omitempty"`
}

type bench struct {
	o  options
	cs *kubernetes.Clientset
	// replicas are the clients of each server load is spread over
	// (just cs when there is one).
	replicas []*kubernetes.Clientset
	ns       string
	rss      *rssSampler
	results  []Result
	// cpuUsed is the server's CPU time during the last parallel run
	// (negative when unknown).
	cpuUsed time.Duration
	seq     atomic.Int64
}

// latencies collects per-operation durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) {
	l.mu.Lock()
	l.d = append(l.d, d)
	l.mu.Unlock()
}

func (l *latencies) result(name string, elapsed time.Duration, note string) Result {
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.d, func(i, j int) bool { return l.d[i] < l.d[j] })
	r := Result{Name: name, Ops: len(l.d), Note: note}
	if elapsed > 0 {
		r.PerSecond = float64(len(l.d)) / elapsed.Seconds()
	}
	if n := len(l.d); n > 0 {
		r.P50 = l.d[n/2]
		r.P99 = l.d[min(n-1, n*99/100)]
	}
	return r
}

// timed is the result of a parallel workload, with the server's CPU per
// operation when its processes are known.
func (b *bench) timed(lat *latencies, name string, elapsed time.Duration, note string) Result {
	r := lat.result(name, elapsed, note)
	if b.cpuUsed >= 0 && r.Ops > 0 {
		r.CPUPerOp = b.cpuUsed / time.Duration(r.Ops)
		if r.Note != "" {
			r.Note += "; "
		}
		r.Note += fmt.Sprintf("server CPU %s/op", micros(r.CPUPerOp))
	}
	return r
}

// micros formats d in microseconds.
func micros(d time.Duration) string {
	return fmt.Sprintf("%.0fµs", float64(d)/float64(time.Microsecond))
}

// userHZ is the unit of /proc/<pid>/stat's times: USER_HZ, 100 a second
// on every Linux architecture Go builds for.
const userHZ = 100

// serverCPU is the user and system CPU time pids have used so far, from
// /proc/<pid>/stat (10 ms steps: exact enough over runs of seconds).
// ok is false without pids or when one cannot be read.
func serverCPU(pids []int) (total time.Duration, ok bool) {
	for _, pid := range pids {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return 0, false
		}
		// The fields after the command, which is in parentheses and
		// may hold spaces: utime and stime are the 12th and 13th.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			return 0, false
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 13 {
			return 0, false
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		total += time.Duration(utime+stime) * time.Second / userHZ
	}
	return total, len(pids) > 0
}

func (b *bench) configMap(prefix string, size int, labels map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, b.seq.Add(1)), Labels: labels},
		Data:       map[string]string{"v": strings.Repeat("x", size)},
	}
}

// parallel runs fn from n goroutines until the duration passes.
// Goroutine i talks to replica i mod len(b.replicas) through cs.
func (b *bench) parallel(ctx context.Context, n int, fn func(ctx context.Context, cs *kubernetes.Clientset) error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, b.o.duration)
	defer cancel()
	cpu0, ok := serverCPU(b.o.cpuPIDs)
	b.cpuUsed = -1
	defer func() {
		if cpu1, ok1 := serverCPU(b.o.cpuPIDs); ok && ok1 {
			b.cpuUsed = cpu1 - cpu0
		}
	}()
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for i := 0; i < n; i++ {
		wg.Add(1)
		cs := b.replicas[i%len(b.replicas)]
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				if err := fn(ctx, cs); err != nil && ctx.Err() == nil {
					firstErr.CompareAndSwap(nil, err)
					cancel()
					return
				}
			}
		}()
	}
	wg.Wait()
	if err, ok := firstErr.Load().(error); ok {
		return time.Since(start), err
	}
	return time.Since(start), nil
}

func (b *bench) create(ctx context.Context) error {
	for _, size := range []int{1024, 10 * 1024} {
		for _, c := range b.o.clients {
			var lat latencies
			elapsed, err := b.parallel(ctx, c, func(ctx context.Context, cs *kubernetes.Clientset) error {
				cm := b.configMap("create", size, nil)
				t := time.Now()
				_, err := cs.CoreV1().ConfigMaps(b.ns).Create(ctx, cm, metav1.CreateOptions{})
				if err == nil {
					lat.add(time.Since(t))
				}
				return err
			})
			if err != nil {
				return err
			}
			b.results = append(b.results, b.timed(&lat, fmt.Sprintf("create %dKiB clients=%d", size/1024, c), elapsed, ""))
		}
	}
	return nil
}

func (b *bench) get(ctx context.Context) error {
	const n = 100
	names := make([]string, n)
	for i := range names {
		cm, err := b.cs.CoreV1().ConfigMaps(b.ns).Create(ctx, b.configMap("get", 1024, nil), metav1.CreateOptions{})
		if err != nil {
			return err
		}
		names[i] = cm.Name
	}
	for _, c := range b.o.clients {
		var lat latencies
		elapsed, err := b.parallel(ctx, c, func(ctx context.Context, cs *kubernetes.Clientset) error {
			t := time.Now()
			_, err := cs.CoreV1().ConfigMaps(b.ns).Get(ctx, names[rand.IntN(n)], metav1.GetOptions{})
			if err == nil {
				lat.add(time.Since(t))
			}
			return err
		})
		if err != nil {
			return err
		}
		b.results = append(b.results, b.timed(&lat, fmt.Sprintf("get clients=%d", c), elapsed, ""))
	}
	return nil
}

// update: every client read-modify-writes one shared object; conflicts
// are counted and retried, as controllers do.
func (b *bench) update(ctx context.Context) error {
	cm, err := b.cs.CoreV1().ConfigMaps(b.ns).Create(ctx, b.configMap("contended", 1024, nil), metav1.CreateOptions{})
	if err != nil {
		return err
	}
	for _, c := range b.o.clients {
		var lat latencies
		var conflicts atomic.Int64
		elapsed, err := b.parallel(ctx, c, func(ctx context.Context, cs *kubernetes.Clientset) error {
			t := time.Now()
			cur, err := cs.CoreV1().ConfigMaps(b.ns).Get(ctx, cm.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			cur.Data["n"] = strconv.FormatInt(b.seq.Add(1), 10)
			_, err = cs.CoreV1().ConfigMaps(b.ns).Update(ctx, cur, metav1.UpdateOptions{})
			if apierrors.IsConflict(err) {
				conflicts.Add(1)
				return nil
			}
			if err == nil {
				lat.add(time.Since(t))
			}
			return err
		})
		if err != nil {
			return err
		}
		b.results = append(b.results, b.timed(&lat, fmt.Sprintf("update 1 object clients=%d", c), elapsed,
			fmt.Sprintf("%d conflicts", conflicts.Load())))
	}
	return nil
}

// list fills a fresh namespace per size, then times whole lists, pages of
// 500 and a selective list matching 1% of the objects.
func (b *bench) list(ctx context.Context) error {
	for _, size := range b.o.objects {
		ns := fmt.Sprintf("%s-list%d", b.ns, size)
		if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		defer b.dropNamespace(ns)
		fill := time.Now()
		// One object in a hundred is selected=yes, for the 1% selector.
		err := b.fill(ctx, ns, size, func(i int64) map[string]string {
			if i%100 == 0 {
				return map[string]string{"selected": "yes"}
			}
			return map[string]string{"selected": "no"}
		})
		if err != nil {
			return err
		}
		b.results = append(b.results, Result{Name: fmt.Sprintf("fill %d objects clients=32", size), Ops: size,
			PerSecond: float64(size) / time.Since(fill).Seconds()})
		// The typed list's answer, for its memory row: read once, not
		// timed (client-go decodes what it reads).
		typedAnswer := 0
		if b.o.pid > 0 {
			raw, err := b.cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").SetHeader("Accept", "application/vnd.kubernetes.protobuf").DoRaw(ctx)
			if err != nil {
				return err
			}
			typedAnswer = len(raw)
		}
		var whole, pages, page, selective, jsonWhole, tableWhole latencies
		var wholeMem, jsonMem, tableMem listMemory
		for run := 0; run < 5; run++ {
			// JSON and Table answers are read, not decoded: the figure is
			// the server's and the transfer's, as a proxy or kubectl's
			// printer would start from.
			for _, a := range []struct {
				accept string
				lat    *latencies
				mem    *listMemory
				least  int // bytes the answer must have at least
			}{
				{"application/json", &jsonWhole, &jsonMem, size * 1024},
				// Rows carry each object's metadata, not its data.
				{"application/json;as=Table;v=v1;g=meta.k8s.io", &tableWhole, &tableMem, size * 100},
			} {
				var raw []byte
				t := time.Now()
				rise, err := memoryDuring(b.o.pid, func() (err error) {
					raw, err = b.cs.CoreV1().RESTClient().Get().Namespace(ns).Resource("configmaps").SetHeader("Accept", a.accept).DoRaw(ctx)
					return err
				})
				if err != nil {
					return err
				}
				a.lat.add(time.Since(t))
				if len(raw) < a.least {
					return fmt.Errorf("list as %s: %d bytes for %d objects", a.accept, len(raw), size)
				}
				a.mem.add(rise, len(raw))
			}
			var l *corev1.ConfigMapList
			t := time.Now()
			rise, err := memoryDuring(b.o.pid, func() (err error) {
				l, err = b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
				return err
			})
			if err != nil {
				return err
			}
			whole.add(time.Since(t))
			wholeMem.add(rise, typedAnswer)
			if len(l.Items) < size {
				return fmt.Errorf("list returned %d items; want %d", len(l.Items), size)
			}
			t = time.Now()
			cont := ""
			for {
				pt := time.Now()
				l, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
				if err != nil {
					return err
				}
				page.add(time.Since(pt))
				if cont = l.Continue; cont == "" {
					break
				}
			}
			pages.add(time.Since(t))
			t = time.Now()
			if _, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "selected=yes"}); err != nil {
				return err
			}
			selective.add(time.Since(t))
		}
		b.results = append(b.results,
			whole.result(fmt.Sprintf("list %d whole", size), 0, "5 runs"),
			pages.result(fmt.Sprintf("list %d in pages of 500", size), 0, "5 runs"),
			page.result(fmt.Sprintf("list %d: one page of 500", size), 0, ""),
			selective.result(fmt.Sprintf("list %d selective 1%%", size), 0, "labelSelector"),
			jsonWhole.result(fmt.Sprintf("list %d whole, JSON", size), 0, "read, not decoded"),
			tableWhole.result(fmt.Sprintf("list %d whole, Table", size), 0, "JSON Table, read, not decoded"))
		if b.o.pid > 0 {
			b.results = append(b.results, wholeMem.results(fmt.Sprintf("list %d whole", size))...)
			b.results = append(b.results, jsonMem.results(fmt.Sprintf("list %d whole, JSON", size))...)
			b.results = append(b.results, tableMem.results(fmt.Sprintf("list %d whole, Table", size))...)
		}
	}
	return nil
}

// listMemory follows how far a server's anonymous memory rises during
// the same list, asked for again and again.
type listMemory struct {
	rises   []int64 // peak over the value before, per request
	answers []int   // the answer's size, per request
}

func (m *listMemory) add(rise int64, answer int) {
	m.rises = append(m.rises, rise)
	m.answers = append(m.answers, answer)
}

// results are the first request's rise (the server had not been asked
// for that list before: its caches are cold) and the median of the
// others', each in MiB and over the answer's size.
func (m *listMemory) results(name string) []Result {
	if len(m.rises) == 0 {
		return nil
	}
	row := func(suffix string, rise int64, answer int) Result {
		r := Result{Name: name + ", memory, " + suffix, Ops: 1,
			Note: fmt.Sprintf("+%s over a %s answer", mib(rise), mib(int64(answer)))}
		if answer > 0 {
			r.Ratio = float64(rise) / float64(answer)
			r.Note += fmt.Sprintf(": %.2f×", r.Ratio)
		}
		return r
	}
	out := []Result{row("first", m.rises[0], m.answers[0])}
	if n := len(m.rises) - 1; n > 0 {
		again := append([]int64(nil), m.rises[1:]...)
		sort.Slice(again, func(i, j int) bool { return again[i] < again[j] })
		out = append(out, row("again", again[n/2], m.answers[1]))
		out[1].Ops = n
	}
	return out
}

// memoryDuring runs fn while sampling pid's anonymous memory every 5 ms
// and returns how far it rose above its value before fn (0 when pid is
// not given). Anonymous memory is the heap and what the server allocates
// besides: file-backed pages are its code and data, mapped once. A Go
// heap's resident memory stays up for seconds after a peak, so the
// samples need not be dense; each is one small read of /proc.
func memoryDuring(pid int, fn func() error) (int64, error) {
	if pid <= 0 {
		return 0, fn()
	}
	before := readAnon(pid)
	peak := before
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				peak = max(peak, readAnon(pid))
			}
		}
	}()
	err := fn()
	close(stop)
	<-stopped
	peak = max(peak, readAnon(pid))
	return max(0, peak-before), err
}

// readAnon is a process's anonymous resident memory in bytes, from
// /proc/PID/statm (resident less shared, the file-backed and shmem
// pages): the same figure as status's RssAnon, read more cheaply.
func readAnon(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return 0
	}
	resident, _ := strconv.ParseInt(f[1], 10, 64)
	shared, _ := strconv.ParseInt(f[2], 10, 64)
	return (resident - shared) * int64(os.Getpagesize())
}

// watch opens W watchers on one namespace, then creates objects stamped
// with their send time; each delivery's latency is receive - send.
func (b *bench) watch(ctx context.Context) error {
	for _, n := range b.o.watchers {
		ns := fmt.Sprintf("%s-watch%d", b.ns, n)
		if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if err := b.watchOnce(ctx, ns, n); err != nil {
			return err
		}
		b.dropNamespace(ns)
	}
	return nil
}

// drainTimeout bounds the wait for a deleted namespace to go.
const drainTimeout = 5 * time.Minute

// dropNamespace deletes a workload's namespace and waits until the server
// has removed it with its contents, so the next workload is not measured
// against a background deletion. The wait is not measured.
func (b *bench) dropNamespace(ns string) {
	ctx, cancel := context.WithTimeout(context.Background(), drainTimeout)
	defer cancel()
	if err := b.cs.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil {
		return
	}
	for {
		if _, err := b.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); apierrors.IsNotFound(err) || ctx.Err() != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// watchersPerConn spreads watchers over connections so no connection
// exceeds a server's HTTP/2 stream limit.
const watchersPerConn = 200

// watchClients returns clientsets enough for n watchers, each on its own
// connection, at least one per replica; watcher i uses
// clients[i%len(clients)].
func (b *bench) watchClients(n int) ([]*kubernetes.Clientset, error) {
	servers := b.o.servers
	if len(servers) == 0 {
		servers = []string{""}
	}
	conns := max((n+watchersPerConn-1)/watchersPerConn, len(servers))
	var clients []*kubernetes.Clientset
	for i := 0; i < conns; i++ {
		cfg, err := restConfigOn(b.o, strings.TrimSpace(servers[i%len(servers)]))
		if err != nil {
			return nil, err
		}
		c := *cfg
		// A custom dialer makes client-go build an uncached transport:
		// one connection per group of watchers.
		d := &net.Dialer{Timeout: 10 * time.Second}
		c.Dial = d.DialContext
		cs, err := kubernetes.NewForConfig(&c)
		if err != nil {
			return nil, err
		}
		clients = append(clients, cs)
	}
	return clients, nil
}

func (b *bench) watchOnce(ctx context.Context, ns string, n int) error {
	clients, err := b.watchClients(n)
	if err != nil {
		return err
	}
	start, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	const events = 50
	var lat latencies
	var wg sync.WaitGroup
	wctx, cancel := context.WithTimeout(ctx, b.o.duration+30*time.Second)
	defer cancel()
	ready := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		w, err := clients[i%len(clients)].CoreV1().ConfigMaps(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
		if err != nil {
			return fmt.Errorf("open watcher %d: %w", i, err)
		}
		ready <- struct{}{}
		wg.Add(1)
		go func(w watch.Interface) {
			defer wg.Done()
			defer w.Stop()
			got := 0
			for ev := range w.ResultChan() {
				cm, ok := ev.Object.(*corev1.ConfigMap)
				if !ok || ev.Type != watch.Added {
					continue
				}
				sent, err := strconv.ParseInt(cm.Annotations["bench/sent"], 10, 64)
				if err != nil {
					continue // not ours (e.g. the namespace's kube-root-ca.crt)
				}
				lat.add(time.Since(time.Unix(0, sent)))
				if got++; got == events {
					return
				}
			}
		}(w)
	}
	interval := b.o.duration / events
	if interval > 100*time.Millisecond {
		interval = 100 * time.Millisecond
	}
	for i := 0; i < events; i++ {
		cm := b.configMap("watched", 256, nil)
		cm.Annotations = map[string]string{"bench/sent": strconv.FormatInt(time.Now().UnixNano(), 10)}
		if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			return err
		}
		time.Sleep(interval)
	}
	wg.Wait()
	r := lat.result(fmt.Sprintf("watch delivery watchers=%d", n), 0, fmt.Sprintf("%d events each", events))
	if r.Ops < n*events {
		r.Note += fmt.Sprintf("; %d of %d deliveries", r.Ops, n*events)
	}
	b.results = append(b.results, r)
	return nil
}

// rssSampler samples a process's resident memory every 100ms.
type rssSampler struct {
	pid   int
	mu    sync.Mutex
	first int64
	peak  int64
	done  chan struct{}
}

func startRSS(pid int) *rssSampler {
	s := &rssSampler{pid: pid, done: make(chan struct{})}
	if pid <= 0 {
		return s
	}
	s.first = readRSS(pid)
	s.peak = s.first
	go func() {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-s.done:
				return
			case <-t.C:
				if v := readRSS(pid); v > 0 {
					s.mu.Lock()
					s.peak = max(s.peak, v)
					s.mu.Unlock()
				}
			}
		}
	}()
	return s
}

func (s *rssSampler) stop() {
	select {
	case <-s.done:
	default:
		close(s.done)
	}
}

// idle reports the RSS before the first workload.
func (s *rssSampler) idle() (Result, bool) {
	if s.pid <= 0 {
		return Result{}, false
	}
	return Result{Name: "rss idle", Note: mib(s.first)}, true
}

// peakSince reports the highest RSS since the previous call (or the
// start), named after the workload that ran meanwhile, and starts a new
// period.
func (s *rssSampler) peakSince(workload string) (Result, bool) {
	if s.pid <= 0 {
		return Result{}, false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.peak
	s.peak = readRSS(s.pid)
	return Result{Name: "rss peak during " + workload, Note: mib(v)}, true
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func readRSS(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			f := strings.Fields(line)
			if len(f) >= 2 {
				kb, _ := strconv.ParseInt(f[1], 10, 64)
				return kb * 1024
			}
		}
	}
	return 0
}

// churn turns objects over for the whole duration — each operation
// creates an object, updates it twice and deletes it — the load under
// which a store's history and files must stay bounded.
func (b *bench) churn(ctx context.Context) error {
	for _, c := range b.o.clients {
		var lat latencies
		elapsed, err := b.parallel(ctx, c, func(ctx context.Context, cs *kubernetes.Clientset) error {
			t := time.Now()
			cm, err := cs.CoreV1().ConfigMaps(b.ns).Create(ctx, b.configMap("churn", 1024, nil), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			for i := 0; i < 2; i++ {
				cm.Data["v"] = strings.Repeat(strconv.Itoa(i), 1024)
				if cm, err = cs.CoreV1().ConfigMaps(b.ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
					return err
				}
			}
			if err := cs.CoreV1().ConfigMaps(b.ns).Delete(ctx, cm.Name, metav1.DeleteOptions{}); err != nil {
				return err
			}
			lat.add(time.Since(t))
			return nil
		})
		if err != nil {
			return err
		}
		b.results = append(b.results, b.timed(&lat, fmt.Sprintf("churn clients=%d", c), elapsed, "create+2 updates+delete per op"))
	}
	return nil
}

// rewatch: an informer's watch after its list, or again after its watch
// timed out, from N clients: each opens a watch from a revision taken
// before the last rewatchEvents creates and reads their events. The
// history is recent, so a server with a watch cache serves it from
// memory.
func (b *bench) rewatch(ctx context.Context) error {
	const rewatchEvents = 10
	ns := b.ns + "-rewatch"
	if _, err := b.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		return err
	}
	defer b.dropNamespace(ns)
	start, err := b.cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	for range rewatchEvents {
		if _, err := b.cs.CoreV1().ConfigMaps(ns).Create(ctx, b.configMap("rewatch", 1024, nil), metav1.CreateOptions{}); err != nil {
			return err
		}
	}
	for _, c := range b.o.clients {
		var lat latencies
		elapsed, err := b.parallel(ctx, c, func(ctx context.Context, cs *kubernetes.Clientset) error {
			t := time.Now()
			w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion, AllowWatchBookmarks: true})
			if err != nil {
				return err
			}
			defer w.Stop()
			for got := 0; got < rewatchEvents; {
				ev, ok := <-w.ResultChan()
				if !ok {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("watch from %s ended after %d events", start.ResourceVersion, got)
				}
				switch ev.Type {
				case watch.Added:
					if cm, ok := ev.Object.(*corev1.ConfigMap); ok && cm.Name != "kube-root-ca.crt" {
						got++
					}
				case watch.Error:
					return fmt.Errorf("watch from %s: %v", start.ResourceVersion, apierrors.FromObject(ev.Object))
				}
			}
			lat.add(time.Since(t))
			return nil
		})
		if err != nil {
			return err
		}
		b.results = append(b.results, b.timed(&lat, fmt.Sprintf("rewatch %d events clients=%d", rewatchEvents, c), elapsed, ""))
	}
	return nil
}
