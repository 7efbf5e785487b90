package main

import (
	"context"
	"io"
	"testing"
	"time"
)

// TestProbe: tabula probe exits 0 once /readyz answers 200, 1 when nothing
// answers.
func TestProbe(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	url := "https://" + m.Addr + "/readyz"
	deadline := time.Now().Add(20 * time.Second)
	for probe([]string{url}, io.Discard) != 0 {
		if time.Now().After(deadline) {
			t.Fatal("probe never succeeded against a running server")
		}
		<-time.After(20 * time.Millisecond)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if code := probe([]string{url}, io.Discard); code != 1 {
		t.Errorf("probe of a stopped server exited %d; want 1", code)
	}
}
