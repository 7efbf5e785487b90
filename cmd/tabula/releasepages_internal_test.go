//go:build linux

package main

import (
	"context"
	"os"
	"testing"
	"time"
)

// TestReleaseStartupPages: the binary's read-only pages that start-up
// left mapped (here the test binary's own) are unmapped, and the process
// goes on running its code, which is mapped back as needed.
func TestReleaseStartupPages(t *testing.T) {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Fatal(err)
	}
	before, err := residentOf(exe)
	if err != nil {
		t.Fatal(err)
	}
	if before < 8<<20 {
		t.Fatalf("only %d KiB of %s resident before; the test needs start-up's pages to be there", before>>10, exe)
	}
	after, err := releaseStartupPages()
	if err != nil {
		t.Fatal(err)
	}
	if after > before/2 {
		t.Errorf("resident after releasing: %d KiB of %d KiB; want less than half", after>>10, before>>10)
	}
	// Code and read-only data that were unmapped still work.
	if again, err := residentOf(exe); err != nil || again <= 0 {
		t.Errorf("resident read again: %d, %v", again, err)
	}
}

// TestServeReleasesStartupPages: tabula serve releases them once its
// start-up has settled, and with --release-startup-pages=false keeps them.
func TestServeReleasesStartupPages(t *testing.T) {
	for _, release := range []bool{true, false} {
		args := []string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}
		if !release {
			args = append(args, "--release-startup-pages=false")
		}
		m := NewMain()
		if err := m.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		if m.Config.ReleaseStartupPages != release {
			t.Fatalf("%v: --release-startup-pages is %v; want %v", args, m.Config.ReleaseStartupPages, release)
		}
		if err := m.Run(context.Background()); err != nil {
			t.Fatal(err)
		}
		select {
		case <-m.startup.settled:
		case <-time.After(settleAtMost + 10*returnCheck):
			t.Fatalf("start-up did not settle within %v", settleAtMost+10*returnCheck)
		}
		if got := m.startup.released.Load(); got != release {
			t.Errorf("with --release-startup-pages=%v: released %v", release, got)
		}
		m.Close()
	}
}
