package main

import (
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseFlags(t *testing.T) {
	t.Setenv("TABULA_DB", "postgres://env/db")
	t.Setenv("TABULA_LISTEN", "0.0.0.0:7443")
	t.Setenv("TABULA_TLS_SAN", "env.example")
	m := NewMain()
	if err := m.ParseFlags([]string{"--listen", "127.0.0.1:9443", "--tls-san", "a.example,10.0.0.1", "--tls-san", "b.example", "--event-ttl", "2h"}); err != nil {
		t.Fatal(err)
	}
	c := m.Config
	if c.DB != "postgres://env/db" {
		t.Errorf("DB = %q; want the TABULA_DB value", c.DB)
	}
	if c.Listen != "127.0.0.1:9443" {
		t.Errorf("Listen = %q; want the flag to win over TABULA_LISTEN", c.Listen)
	}
	if want := []string{"env.example", "a.example", "10.0.0.1", "b.example"}; !reflect.DeepEqual(c.TLSSANs, want) {
		t.Errorf("TLSSANs = %v; want %v", c.TLSSANs, want)
	}
	if c.EventTTL != 2*time.Hour || c.DataDir != "tabula-data" || c.CompactionWindow != 5*time.Minute {
		t.Errorf("EventTTL %v, DataDir %q, CompactionWindow %v; want 2h, tabula-data, 5m", c.EventTTL, c.DataDir, c.CompactionWindow)
	}
	if err := NewMain().ParseFlags([]string{"extra"}); err == nil {
		t.Error("ParseFlags accepted a stray argument")
	}
	t.Setenv("TABULA_EVENT_TTL", "soon")
	if err := NewMain().ParseFlags(nil); err == nil {
		t.Error("ParseFlags accepted TABULA_EVENT_TTL=soon")
	}
}

// Byte sizes are Kubernetes quantities; the watch flags keep their
// defaults unless set.
func TestByteSizeFlags(t *testing.T) {
	m := NewMain()
	if err := m.ParseFlags(nil); err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.WatchBuffer != 4<<20 || c.MaxWatchesPerUser != 1000 || c.MemoryLimit != 0 {
		t.Errorf("defaults: watch buffer %d, watches per user %d, memory limit %d; want 4Mi, 1000, none", c.WatchBuffer, c.MaxWatchesPerUser, c.MemoryLimit)
	}
	m = NewMain()
	if err := m.ParseFlags([]string{"--watch-buffer", "512Ki", "--memory-limit", "1.5Gi", "--max-watches-per-user", "7"}); err != nil {
		t.Fatal(err)
	}
	if c := m.Config; c.WatchBuffer != 512<<10 || c.MemoryLimit != 3<<29 || c.MaxWatchesPerUser != 7 {
		t.Errorf("watch buffer %d, memory limit %d, watches per user %d; want 512Ki, 1.5Gi, 7", c.WatchBuffer, c.MemoryLimit, c.MaxWatchesPerUser)
	}
	for _, bad := range []string{"lots", "-1Mi", "1.5"} {
		if err := NewMain().ParseFlags([]string{"--memory-limit", bad}); err == nil {
			t.Errorf("--memory-limit %s accepted", bad)
		}
	}
}

func TestVersionIsPlainSemver(t *testing.T) {
	v := Version()
	if v.Major != "1" || v.Minor != "35" || v.GitVersion != "v1.35.0+tabula" {
		t.Fatalf("version = %s.%s %s; want 1.35 v1.35.0+tabula", v.Major, v.Minor, v.GitVersion)
	}
	// kube-apiserver 1.35's compatibility fields (its recorded /version).
	if v.EmulationMajor != "1" || v.EmulationMinor != "35" || v.MinCompatibilityMajor != "1" || v.MinCompatibilityMinor != "34" {
		t.Errorf("emulation %s.%s, min compatibility %s.%s; want 1.35 and 1.34", v.EmulationMajor, v.EmulationMinor, v.MinCompatibilityMajor, v.MinCompatibilityMinor)
	}
}

func TestClientAddr(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0:6443": "127.0.0.1:6443", "[::]:6443": "127.0.0.1:6443", "10.1.2.3:1": "10.1.2.3:1"} {
		if got := clientAddr(in); got != want {
			t.Errorf("clientAddr(%q) = %q; want %q", in, got, want)
		}
	}
}

