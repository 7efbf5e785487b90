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
