package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
)

// `tabula etcd` stands in for the etcd that tools such as
// controller-runtime's envtest start, and wait for, beside kube-apiserver:
// Tabula keeps its state in SQL, so the stand-in stores nothing. It
// answers etcd's health checks on --listen-client-urls (etcd's default
// http://localhost:2379) and says what it is to anything else. Every
// other etcd flag is accepted and ignored.

const etcdStandInNote = "this is tabula's etcd stand-in: Tabula keeps its state in SQL and needs no etcd; only /health, /livez and /readyz are answered\n"

func runEtcdStandIn(args []string, stderr io.Writer) int {
	urls := "http://localhost:2379"
	for i := 0; i < len(args); i++ {
		if !strings.HasPrefix(args[i], "-") {
			continue // a value of a flag given before it
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		switch name {
		case "h", "help", "version":
			fmt.Fprint(stderr, "Usage: etcd [etcd's flags]\n\n"+etcdStandInNote)
			return 0
		case "listen-client-urls":
			if !hasValue && i+1 < len(args) {
				i++
				value = args[i]
			}
			urls = value
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := serveEtcdStandIn(ctx, urls); err != nil {
		fmt.Fprintln(stderr, "tabula etcd:", err)
		return 1
	}
	return 0
}

// serveEtcdStandIn listens on each of the comma-separated http URLs until
// ctx ends.
func serveEtcdStandIn(ctx context.Context, urls string) error {
	mux := http.NewServeMux()
	healthy := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"health":"true","reason":""}`)
	}
	mux.HandleFunc("/health", healthy)
	mux.HandleFunc("/livez", healthy)
	mux.HandleFunc("/readyz", healthy)
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, strings.TrimSuffix(etcdStandInNote, "\n"), http.StatusNotFound)
	})
	srv := &http.Server{Handler: mux}
	var hosts []string
	for _, raw := range strings.Split(urls, ",") {
		u, err := url.Parse(strings.TrimSpace(raw))
		if err != nil {
			return fmt.Errorf("--listen-client-urls: %w", err)
		}
		if u.Scheme != "http" {
			return fmt.Errorf("--listen-client-urls %s: the stand-in serves http only", raw)
		}
		hosts = append(hosts, u.Host)
	}
	var listeners []net.Listener
	for _, host := range hosts {
		l, err := net.Listen("tcp", host)
		if err != nil {
			for _, l := range listeners {
				l.Close()
			}
			return err
		}
		listeners = append(listeners, l)
	}
	errs := make(chan error, len(listeners))
	for _, l := range listeners {
		go func() { errs <- srv.Serve(l) }()
	}
	select {
	case <-ctx.Done():
		return srv.Close()
	case err := <-errs:
		srv.Close()
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return err
	}
}
