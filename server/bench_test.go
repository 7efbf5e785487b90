package server_test

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kuberuntime "k8s.io/apimachinery/pkg/runtime"
	clientscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

// BenchmarkCreateHandler measures the create path in-process (no TLS, no
// network): decode, validate, store on SQLite, encode the answer.
func BenchmarkCreateHandler(b *testing.B) {
	h := refNewHarness(b)
	data := strings.Repeat("x", 1000)
	var n atomic.Int64
	b.ReportAllocs()
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b%d"},"data":{"k":%q}}`, n.Add(1), data)
			req := httptest.NewRequest("POST", "/api/v1/namespaces/default/configmaps", bytes.NewReader([]byte(body)))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
}

// BenchmarkProtobufCreateGet is the create and get paths as client-go's
// typed clients use them: a Protobuf body, a Protobuf answer, gzip
// accepted (Go's transport asks for it on every request), ConfigMaps with
// 1 KiB and 10 KiB of data, as tabula-bench's workloads write them. Its
// allocations per op are the figure to watch: they set how often the
// collector runs under load.
func BenchmarkProtobufCreateGet(b *testing.B) {
	h := refNewHarness(b)
	headers := map[string]string{"Content-Type": "application/vnd.kubernetes.protobuf", "Accept": "application/vnd.kubernetes.protobuf", "Accept-Encoding": "gzip"}
	info, ok := kuberuntime.SerializerInfoForMediaType(clientscheme.Codecs.SupportedMediaTypes(), "application/vnd.kubernetes.protobuf")
	if !ok {
		b.Fatal("no Protobuf serializer")
	}
	encode := func(name, data string) []byte {
		cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "bench"}}, Data: map[string]string{"k": data}}
		var buf bytes.Buffer
		if err := info.Serializer.Encode(cm, &buf); err != nil {
			b.Fatal(err)
		}
		return buf.Bytes()
	}
	const path = "/api/v1/namespaces/default/configmaps"
	var runs int // -count and b.Loop's own runs reuse one harness: fresh names each time
	for _, size := range []int{1 << 10, 10 << 10} {
		data := strings.Repeat("x", size)
		b.Run(fmt.Sprintf("create/%dKiB", size>>10), func(b *testing.B) {
			runs++
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if r := h.do("POST", path, headers, encode(fmt.Sprintf("c%d-%d-%d", size, runs, i), data)); r.Code != http.StatusCreated {
					b.Fatalf("create: %d %s", r.Code, r.Body)
				}
			}
		})
		b.Run(fmt.Sprintf("get/%dKiB", size>>10), func(b *testing.B) {
			runs++
			name := fmt.Sprintf("g%d-%d", size, runs)
			if r := h.do("POST", path, headers, encode(name, data)); r.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", r.Code, r.Body)
			}
			b.ReportAllocs()
			for b.Loop() {
				if r := h.do("GET", path+"/"+name, headers, nil); r.Code != http.StatusOK || r.Body.Len() < size {
					b.Fatalf("get: %d, %d bytes", r.Code, r.Body.Len())
				}
			}
		})
	}
}

// BenchmarkCreatePod is BenchmarkCreateHandler for Pods, one at a time:
// the admission plugins that change or check a Pod (ServiceAccount's
// token volume, Priority, DefaultTolerationSeconds, LimitRanger,
// PodSecurity) run on each.
func BenchmarkCreatePod(b *testing.B) {
	h := refNewHarness(b)
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}`, n)
		req := httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", bytes.NewReader([]byte(body)))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.h.ServeHTTP(rec, req)
		if rec.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", rec.Code, rec.Body)
		}
	}
}

// BenchmarkListHandler measures a list of 10,000 1 KiB ConfigMaps
// in-process, as JSON (written from the stored bytes) and as Protobuf (what
// client-go's typed clients and informers ask for).
func BenchmarkListHandler(b *testing.B) {
	h := refNewHarnessCBOR(b, true)
	data := strings.Repeat("x", 1000)
	const n = 10000
	for i := range n {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","labels":{"app":"bench"}},"data":{"k":%q}}`, i, data)
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf", "application/cbor", "application/json;as=Table;v=v1;g=meta.k8s.io"} {
		b.Run(accept, func(b *testing.B) {
			b.ReportAllocs()
			least := n * 1000
			if strings.Contains(accept, "Table") {
				least = n * 100 // rows carry metadata, not data
			}
			for i := 0; i < b.N; i++ {
				r := h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Accept": accept}, nil)
				if r.Code != http.StatusOK || r.Body.Len() < least {
					b.Fatalf("list: %d, %d bytes", r.Code, r.Body.Len())
				}
			}
		})
	}
}

