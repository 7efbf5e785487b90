package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"
)

// TestTellerSetsPollInterval: while a source tells the poller of other
// processes' commits, it ticks every quietPoll; once the source fails it
// ticks every PollInterval again, the source is started again after a
// failure, and a source that cannot be set up is not tried again.
func TestTellerSetsPollInterval(t *testing.T) {
	s, err := Open(context.Background(), "sqlite://:memory:", Options{PollInterval: 100 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	h := s.hub
	if got := h.pollEvery(); got != 100*time.Millisecond {
		t.Fatalf("with nothing telling: ticks every %v; want 100ms", got)
	}
	telling := make(chan time.Duration)
	drop := make(chan error)
	done := make(chan struct{})
	calls := 0
	go func() {
		defer close(done)
		h.runTeller("test source", func(ctx context.Context, ready func()) error {
			calls++
			if calls == 1 {
				ready()
				telling <- h.pollEvery()
				return <-drop
			}
			return fmt.Errorf("%w: no such thing", errCannotTell)
		})
	}()
	if got := <-telling; got != quietPoll {
		t.Fatalf("while told: ticks every %v; want %v", got, quietPoll)
	}
	drop <- errors.New("connection lost")
	<-done // started again after its backoff, then given up for good
	if calls != 2 {
		t.Fatalf("source started %d times; want 2 (once more after the failure, not after the one that cannot be mended)", calls)
	}
	if got := h.pollEvery(); got != 100*time.Millisecond {
		t.Fatalf("after the source failed: ticks every %v; want 100ms", got)
	}
}
