package server_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// BenchmarkCreateWithWebhook measures what calling one validating
// admission webhook adds to a ConfigMap create (in-process, SQLite, one
// request at a time): "none" has no webhook configured, "validating" one
// that allows every ConfigMap. webhook-ns/op is the time spent inside the
// webhook's handler, so the server's own overhead per call is the
// difference in ns/op less webhook-ns/op.
func BenchmarkCreateWithWebhook(b *testing.B) {
	var inHook atomic.Int64
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		began := time.Now()
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		in.Response = &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		in.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&in)
		inHook.Add(int64(time.Since(began)))
	}))
	defer hook.Close()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))

	for _, withHook := range []bool{false, true} {
		name := "none"
		if withHook {
			name = "validating"
		}
		b.Run(name, func(b *testing.B) {
			h := refNewHarness(b)
			if withHook {
				h.mustDo("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", "application/json", fmt.Sprintf(
					`{"metadata":{"name":"bench"},"webhooks":[{"name":"bench.tabula.dev","clientConfig":{"url":%q,"caBundle":%q},`+
						`"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],`+
						`"sideEffects":"None","admissionReviewVersions":["v1"]}]}`, hook.URL+"/validate", ca), http.StatusCreated)
			}
			inHook.Store(0)
			n := 0
			b.ReportAllocs()
			for b.Loop() {
				n++
				body := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b%d"},"data":{"k":"v"}}`, n)
				req := httptest.NewRequest("POST", "/api/v1/namespaces/default/configmaps", bytes.NewReader([]byte(body)))
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				h.h.ServeHTTP(rec, req)
				if rec.Code != http.StatusCreated {
					b.Fatalf("create: %d %s", rec.Code, rec.Body)
				}
			}
			b.ReportMetric(float64(inHook.Load())/float64(n), "webhook-ns/op")
		})
	}
}
