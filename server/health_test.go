package server_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/tabula-dev/tabula/server"
)

// TestHealthExcludesAndSLIs: as kube-apiserver's health endpoints, each
// exclude parameter names one check and names matching none are said;
// the checks' results are kube's health SLIs at /metrics/slis; any
// method probes.
func TestHealthExcludesAndSLIs(t *testing.T) {
	h := refNewHarnessConfig(t, func(cfg *server.Config) { cfg.Metrics = prometheus.NewRegistry() })
	rec := h.do("GET", "/readyz?verbose&exclude=ping&exclude=nope&exclude=log,etcd", nil, nil)
	body := rec.Body.String()
	for _, want := range []string{"[+]ping excluded: ok\n", "[+]log ok\n", "[+]etcd ok\n",
		`warn: some health checks cannot be excluded: no matches for "log,etcd","nope"` + "\n", "readyz check passed\n"} {
		if rec.Code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("/readyz: %d %q; want %q", rec.Code, body, want)
		}
	}
	h.do("GET", "/livez", nil, nil)
	// Every method is a probe, as on kube's plain mux.
	for _, path := range []string{"/healthz", "/livez/ping", "/readyz"} {
		for _, method := range []string{"HEAD", "OPTIONS", "POST"} {
			if r := h.do(method, path, nil, nil); r.Code != http.StatusOK {
				t.Errorf("%s %s: %d %s; want 200", method, path, r.Code, r.Body)
			}
		}
	}
	slis := h.do("GET", "/metrics/slis", nil, nil).Body.String()
	for _, want := range []string{
		`kubernetes_healthcheck{name="etcd",type="readyz"} 1`,
		`kubernetes_healthcheck{name="ping",type="livez"} 1`,
		`kubernetes_healthchecks_total{name="etcd",status="success",type="readyz"} `,
		`process_start_time_seconds `,
	} {
		if !strings.Contains(slis, want) {
			t.Errorf("/metrics/slis lacks %s:\n%s", want, slis)
		}
	}
}
