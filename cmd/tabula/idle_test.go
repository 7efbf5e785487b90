package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"
)

// TestIdleConnectionsClose: a keep-alive connection left idle is closed by
// the server after --idle-timeout.
func TestIdleConnectionsClose(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--idle-timeout", "1s", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	conn, err := tls.Dial("tcp", m.Addr, &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"http/1.1"}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET /healthz HTTP/1.1\r\nHost: tabula\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(conn)
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.Close {
		t.Fatal("the server asked to close after one request; want keep-alive")
	}
	idleFrom := time.Now()
	_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
	_, err = r.ReadByte()
	if !errors.Is(err, io.EOF) {
		t.Fatalf("idle connection: %v; want the server to close it", err)
	}
	if idle := time.Since(idleFrom); idle < 900*time.Millisecond || idle > 10*time.Second {
		t.Errorf("closed after %v idle; want about the 1s --idle-timeout", idle)
	}
}
