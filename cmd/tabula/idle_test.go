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

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

// TestIdleWatchOutlivesTheWriteTimeout: over HTTP/2, where a stream's
// write deadline resets it when it passes, a watch with nothing to send
// lives past --watch-write-timeout until its own timeoutSeconds.
func TestIdleWatchOutlivesTheWriteTimeout(t *testing.T) {
	_, cs := serve(t, "--watch-write-timeout", "500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	timeout := int64(3)
	w, err := cs.CoreV1().ConfigMaps("kube-public").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout, LabelSelector: "nothing=matches"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	for ev := range w.ResultChan() {
		t.Errorf("unexpected event %s: %v", ev.Type, ev.Object)
	}
	if lived := time.Since(started); lived < 2500*time.Millisecond {
		t.Errorf("the idle watch ended after %v; want it to last its 3s timeoutSeconds past the 500ms write timeout", lived)
	}
}
