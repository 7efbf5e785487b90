package dbtest

import (
	"io"
	"net"
	"sync"
	"testing"
)

// CutProxy forwards TCP connections to a database and can cut them all
// and refuse new ones, simulating a database outage, then come back on
// the same address.
type CutProxy struct {
	target string
	// Addr is the proxy's loopback address; point the database URL at it.
	Addr  string
	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func NewCutProxy(t testing.TB, target string) *CutProxy {
	p := &CutProxy{target: target, conns: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.Addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.Cut)
	return p
}

func (p *CutProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			d, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[d] = true, true
			p.mu.Unlock()
			go func() { io.Copy(d, c); d.Close() }()
			go func() { io.Copy(c, d); c.Close() }()
		}
	}()
}

// Cut closes the listener and every forwarded connection.
func (p *CutProxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// Restore listens again on the same address.
func (p *CutProxy) Restore(t testing.TB) {
	ln, err := net.Listen("tcp", p.Addr)
	if err != nil {
		t.Fatalf("proxy relisten: %v", err)
	}
	p.serve(ln)
}
