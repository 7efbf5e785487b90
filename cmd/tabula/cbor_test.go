package main

import (
	"io"
	"net/http"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCBORGate: CBOR is served by default (kube-apiserver 1.35 needs its
// CBORServingAndStorage gate switched on for it) and
// --feature-gates=CBORServingAndStorage=false turns it off, as kube's
// default: a 406 whose list names no application/cbor.
func TestCBORGate(t *testing.T) {
	get := func(m *Main) (*http.Response, string) {
		t.Helper()
		cfg, err := clientcmd.BuildConfigFromFlags("", m.KubeconfigPath)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		req, _ := http.NewRequest(http.MethodGet, cfg.Host+"/api/v1/namespaces/default", nil)
		req.Header.Set("Accept", "application/cbor")
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp, string(b)
	}
	on, _ := serve(t)
	if resp, body := get(on); resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/cbor" || !strings.HasPrefix(body, "\xd9\xd9\xf7") {
		t.Errorf("default: %d %q %q; want 200 application/cbor", resp.StatusCode, resp.Header.Get("Content-Type"), body)
	}
	off, _ := serve(t, "--feature-gates", "CBORServingAndStorage=false")
	resp, body := get(off)
	if resp.StatusCode != http.StatusNotAcceptable || strings.Contains(body, "application/cbor") ||
		!strings.Contains(body, "application/json, application/yaml, application/vnd.kubernetes.protobuf") {
		t.Errorf("gate off: %d %s; want kube's 406 without CBOR", resp.StatusCode, body)
	}
}
