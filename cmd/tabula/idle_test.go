package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
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
// lives past --watch-write-timeout until its own timeoutSeconds: one that
// never had an event, and one that went quiet after its events (the
// deadline its writes set is lifted once it is idle).
func TestIdleWatchOutlivesTheWriteTimeout(t *testing.T) {
	_, cs := serve(t, "--watch-write-timeout", "500ms")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	timeout := int64(3)
	quiet, err := cs.CoreV1().ConfigMaps("kube-public").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout, LabelSelector: "nothing=matches"})
	if err != nil {
		t.Fatal(err)
	}
	busy, err := cs.CoreV1().ConfigMaps("kube-public").Watch(ctx, metav1.ListOptions{TimeoutSeconds: &timeout, LabelSelector: "idle-test=yes"})
	if err != nil {
		t.Fatal(err)
	}
	started := time.Now()
	for i := range 3 {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("idle-%d", i), Labels: map[string]string{"idle-test": "yes"}}}
		if _, err := cs.CoreV1().ConfigMaps("kube-public").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	added := 0
	for ev := range busy.ResultChan() {
		if ev.Type != watch.Added {
			t.Errorf("unexpected event %s: %v", ev.Type, ev.Object)
		}
		added++
	}
	if lived := time.Since(started); lived < 2500*time.Millisecond || added != 3 {
		t.Errorf("the watch that went quiet after %d of 3 events ended after %v; want it to last its 3s timeoutSeconds past the 500ms write timeout", added, lived)
	}
	for ev := range quiet.ResultChan() {
		t.Errorf("unexpected event %s: %v", ev.Type, ev.Object)
	}
	if lived := time.Since(started); lived < 2500*time.Millisecond {
		t.Errorf("the idle watch ended after %v; want it to last its 3s timeoutSeconds past the 500ms write timeout", lived)
	}
}
