package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	// A CronJob names its time zone; a bare binary on a host without
	// zoneinfo must know them all, as kube-apiserver embeds them.
	_ "time/tzdata"
)

func main() {
	name, args, ok := command(os.Args)
	if !ok {
		usage(os.Stderr)
		os.Exit(2)
	}
	switch name {
	case "version", "--version":
		fmt.Println(Version().GitVersion)
		return
	case "serve", "kube-apiserver":
	case "etcd":
		os.Exit(runEtcdStandIn(args, os.Stderr))
	case "probe":
		os.Exit(probe(args, os.Stderr))
	case "backup":
		os.Exit(runBackup(args, os.Stdout, os.Stderr))
	case "restore":
		os.Exit(runRestore(args, os.Stdout, os.Stderr))
	case "help", "-h", "--help":
		usage(os.Stdout)
		return
	default:
		fmt.Fprintf(os.Stderr, "tabula: unknown command %q\n", name)
		usage(os.Stderr)
		os.Exit(2)
	}
	if name == "kube-apiserver" && slices.ContainsFunc(args, func(a string) bool { return a == "--version" || a == "--version=true" }) {
		// Tools ask kube-apiserver its version so.
		fmt.Println("Kubernetes " + Version().GitVersion)
		return
	}
	m := NewMain()
	if err := parseServeArgs(m, name, args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			m.WriteUsage(os.Stdout)
			return
		}
		fmt.Fprintln(os.Stderr, "tabula:", err)
		fmt.Fprintf(os.Stderr, "Run 'tabula %s --help' for the flags.\n", name)
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := m.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "tabula:", err)
		os.Exit(1)
	}
	<-ctx.Done()
	if err := m.Close(); err != nil {
		fmt.Fprintln(os.Stderr, "tabula: shutdown:", err)
		os.Exit(1)
	}
}

// command is the command and its arguments. Under the name
// kube-apiserver or etcd (a link to it, as tools that start those
// binaries from a directory find them) the binary is that command.
func command(argv []string) (name string, args []string, ok bool) {
	switch base := filepath.Base(argv[0]); base {
	case "kube-apiserver", "etcd":
		return base, argv[1:], true
	}
	if len(argv) < 2 {
		return "", nil, false
	}
	return argv[1], argv[2:], true
}

func usage(w io.Writer) {
	fmt.Fprint(w, `Usage: tabula <command> [flags]

Commands:
  serve     serve the Kubernetes API (tabula serve --help for flags)
  probe     GET a health endpoint (default https://127.0.0.1:6443/readyz);
            exit 0 when it answers 200 (container health checks)
  backup    copy an SQLite database while it serves (tabula backup FILE)
  restore   put a backup back, with every replica stopped (tabula restore --from FILE)
  version   print the version

  kube-apiserver  serve, from kube-apiserver's command line (for tools
            that start kube-apiserver, such as controller-runtime's envtest)
  etcd      stand in for the etcd such tools start beside kube-apiserver:
            answer its health check, store nothing

Linked or copied under the name kube-apiserver or etcd, the binary is
that command.
`)
}

// probe is a container health check for images without curl: the health
// endpoints are public, and the check runs beside the server, so the
// certificate is not verified.
func probe(args []string, stderr io.Writer) int {
	url := "https://127.0.0.1:6443/readyz"
	if len(args) > 0 {
		url = args[0]
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	resp, err := client.Get(url)
	if err != nil {
		fmt.Fprintln(stderr, "tabula probe:", err)
		return 1
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintln(stderr, "tabula probe:", url, "answered", resp.Status)
		return 1
	}
	return 0
}
