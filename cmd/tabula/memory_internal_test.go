package main

import "testing"

// Memory is returned after a burst (much more held than live, little
// allocation since), never under load or when little is to be gained.
func TestBurstOver(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name               string
		held, live, recent uint64
		want               bool
	}{
		{"after a burst, idle", 2000 * mib, 30 * mib, 1 * mib, true},
		{"after a burst, a little traffic", 500 * mib, 30 * mib, 50 * mib, true},
		{"under load: a collection comes soon anyway", 500 * mib, 30 * mib, 400 * mib, false},
		{"idle after start-up", 15 * mib, 9 * mib, mib / 4, true},
		{"a quiet spell of light traffic", 90 * mib, 30 * mib, 10 * mib, true},
		{"little to gain", 33 * mib, 30 * mib, 0, false},
		{"live above held (stale live figure)", 30 * mib, 40 * mib, 0, false},
	} {
		if got := burstOver(c.held, c.live, c.recent); got != c.want {
			t.Errorf("%s: burstOver(%d, %d, %d MiB) = %v; want %v", c.name, c.held/mib, c.live/mib, c.recent/mib, got, c.want)
		}
	}
}
