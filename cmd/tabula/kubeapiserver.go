package main

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strconv"
)

// `tabula kube-apiserver` (or the binary under the name kube-apiserver)
// takes kube-apiserver's command line, so tools that start kube-apiserver
// themselves — controller-runtime's envtest above all — start Tabula in
// its place. Tabula's own flags keep their meaning; these are the ones
// only kube-apiserver has, and the defaults that differ from `serve`'s:
//   - --bind-address and --secure-port are the listen address
//     (kube's defaults: 0.0.0.0 and 6443);
//   - --cert-dir is the data directory, and serves its apiserver.crt and
//     apiserver.key when both are there and --tls-cert-file is not given,
//     as kube-apiserver does;
//   - without --db the state is kept in memory and ends with the process,
//     as a test's etcd does;
//   - the etcd, storage and watch-cache flags are accepted and ignored:
//     Tabula keeps its state in SQL (`tabula etcd` stands in for the etcd
//     such tools start beside it).

// ignoredKubeFlags are kube-apiserver's flags that mean nothing to Tabula
// but that tools pass as a matter of course; any other unknown flag is
// refused, as kube-apiserver refuses one.
var ignoredKubeFlags = []string{
	"etcd-servers", "etcd-servers-overrides", "etcd-prefix", "etcd-cafile", "etcd-certfile", "etcd-keyfile",
	"etcd-compaction-interval", "etcd-count-metric-poll-period", "etcd-db-metric-poll-interval",
	"storage-backend", "storage-media-type", "watch-cache-sizes", "default-watch-cache-size",
	"endpoint-reconciler-type", "v", "vmodule",
}

// ignoredKubeBoolFlags are the ignored ones that take no value.
var ignoredKubeBoolFlags = []string{"watch-cache"}

// kubeAPIServerUsage heads `tabula kube-apiserver --help`.
const kubeAPIServerUsage = `Usage: kube-apiserver [flags]

Tabula in kube-apiserver's place: kube-apiserver's command line, for tools
that start kube-apiserver themselves (controller-runtime's envtest). State
is kept in memory unless --db names a database; the etcd, storage and
watch-cache flags are accepted and ignored.

Flags:
`

// ParseKubeAPIServerFlags reads kube-apiserver's command line into m.
func (m *Main) ParseKubeAPIServerFlags(args []string) error {
	c := &m.Config
	// Set below from --bind-address, --secure-port and --cert-dir unless
	// --listen or --data-dir say otherwise.
	c.Listen, c.DataDir = "", ""
	fs, err := m.defineFlags("kube-apiserver")
	if err != nil {
		return err
	}
	m.usage = kubeAPIServerUsage
	bind, port, certDir := "0.0.0.0", 6443, "/var/run/kubernetes"
	fs.StringVar(&bind, "bind-address", bind, "the `IP` to listen on (with --secure-port; --listen wins)")
	fs.IntVar(&port, "secure-port", port, "the `port` to serve HTTPS on")
	fs.StringVar(&certDir, "cert-dir", certDir, "the data `directory` (--data-dir wins); its apiserver.crt and apiserver.key are served when --tls-cert-file is not given")
	for _, name := range ignoredKubeFlags {
		fs.Func(name, "accepted and ignored", func(string) error { return nil })
	}
	for _, name := range ignoredKubeBoolFlags {
		fs.BoolFunc(name, "accepted and ignored", func(string) error { return nil })
	}
	if err := m.parseFlags(fs, args); err != nil {
		return err
	}
	if port <= 0 || port > 65535 {
		return errors.New("--secure-port must be between 1 and 65535")
	}
	if c.Listen == "" {
		c.Listen = net.JoinHostPort(bind, strconv.Itoa(port))
	}
	if c.DataDir == "" {
		c.DataDir = certDir
	}
	if c.DB == "" {
		c.DB = "sqlite://:memory:"
	}
	if c.TLSCertFile == "" && c.TLSPrivateKeyFile == "" {
		crt, key := filepath.Join(certDir, "apiserver.crt"), filepath.Join(certDir, "apiserver.key")
		if exists(crt) && exists(key) {
			c.TLSCertFile, c.TLSPrivateKeyFile = crt, key
		}
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// parseServeArgs reads the command line of the mode name runs in.
func parseServeArgs(m *Main, name string, args []string) error {
	if name == "kube-apiserver" {
		return m.ParseKubeAPIServerFlags(args)
	}
	return m.ParseFlags(args)
}
