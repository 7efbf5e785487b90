package server_test

import (
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"

	"github.com/tabula-dev/tabula/server"
)

// TestAuditLatencyAnnotations: as kube-apiserver's audit filter, a
// request slower than 500 ms carries where its time went in
// apiserver.latency.k8s.io/* annotations (here a validating webhook that
// takes 600 ms, with authentication, authorization and the total); a
// quick one carries none.
func TestAuditLatencyAnnotations(t *testing.T) {
	// hold, when set, keeps the webhook until it is closed: the test
	// lets the request go once it has been held past the threshold.
	var hold atomic.Pointer[chan struct{}]
	entered := make(chan struct{}, 1)
	var calls atomic.Int32
	hook := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var in admissionv1.AdmissionReview
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		calls.Add(1)
		if release := hold.Load(); release != nil {
			entered <- struct{}{}
			select {
			case <-*release:
			case <-r.Context().Done():
			}
		}
		in.Response = &admissionv1.AdmissionResponse{UID: in.Request.UID, Allowed: true}
		in.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&in)
	}))
	defer hook.Close()
	ca := base64.StdEncoding.EncodeToString(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw}))

	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte(auditPolicy), 0o600); err != nil {
		t.Fatal(err)
	}
	h, srv, as := authServer(t, "tok-root,root,1,\"system:masters\"\n", server.Config{Audit: server.AuditConfig{PolicyFile: policy, LogPath: log}})
	t.Cleanup(srv.StopAuditing)
	if r := h.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", as("tok-root"), []byte(fmt.Sprintf(
		`{"metadata":{"name":"slow"},"webhooks":[{"name":"slow.tabula.dev","clientConfig":{"url":%q,"caBundle":%q},"timeoutSeconds":10,`+
			`"rules":[{"operations":["CREATE"],"apiGroups":[""],"apiVersions":["v1"],"resources":["configmaps"]}],`+
			`"sideEffects":"None","admissionReviewVersions":["v1"]}]}`, hook.URL+"/validate", ca))); r.Code != http.StatusCreated {
		t.Fatalf("webhook configuration: %d %s", r.Code, r.Body)
	}
	n := 0
	h.waitFor("the webhook called", func() bool {
		n++
		h.do("POST", "/api/v1/namespaces/default/configmaps", as("tok-root"), []byte(fmt.Sprintf(`{"metadata":{"name":"probe-%d"}}`, n)))
		return calls.Load() > 0
	})
	release := make(chan struct{})
	hold.Store(&release)
	ids := make(chan string, 1)
	go func() {
		ids <- h.do("POST", "/api/v1/namespaces/default/configmaps", as("tok-root"), []byte(`{"metadata":{"name":"slow"}}`)).Header().Get("Audit-Id")
	}()
	<-entered
	held := time.Now()
	h.waitFor("the create held in the webhook for 600 ms", func() bool { return time.Since(held) >= 600*time.Millisecond })
	hold.Store(nil)
	close(release)
	slowID := <-ids
	quickID := h.do("GET", "/api/v1/namespaces/default/configmaps/slow", as("tok-root"), nil).Header().Get("Audit-Id")
	srv.StopAuditing()
	found := 0
	for _, e := range readAudit(t, log) {
		if e.Stage != auditv1.StageResponseComplete {
			continue
		}
		switch string(e.AuditID) {
		case slowID:
			found++
			for _, k := range []string{"validating-webhook", "authentication", "authorization", "total"} {
				if _, ok := e.Annotations["apiserver.latency.k8s.io/"+k]; !ok {
					t.Errorf("the slow create's annotations %v: no apiserver.latency.k8s.io/%s", e.Annotations, k)
				}
			}
			if d, err := time.ParseDuration(e.Annotations["apiserver.latency.k8s.io/validating-webhook"]); err != nil || d < 600*time.Millisecond {
				t.Errorf("validating-webhook latency %q; want at least 600ms", e.Annotations["apiserver.latency.k8s.io/validating-webhook"])
			}
		case quickID:
			found++
			if _, ok := e.Annotations["apiserver.latency.k8s.io/total"]; ok {
				t.Errorf("a quick get carries latency annotations: %v", e.Annotations)
			}
		}
	}
	if found != 2 {
		t.Errorf("found %d of the 2 requests' ResponseComplete events", found)
	}
}
