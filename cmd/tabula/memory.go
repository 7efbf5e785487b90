package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// ByteSize is a flag holding a number of bytes, written as a Kubernetes
// quantity (4Mi, 1Gi, 500M or a plain number).
type ByteSize int64

func (b *ByteSize) String() string {
	if *b == 0 {
		return ""
	}
	return resource.NewQuantity(int64(*b), resource.BinarySI).String()
}

func (b *ByteSize) Set(v string) error {
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return fmt.Errorf("%q is not a quantity of bytes (e.g. 512Mi, 2Gi)", v)
	}
	n := q.Value() // rounded up: a fraction of a byte is refused below
	if q.Sign() < 0 || resource.NewQuantity(n, resource.BinarySI).Cmp(q) != 0 {
		return fmt.Errorf("%q is not a quantity of bytes (e.g. 512Mi, 2Gi)", v)
	}
	*b = ByteSize(n)
	return nil
}

// Memory that a burst took (many watches opened at once, a large list,
// the server's own start-up) is garbage once the burst is over, but Go
// collects it only when the heap grows again or, on an idle server, after
// its two-minute forced collection, and keeps the freed pages until its
// scavenger returns them gradually, down to about twice the live heap.
// returnMemory watches for that state — more heap held than live, and too
// little allocation for a collection to come soon — and then collects and
// returns the memory at once. Under load allocation is high and it does
// nothing: the collector runs often enough on its own. An idle server so
// holds about its live heap: a fresh one 24 MiB of anonymous memory
// instead of 30 (one collection of its ~9 MiB live heap, 20–40 ms).
const (
	returnCheck  = 2 * time.Second
	returnExcess = 4 << 20
)

var returnSamples = []metrics.Sample{
	{Name: "/memory/classes/heap/objects:bytes"},
	{Name: "/memory/classes/heap/free:bytes"},
	{Name: "/gc/heap/live:bytes"},
	{Name: "/gc/heap/allocs:bytes"},
}

// Start-up has settled at the first check that finds no more than
// quietAllocs allocated since the last (a fresh server's start-up
// allocates ~50 MiB within the first, then a few hundred KiB at most in
// each while idle), or, on a server busy from the start, after
// settleAtMost.
const (
	quietAllocs  = 1 << 20
	settleAtMost = 30 * time.Second
)

// startup is what returnMemory tells of start-up: settled is closed once
// it has settled, after released is set to whether the binary's start-up
// pages were then released.
type startup struct {
	settled  chan struct{}
	released atomic.Bool
}

// returnMemory runs until ctx ends. Once start-up has settled it
// releases the binary's start-up pages, with releasePages, and tells st.
func returnMemory(ctx context.Context, log *slog.Logger, releasePages bool, st *startup) {
	t := time.NewTicker(returnCheck)
	defer t.Stop()
	var lastAllocs uint64
	begun := time.Now()
	settled := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		metrics.Read(returnSamples)
		held := returnSamples[0].Value.Uint64() + returnSamples[1].Value.Uint64()
		live := returnSamples[2].Value.Uint64()
		allocs := returnSamples[3].Value.Uint64()
		recent := allocs - lastAllocs
		lastAllocs = allocs
		if !settled && (recent <= quietAllocs || time.Since(begun) >= settleAtMost) {
			settled = true
			if releasePages {
				start := time.Now()
				kept, err := releaseStartupPages()
				if err != nil {
					log.Debug("could not release the start-up pages of the binary", "err", err)
				} else {
					log.Debug("released the start-up pages of the binary", "resident_kib", kept>>10, "took", time.Since(start).Round(time.Microsecond))
					st.released.Store(true)
				}
			}
			close(st.settled)
		}
		if !burstOver(held, live, recent) {
			continue
		}
		start := time.Now()
		debug.FreeOSMemory()
		log.Debug("returned memory after a burst", "held_mib", held>>20, "live_mib", live>>20, "took", time.Since(start).Round(time.Microsecond))
	}
}

// burstOver says the heap holds much more than is live (held: objects,
// live or not, and free pages not yet returned) while too little was
// allocated since the last check (recent) for a collection to come soon:
// at that rate the excess would take 8 s or more to allocate, so light
// traffic is collected at most that often. (With a tenth, 20 s, one of
// two fresh servers still held its start-up garbage 20 s after start:
// its controllers' first rounds allocate more than a tenth of it.)
func burstOver(held, live, recent uint64) bool {
	if held < live {
		return false
	}
	excess := held - live
	return excess >= returnExcess && recent <= excess/4
}

// Start-up, up to listening, makes several times its live heap in
// short-lived garbage (kube's schemes and field types, the registry, the
// system namespaces): at the default GOGC of 100 the collector runs
// through it cycle after cycle. Until Run returns the heap may grow to
// five times what is live instead of twice. Kept up to /readyz (the
// bootstrap policy's writes too) it saved more time, but left the idle
// heap ~2 MiB more fragmented; up to listening the idle heap is the same.
// A GOGC set by the user is left alone.
const startupGCPercent = 400

// relaxGCForStartup raises the GC percent and returns what puts it back.
func relaxGCForStartup() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	prev := debug.SetGCPercent(startupGCPercent)
	return func() { debug.SetGCPercent(prev) }
}

// setMemoryLimit applies --memory-limit; without it GOMEMLIMIT (read by
// the runtime itself) stays in force.
func setMemoryLimit(limit ByteSize) {
	if limit > 0 {
		debug.SetMemoryLimit(int64(limit))
	}
}
