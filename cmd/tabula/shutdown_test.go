package main

import (
	"context"
	"crypto/tls"
	"net/http"
	"testing"
	"time"
)

// TestShutdownDelay: after SIGTERM (Close) the server keeps answering for
// the delay with /readyz failing, then stops listening.
func TestShutdownDelay(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0",
		"--shutdown-delay-duration", "2s", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	readyz := func() int {
		resp, err := client.Get("https://" + m.Addr + "/readyz")
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	deadline := time.Now().Add(10 * time.Second)
	for readyz() != http.StatusOK {
		if time.Now().After(deadline) {
			t.Fatal("never ready")
		}
		<-time.After(10 * time.Millisecond)
	}
	closed := make(chan error, 1)
	go func() { closed <- m.Close() }()
	sawNotReady := false
	for !sawNotReady {
		switch code := readyz(); code {
		case http.StatusInternalServerError:
			sawNotReady = true
		case 0:
			t.Fatal("listener closed before readiness was reported as failing")
		}
	}
	if err := <-closed; err != nil {
		t.Fatalf("close: %v", err)
	}
	if code := readyz(); code != 0 {
		t.Fatalf("after Close /readyz answered %d; want no listener", code)
	}
}
