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
// start-up has settled, unless --release-startup-pages=false.
func TestServeReleasesStartupPages(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if !m.Config.ReleaseStartupPages {
		t.Fatal("--release-startup-pages is off by default; want on")
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	select {
	case <-m.startupPagesReleased:
	case <-time.After(settleAtMost + 10*returnCheck):
		t.Fatalf("the start-up pages were not released within %v", settleAtMost+10*returnCheck)
	}

	off := NewMain()
	if err := off.ParseFlags([]string{"--release-startup-pages=false"}); err != nil {
		t.Fatal(err)
	}
	if off.Config.ReleaseStartupPages {
		t.Error("--release-startup-pages=false left it on")
	}
}