// BenchmarkWriteHandlers measures the write verbs on one object each
// (16 writers, each its own ConfigMap or Deployment, in-process on
// SQLite): a PUT changing a value, a merge patch, and a Server-Side
// Apply changing a value. Every write records managedFields.
func BenchmarkWriteHandlers(b *testing.B) {
	h := refNewHarness(b)
	data := strings.Repeat("x", 1000)
	const writers = 16
	for i := range writers {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w%d"},"data":{"k":%q,"n":"0"}}`, i, data)
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
		dep := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d%d"},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},`+
			`"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}],"env":[{"name":"A","value":"1"}]}]}}}}`, i)
		if r := h.do("POST", "/apis/apps/v1/namespaces/default/deployments", map[string]string{"Content-Type": "application/json"}, []byte(dep)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
		pod := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p%d","labels":{"app":"d"}},"spec":{"nodeName":"n1",`+
			`"containers":[{"name":"c","image":"nginx","ports":[{"containerPort":80}]}]}}`, i)
		if r := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json"}, []byte(pod)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	run := func(b *testing.B, write func(obj int, n int64) (string, string, string, []byte)) {
		var next, seq atomic.Int64
		b.ReportAllocs()
		b.SetParallelism(writers / 2) // GOMAXPROCS is 2 on the reference machine
		b.ResetTimer()
		b.RunParallel(func(pb *testing.PB) {
			obj := int(next.Add(1)-1) % writers
			for pb.Next() {
				method, path, ct, body := write(obj, seq.Add(1))
				req := httptest.NewRequest(method, path, bytes.NewReader(body))
				req.Header.Set("Content-Type", ct)
				rec := httptest.NewRecorder()
				h.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatalf("%s %s: %d %s", method, path, rec.Code, rec.Body)
				}
			}
		})
		b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "writes/s")
	}
	const cms = "/api/v1/namespaces/default/configmaps/"
	b.Run("configmap/put", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PUT", fmt.Sprint(cms, "w", obj), "application/json",
				[]byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w%d"},"data":{"k":%q,"n":"%d"}}`, obj, data, n))
		})
	})
	b.Run("configmap/merge-patch", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PATCH", fmt.Sprint(cms, "w", obj), "application/merge-patch+json", []byte(fmt.Sprintf(`{"data":{"n":"%d"}}`, n))
		})
	})
	b.Run("configmap/apply", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PATCH", fmt.Sprint(cms, "w", obj, "?fieldManager=bench"), "application/apply-patch+yaml",
				[]byte(fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"w%d"},"data":{"n":"%d"}}`, obj, n))
		})
	})
	b.Run("deployment/merge-patch", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PATCH", fmt.Sprint("/apis/apps/v1/namespaces/default/deployments/d", obj), "application/merge-patch+json",
				[]byte(fmt.Sprintf(`{"metadata":{"annotations":{"n":"%d"}}}`, n))
		})
	})
	// What a kubelet sends as its pods start and stop: a status patch.
	b.Run("pod/status-patch", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PATCH", fmt.Sprint("/api/v1/namespaces/default/pods/p", obj, "/status"), "application/strategic-merge-patch+json",
				[]byte(fmt.Sprintf(`{"status":{"phase":"Running","podIP":"10.0.%d.%d","conditions":[{"type":"Ready","status":"True"}]}}`, n/250%250, n%250))
		})
	})
	b.Run("deployment/apply", func(b *testing.B) {
		run(b, func(obj int, n int64) (string, string, string, []byte) {
			return "PATCH", fmt.Sprint("/apis/apps/v1/namespaces/default/deployments/d", obj, "?fieldManager=bench"), "application/apply-patch+yaml",
				[]byte(fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d%d","annotations":{"n":"%d"}}}`, obj, n))
		})
	})
}

