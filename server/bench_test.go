package server_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
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

// BenchmarkListHandler measures a list of 10,000 1 KiB ConfigMaps
// in-process, as JSON (written from the stored bytes) and as Protobuf (what
// client-go's typed clients and informers ask for).
func BenchmarkListHandler(b *testing.B) {
	h := refNewHarness(b)
	data := strings.Repeat("x", 1000)
	const n = 10000
	for i := range n {
		body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm-%05d","labels":{"app":"bench"}},"data":{"k":%q}}`, i, data)
		if r := h.do("POST", "/api/v1/namespaces/default/configmaps", map[string]string{"Content-Type": "application/json"}, []byte(body)); r.Code != http.StatusCreated {
			b.Fatalf("create: %d %s", r.Code, r.Body)
		}
	}
	for _, accept := range []string{"application/json", "application/vnd.kubernetes.protobuf"} {
		b.Run(accept, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				r := h.do("GET", "/api/v1/namespaces/default/configmaps", map[string]string{"Accept": accept}, nil)
				if r.Code != http.StatusOK || r.Body.Len() < n*1000 {
					b.Fatalf("list: %d, %d bytes", r.Code, r.Body.Len())
				}
			}
		})
	}
}
