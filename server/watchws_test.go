package server_test

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/websocket"
)

// TestWatchOverWebSocket: as kube-apiserver's, a watch asked for with a
// WebSocket upgrade sends each event as one message (text for JSON):
// the state, then changes, until the client closes it.
func TestWatchOverWebSocket(t *testing.T) {
	h := refNewHarness(t)
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"before"}}`, http.StatusCreated)

	url := "ws" + strings.TrimPrefix(hs.URL, "http") + "/api/v1/namespaces/default/configmaps?watch=true&fieldSelector=metadata.name%21%3Dkube-root-ca.crt"
	// dial bounds the handshake too: a server that answers with a plain
	// stream must fail the test, not hang it.
	dial := func(accept string) *websocket.Conn {
		t.Helper()
		cfg, err := websocket.NewConfig(url, hs.URL)
		if err != nil {
			t.Fatal(err)
		}
		if accept != "" {
			cfg.Header.Set("Accept", accept)
		}
		conn, err := net.Dial("tcp", strings.TrimPrefix(hs.URL, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
		ws, err := websocket.NewClient(cfg, conn)
		if err != nil {
			conn.Close()
			t.Fatalf("websocket handshake for %s: %v", url, err)
		}
		return ws
	}
	ws := dial("")
	defer ws.Close()
	type event struct {
		Type   string
		Object struct{ Metadata struct{ Name string } }
	}
	// A codec that also says how each message was framed.
	var text []bool
	frames := websocket.Codec{Unmarshal: func(data []byte, payloadType byte, v interface{}) error {
		text = append(text, payloadType == websocket.TextFrame)
		return json.Unmarshal(data, v)
	}}
	next := func() event {
		t.Helper()
		_ = ws.SetReadDeadline(time.Now().Add(15 * time.Second))
		var e event
		if err := frames.Receive(ws, &e); err != nil {
			t.Fatalf("receive: %v", err)
		}
		return e
	}
	if e := next(); e.Type != "ADDED" || e.Object.Metadata.Name != "before" {
		t.Fatalf("first message %+v; want the existing ConfigMap ADDED", e)
	}
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"after"}}`, http.StatusCreated)
	if e := next(); e.Type != "ADDED" || e.Object.Metadata.Name != "after" {
		t.Fatalf("second message %+v; want the new ConfigMap ADDED", e)
	}
	h.mustDo("DELETE", "/api/v1/namespaces/default/configmaps/after", "", "", http.StatusOK)
	if e := next(); e.Type != "DELETED" || e.Object.Metadata.Name != "after" {
		t.Fatalf("third message %+v; want it DELETED", e)
	}
	for i, isText := range text {
		if !isText {
			t.Errorf("message %d was a binary frame; want text for JSON", i)
		}
	}

	// Protobuf: binary messages, each one WatchEvent without the HTTP
	// stream's length prefix.
	pws := dial("application/vnd.kubernetes.protobuf")
	defer pws.Close()
	var binary bool
	var msg []byte
	raw := websocket.Codec{Unmarshal: func(data []byte, payloadType byte, v interface{}) error {
		binary, msg = payloadType == websocket.BinaryFrame, append([]byte(nil), data...)
		return nil
	}}
	_ = pws.SetReadDeadline(time.Now().Add(15 * time.Second))
	if err := raw.Receive(pws, nil); err != nil {
		t.Fatalf("receive protobuf: %v", err)
	}
	// The WatchEvent message itself (field 1 the type), its object in
	// kube's envelope.
	if !binary || !strings.HasPrefix(string(msg), "\n\x05ADDED") || !strings.Contains(string(msg), "k8s\x00") || !strings.Contains(string(msg), "before") {
		t.Errorf("protobuf message (binary %v) %q; want a binary frame holding the ADDED WatchEvent, unprefixed", binary, msg)
	}
}
