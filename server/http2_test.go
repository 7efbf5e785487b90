package server_test

import (
	"crypto/tls"
	"net/http"
	"net/http/httptest"
	"testing"

	"golang.org/x/net/http2"

	"github.com/tabula-dev/tabula/server"
)

// TestConfigureHTTP2Settings: a server configured by ConfigureHTTP2
// speaks HTTP/2 and announces kube-apiserver's limits in its first
// SETTINGS frame: 1000 streams per connection, 256 KiB frames and
// per-stream windows.
func TestConfigureHTTP2Settings(t *testing.T) {
	hs := httptest.NewUnstartedServer(http.NotFoundHandler())
	if err := server.ConfigureHTTP2(hs.Config); err != nil {
		t.Fatal(err)
	}
	hs.EnableHTTP2 = true
	hs.StartTLS()
	defer hs.Close()
	conn, err := tls.Dial("tcp", hs.Listener.Addr().String(), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q; want h2", p)
	}
	if _, err := conn.Write([]byte(http2.ClientPreface)); err != nil {
		t.Fatal(err)
	}
	fr := http2.NewFramer(conn, conn)
	if err := fr.WriteSettings(); err != nil {
		t.Fatal(err)
	}
	f, err := fr.ReadFrame()
	if err != nil {
		t.Fatal(err)
	}
	sf, ok := f.(*http2.SettingsFrame)
	if !ok {
		t.Fatalf("first frame %v; want SETTINGS", f)
	}
	want := map[http2.SettingID]uint32{
		http2.SettingMaxConcurrentStreams: 1000,
		http2.SettingMaxFrameSize:         256 * 1024,
		http2.SettingInitialWindowSize:    256 * 1024,
	}
	for id, v := range want {
		if got, ok := sf.Value(id); !ok || got != v {
			t.Errorf("%v = %d (sent: %v); want %d", id, got, ok, v)
		}
	}
}
