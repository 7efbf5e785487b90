package controllers

import (
	"testing"
	"time"
)

// TestRestartBackoffStartsOverAfterAHealthyRun: failing runs double the
// wait up to 5 s; a run that lasted a minute or more starts it over, so a
// watch closed now and then is not restarted 5 s late for ever after.
func TestRestartBackoffStartsOverAfterAHealthyRun(t *testing.T) {
	var got []time.Duration
	var b time.Duration
	for range 8 {
		b = nextBackoff(b, time.Millisecond)
		got = append(got, b)
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits after failing runs = %v, want %v", got, want)
		}
	}
	if b := nextBackoff(5*time.Second, 59*time.Second); b != 5*time.Second {
		t.Errorf("after a 59 s run the wait is %v, want it kept at 5s", b)
	}
	if b := nextBackoff(5*time.Second, time.Minute); b != 100*time.Millisecond {
		t.Errorf("after a minute's run the wait is %v, want 100ms", b)
	}
}
