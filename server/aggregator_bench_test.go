package server_test

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// BenchmarkAggregatedGet measures what relaying a request to an
// aggregated API server costs (in-process server, SQLite, one request at
// a time): "direct" is a client reaching the extension server itself
// over a kept-alive TLS connection, "proxied" the same GET through the
// server (authorization, endpoint lookup, the relay with the front
// proxy's headers), so the difference is the aggregator's overhead.
func BenchmarkAggregatedGet(b *testing.B) {
	ip := benchHostIP(b)
	const body = `{"kind":"ThingList","apiVersion":"bench.tabula.dev/v1","metadata":{},"items":[]}`
	backend := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path == "/apis/bench.tabula.dev/v1" {
			fmt.Fprint(w, `{"kind":"APIResourceList","apiVersion":"v1","groupVersion":"bench.tabula.dev/v1","resources":[{"name":"things","namespaced":true,"kind":"Thing","verbs":["list"]}]}`)
			return
		}
		fmt.Fprint(w, body)
	}))
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		b.Fatal(err)
	}
	backend.Listener = ln
	backend.StartTLS()
	defer backend.Close()
	port := ln.Addr().(*net.TCPAddr).Port

	b.Run("direct", func(b *testing.B) {
		c := backend.Client()
		// The test certificate names 127.0.0.1, the server listens elsewhere.
		c.Transport.(*http.Transport).TLSClientConfig.ServerName = "127.0.0.1"
		b.ReportAllocs()
		url := backend.URL + "/apis/bench.tabula.dev/v1/namespaces/default/things"
		for b.Loop() {
			resp, err := c.Get(url)
			if err != nil {
				b.Fatal(err)
			}
			buf := make([]byte, len(body)+1)
			n, _ := resp.Body.Read(buf)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || n == 0 {
				b.Fatalf("direct: %d", resp.StatusCode)
			}
		}
	})
	b.Run("proxied", func(b *testing.B) {
		h := refNewHarness(b)
		h.mustDo("POST", "/api/v1/namespaces/default/services", "application/json",
			fmt.Sprintf(`{"metadata":{"name":"bench"},"spec":{"ports":[{"name":"https","port":443,"targetPort":%d}]}}`, port), http.StatusCreated)
		h.mustDo("POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", "application/json", fmt.Sprintf(
			`{"metadata":{"name":"bench-1","labels":{"kubernetes.io/service-name":"bench"}},"addressType":"IPv4",`+
				`"endpoints":[{"addresses":[%q],"conditions":{"ready":true}}],"ports":[{"name":"https","port":%d}]}`, ip, port), http.StatusCreated)
		h.mustDo("POST", "/apis/apiregistration.k8s.io/v1/apiservices", "application/json",
			`{"metadata":{"name":"v1.bench.tabula.dev"},"spec":{"group":"bench.tabula.dev","version":"v1","insecureSkipTLSVerify":true,`+
				`"service":{"namespace":"default","name":"bench","port":443},"groupPriorityMinimum":100,"versionPriority":100}}`, http.StatusCreated)
		path := "/apis/bench.tabula.dev/v1/namespaces/default/things"
		h.waitFor("the APIService to be available", func() bool {
			return h.do("GET", path, nil, nil).Code == http.StatusOK
		})
		b.ReportAllocs()
		for b.Loop() {
			rec := httptest.NewRecorder()
			h.h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), "ThingList") {
				b.Fatalf("proxied: %d %s", rec.Code, rec.Body)
			}
		}
	})
}

// benchHostIP is an IPv4 address of this machine other than loopback
// (an EndpointSlice may not list a loopback address).
func benchHostIP(b *testing.B) string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		b.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	b.Fatal("no non-loopback IPv4 address for an EndpointSlice")
	return ""
}