// BenchmarkCreateManyManagedFields measures the create of a ConfigMap
// whose body carries 10,000 managedFields entries (one Update manager per
// data key), which kube's field manager decodes, caps to ten Update
// managers and encodes again.
func BenchmarkCreateManyManagedFields(b *testing.B) {
	h := refNewHarness(b)
	const entries = 10_000
	var data, fields strings.Builder
	for i := range entries {
		if i > 0 {
			data.WriteByte(',')
			fields.WriteByte(',')
		}
		fmt.Fprintf(&data, `"k%05d":"v"`, i)
		fmt.Fprintf(&fields, `{"manager":"m%05d","operation":"Update","apiVersion":"v1","time":"2026-01-01T00:00:%02dZ","fieldsType":"FieldsV1","fieldsV1":{"f:data":{"f:k%05d":{}}}}`, i, i%60, i)
	}
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"mf%d","managedFields":[%s]},"data":{%s}}`, i, fields.String(), data.String())
		r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(body))
		if r.Code != http.StatusCreated {
			b.Fatalf("create: %d %.300s", r.Code, r.Body)
		}
	}
}

// BenchmarkWatchInitialEvents reproduces issue 27's trial in-process:
// watches opened 100 at a time on a namespace of 60 ConfigMaps of 100 KB,
// each sent the whole state (sendInitialEvents) and read to the
// initial-events-end bookmark. It reports what the process allocates per
// watcher (a copy of the state each would be 6 MB) and the heap's peak.
func BenchmarkWatchInitialEvents(b *testing.B) {
	const objects, size, batch = 60, 100_000, 100
	store := storetest.Open(b, "sqlite://:memory:")
	srv := servertest.Server(b, server.Config{Store: store})
	bigNamespace(b, srv.Handler(), "big", objects, size)
	hs := httptest.NewServer(srv.Handler())
	defer hs.Close()
	tr := &http.Transport{MaxIdleConnsPerHost: -1, DisableCompression: true}
	defer tr.CloseIdleConnections()
	url := hs.URL + "/api/v1/namespaces/big/configmaps?watch=1&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan"
	runtime.GC()
	var peak atomic.Uint64
	done := make(chan struct{})
	go func() {
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	allocs := heapAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		var wg sync.WaitGroup
		for range batch {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if err := readInitialEvents(tr, url, objects); err != nil {
					b.Error(err)
				}
			}()
		}
		wg.Wait()
	}
	b.StopTimer()
	close(done)
	b.ReportMetric(float64(heapAllocs()-allocs)/float64(b.N*batch), "B/watcher")
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}

// BenchmarkListPodsByNode lists the pods of one node among 10,000 pods on
// 100 nodes, as a kubelet does (fieldSelector spec.nodeName), beside the
// same 1% chosen by a label: the cost follows the matching pods.
func BenchmarkListPodsByNode(b *testing.B) {
	h := refNewHarness(b)
	const pods, nodes = 10_000, 100
	for i := range pods {
		node := fmt.Sprintf("node-%03d", i%nodes)
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p-%05d","labels":{"node":%q}},"spec":{"nodeName":%q,"containers":[{"name":"c","image":"nginx"}]}}`, i, node, node)
		if r := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for _, q := range []string{"fieldSelector=spec.nodeName%3Dnode-042", "labelSelector=node%3Dnode-042", "fieldSelector=spec.nodeName%3Dnode-042,status.phase!%3DSucceeded"} {
		b.Run(q, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				r := h.do("GET", "/api/v1/pods?"+q, map[string]string{"Accept": "application/vnd.kubernetes.protobuf"}, nil)
				if r.Code != http.StatusOK || r.Body.Len() < pods/nodes*100 {
					b.Fatalf("list: %d, %d bytes", r.Code, r.Body.Len())
				}
			}
		})
	}
}

