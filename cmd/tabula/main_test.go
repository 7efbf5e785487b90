package main

import (
	"reflect"
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

func TestVersionIsPlainSemver(t *testing.T) {
	v := Version()
	if v.Major != "1" || v.Minor != "35" || v.GitVersion != "v1.35.0+tabula" {
		t.Fatalf("version = %s.%s %s; want 1.35 v1.35.0+tabula", v.Major, v.Minor, v.GitVersion)
	}
}

func TestClientAddr(t *testing.T) {
	for in, want := range map[string]string{"0.0.0.0:6443": "127.0.0.1:6443", "[::]:6443": "127.0.0.1:6443", "10.1.2.3:1": "10.1.2.3:1"} {
		if got := clientAddr(in); got != want {
			t.Errorf("clientAddr(%q) = %q; want %q", in, got, want)
		}
	}
}