// tabula serve --help lists every flag with its environment variable and
// its default, and ParseFlags reports the request as flag.ErrHelp (main
// prints the help and exits 0).
func TestServeHelp(t *testing.T) {
	for _, arg := range []string{"--help", "-h"} {
		m := NewMain()
		if err := m.ParseFlags([]string{arg}); !errors.Is(err, flag.ErrHelp) {
			t.Fatalf("ParseFlags(%s) = %v; want flag.ErrHelp", arg, err)
		}
	}
	m := NewMain()
	var out strings.Builder
	m.WriteUsage(&out)
	help := out.String()
	n := 0
	m.flags.VisitAll(func(f *flag.Flag) {
		n++
		for _, want := range []string{"--" + f.Name + " ", envName(f.Name)} {
			if !strings.Contains(help, want) {
				t.Errorf("help does not mention %q:\n%s", want, help)
			}
		}
	})
	if n < 14 {
		t.Fatalf("help covered %d flags; want every flag of tabula serve", n)
	}
	for _, want := range []string{"TABULA_DATA_DIR, default tabula-data", "TABULA_LISTEN, default 127.0.0.1:6443", "relative to --data-dir"} {
		if !strings.Contains(help, want) {
			t.Errorf("help does not say %q:\n%s", want, help)
		}
	}
}

// A relative SQLite path in --db is relative to --data-dir, not to the
// directory tabula was started in.
func TestRelativeSQLitePathIsInDataDir(t *testing.T) {
	t.Chdir(t.TempDir())
	dataDir := t.TempDir()
	m := NewMain()
	if err := m.ParseFlags([]string{"--db", "sqlite://sub/rel.db", "--data-dir", dataDir, "--listen", "127.0.0.1:0", "--log-level", "error"}); err != nil {
		t.Fatal(err)
	}
	if err := m.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dataDir, "sub", "rel.db")); err != nil {
		t.Errorf("database not in --data-dir: %v", err)
	}
	if _, err := os.Stat(filepath.Join("sub", "rel.db")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("stat of sub/rel.db in the working directory = %v; want it missing", err)
	}
}

// TestServiceRangeFlags: the Service ranges parse, and bad ones are named.
func TestServiceRangeFlags(t *testing.T) {
	for _, c := range []struct {
		cidr, ports, err string
	}{
		{"10.96.0.0/12", "30000-32767", ""},
		{"fd00:10:96::/112", "30000", ""},
		{"10.96.0.1/12", "30000-32767", "--service-cluster-ip-range"},
		{"10.96.0.0/31", "30000-32767", "too small"},
		{"nonsense", "30000-32767", "--service-cluster-ip-range"},
		{"10.96.0.0/12", "32767-30000", "--service-node-port-range"},
		{"10.96.0.0/12", "0-10", "--service-node-port-range"},
	} {
		r, err := serviceRanges(&Config{ServiceCIDR: c.cidr, NodePorts: c.ports})
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s %s: %v", c.cidr, c.ports, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s %s: error %v; want one naming %s", c.cidr, c.ports, err, c.err)
		case c.err == "" && r.ClusterIPs.String() != c.cidr:
			t.Errorf("%s: parsed as %s", c.cidr, r.ClusterIPs)
		}
	}
}

// TestInflightLimitsRefusedAsKube: the in-flight limits kube-apiserver
// refuses stop the start with its messages; without priority and
// fairness, 0 is no limit.
func TestInflightLimitsRefusedAsKube(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--max-requests-inflight", "-1"}, "--max-requests-inflight can not be negative value"},
		{[]string{"--max-mutating-requests-inflight", "-5"}, "--max-mutating-requests-inflight can not be negative value"},
		{[]string{"--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0"},
			"invalid configuration: MaxRequestsInFlight=0 and MaxMutatingRequestsInFlight=0; they must add up to something positive"},
		{[]string{"--max-requests-inflight", "0", "--max-mutating-requests-inflight", "0", "--enable-priority-and-fairness=false"}, ""},
	} {
		m := NewMain()
		args := append([]string{"--db", "sqlite://:memory:", "--data-dir", t.TempDir(), "--listen", "127.0.0.1:0", "--log-level", "error"}, c.args...)
		if err := m.ParseFlags(args); err != nil {
			t.Fatal(err)
		}
		err := m.Run(context.Background())
		if err == nil {
			m.Close()
		}
		if c.want == "" && err != nil || c.want != "" && (err == nil || err.Error() != c.want) {
			t.Errorf("%v: %v; want %q", c.args, err, c.want)
		}
	}
}