// BenchmarkGetHandler measures the whole request path of a small read
// in-process: routing, authentication, audit context, impersonation,
// priority and fairness (or, with it off, the max-in-flight limits),
// authorization, the store read and the answer.
func BenchmarkGetHandler(b *testing.B) {
	for _, apf := range []bool{true, false} {
		b.Run(fmt.Sprintf("apf=%v", apf), func(b *testing.B) {
			h := refNewHarnessConfig(b, func(cfg *server.Config) { cfg.NoPriorityAndFairness = !apf })
			req := httptest.NewRequest("POST", "/api/v1/namespaces/default/configmaps", strings.NewReader(`{"metadata":{"name":"one"},"data":{"k":"v"}}`))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Fatalf("create: %d %s", rec.Code, rec.Body)
			}
			benchGets(b, h.h, "/api/v1/namespaces/default/configmaps/one")
		})
	}
}

// benchGets times b.N GETs of path, each answered 200.
func benchGets(b *testing.B, h http.Handler, path string) {
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		req := httptest.NewRequest("GET", path, nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatalf("GET %s: %d %s", path, rec.Code, rec.Body)
		}
	}
}

// BenchmarkVersionHandler is the request path alone, without the store:
// the middlewares every request passes, and a small answer.
func BenchmarkVersionHandler(b *testing.B) {
	benchGets(b, refNewHarness(b).h, "/version")
}

// BenchmarkWatchFanOut delivers one event to many watchers of one
// namespace over HTTP/2 with TLS (200 streams per connection, as client-go
// spreads them): each op is one create and the time until every watcher
// has read its event. The watchers only find the event's end in what they
// read, so the figure and CPU profile are the server's fan-out.
func BenchmarkWatchFanOut(b *testing.B) {
	for _, watchers := range []int{100, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", watchers), func(b *testing.B) {
			srv := servertest.Server(b, server.Config{Store: storetest.Open(b, "sqlite://:memory:")})
			h := srv.Handler()
			hs := httptest.NewUnstartedServer(h)
			if err := server.ConfigureHTTP2(hs.Config); err != nil {
				b.Fatal(err)
			}
			hs.EnableHTTP2 = true
			hs.StartTLS()
			defer hs.Close()
			var got atomic.Int64
			arrived := make(chan struct{}, 1)
			target := int64(0)
			var mu sync.Mutex
			// Streams end with the benchmark, so the server can close.
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var tr *http.Transport
			for i := range watchers {
				if i%200 == 0 {
					tr = hs.Client().Transport.(*http.Transport).Clone()
					tr.ForceAttemptHTTP2 = true
					defer tr.CloseIdleConnections()
				}
				req, err := http.NewRequestWithContext(ctx, "GET", hs.URL+"/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=600", nil)
				if err != nil {
					b.Fatal(err)
				}
				resp, err := tr.RoundTrip(req)
				if err != nil {
					b.Fatal(err)
				}
				if resp.StatusCode != http.StatusOK || resp.ProtoMajor != 2 {
					b.Fatalf("watch: %s over %s", resp.Status, resp.Proto)
				}
				go func() {
					defer resp.Body.Close()
					buf := make([]byte, 32*1024)
					for {
						n, err := resp.Body.Read(buf)
						// JSON watch events end with a newline each.
						if k := bytes.Count(buf[:n], []byte{'\n'}); k > 0 {
							mu.Lock()
							if got.Add(int64(k)) >= target {
								select {
								case arrived <- struct{}{}:
								default:
								}
							}
							mu.Unlock()
						}
						if err != nil {
							return
						}
					}
				}()
			}
			data := strings.Repeat("x", 256)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				mu.Lock()
				target = int64(watchers * (i + 1))
				mu.Unlock()
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"fan-%d"},"data":{"k":%q}}`, i, data)
				req := httptest.NewRequest("POST", "/api/v1/namespaces/default/configmaps", strings.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("create: %d %s", rec.Code, rec.Body)
				}
				for got.Load() < int64(watchers*(i+1)) {
					<-arrived
				}
			}
		})
	}
}
