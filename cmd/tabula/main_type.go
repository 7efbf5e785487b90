package main

import (
	"cmp"
	"context"
	"crypto"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"log/slog"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/auth"
	"github.com/tabula-dev/tabula/server/auth/authnconfig"
	"github.com/tabula-dev/tabula/server/auth/authz"
	"github.com/tabula-dev/tabula/server/openapi"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/encrypt"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// APILevel is the Kubernetes API version Tabula implements; clients pick
// behaviour (and the kubectl dispatcher its binary) from it.
const (
	apiMajor = "1"
	apiMinor = "35"
	apiPatch = "0"
	// apiMinorPrevious is the minor version before apiMinor.
	apiMinorPrevious = "34"
)

// Version describes this build in /version's shape. gitVersion is plain
// semver with build metadata, which Helm's kubeVersion checks accept.
func Version() version.Info {
	return version.Info{
		Major: apiMajor,
		Minor: apiMinor,
		// As kube-apiserver 1.35 reports them: it emulates its own
		// version and stays compatible with the one before.
		EmulationMajor:        apiMajor,
		EmulationMinor:        apiMinor,
		MinCompatibilityMajor: apiMajor,
		MinCompatibilityMinor: apiMinorPrevious,
		GitVersion:            "v" + apiMajor + "." + apiMinor + "." + apiPatch + "+tabula",
		GitTreeState:          "clean",
		GoVersion:             runtime.Version(),
		Compiler:              runtime.Compiler,
		Platform:              runtime.GOOS + "/" + runtime.GOARCH,
	}
}

// Config is everything `tabula serve` can be told.
type Config struct {
	DB string
	// DBStandbys are hot standbys (read replicas) of a PostgreSQL DB.
	DBStandbys    []string
	Listen        string
	DataDir       string
	TLSSANs       []string
	TokenAuthFile string
	// BootstrapTokenAuth accepts bootstrap tokens (kubeadm join, kubelet
	// TLS bootstrap), as kube-apiserver's --enable-bootstrap-token-auth.
	BootstrapTokenAuth bool
	// Token makes every replica started with it on one database share the
	// cluster's CA and service-account key, stored in the database sealed
	// with a key derived from it.
	Token string
	// TLSCertFile and TLSPrivateKeyFile serve another certificate;
	// ClientCAFile trusts another CA's client certificates too.
	TLSCertFile, TLSPrivateKeyFile, ClientCAFile string
	// KubeletClientCertificate and KubeletClientKey are what the server
	// presents to kubelets (default: a certificate of its own CA, for the
	// user kube-apiserver-kubelet-client in system:masters);
	// KubeletCertificateAuthority verifies kubelets' serving certificates
	// (default: not verified, as kube-apiserver without it);
	// KubeletPreferredAddressTypes orders the Node address types tried.
	KubeletClientCertificate, KubeletClientKey, KubeletCertificateAuthority string
	KubeletPreferredAddressTypes                                            []string
	// EncryptionProviderConfig is kube-apiserver's encryption-at-rest
	// configuration file.
	EncryptionProviderConfig string
	// PreviousToken rotates the token: secrets sealed with it are sealed
	// again with Token.
	PreviousToken string
	EventTTL      time.Duration
	// AdvertiseAddress is the IP the kubernetes Service's endpoints list
	// for this replica (default: the listen IP, or the host's first
	// non-loopback address).
	AdvertiseAddress string
	// ServiceCIDR and NodePorts are what Services allocate from.
	ServiceCIDR string
	NodePorts   string
	// RequestTimeout bounds non-long-running requests.
	RequestTimeout time.Duration
	// IdleTimeout closes keep-alive connections idle this long;
	// WatchWriteTimeout closes a watch whose client takes no frame for
	// this long.
	IdleTimeout       time.Duration
	WatchWriteTimeout time.Duration
	// WatchBuffer bounds, in bytes, the events a watcher may fall behind
	// by before it is closed (the client re-lists).
	WatchBuffer ByteSize
	// MaxWatchesPerUser bounds the watches one user holds at once
	// (system:masters excepted; 0: no limit).
	MaxWatchesPerUser int
	// AllowPrivileged: Pods may have privileged containers.
	AllowPrivileged bool
	// MemoryLimit is the Go runtime's soft memory limit (0: GOMEMLIMIT,
	// or none).
	MemoryLimit ByteSize
	// ReleaseStartupPages: once start-up has settled, the binary's pages
	// it read are handed back to the kernel (see releaseStartupPages).
	ReleaseStartupPages bool
	// Controllers switches Tabula's copies of kube-controller-manager's
	// controllers, in kcm's --controllers syntax.
	Controllers []string
	// MaxRequestsInflight and MaxMutatingRequestsInflight bound the
	// read-only and mutating requests served at once (0: no limit).
	MaxRequestsInflight         int
	MaxMutatingRequestsInflight int
	// PriorityAndFairness is kube's API Priority and Fairness (default on).
	PriorityAndFairness bool
	// ShutdownDelay keeps serving, with /readyz failing, this long after
	// SIGTERM, so load balancers stop sending traffic first.
	ShutdownDelay time.Duration
	// CompactionWindow is how much history is kept for watches and
	// paginated lists; CompactionInterval how often the compactor runs.
	CompactionWindow   time.Duration
	CompactionInterval time.Duration
	// QueryTimeout bounds one database query or write transaction.
	QueryTimeout time.Duration
	// Kubeconfig is where the admin kubeconfig is written (default
	// <data-dir>/kubeconfig).
	Kubeconfig string
	LogLevel   string
	// Profiling serves Go's profiles at /debug/pprof to authenticated
	// clients, as kube-apiserver's --profiling does (on by default there).
	Profiling bool
	// AuthorizationModes is kube-apiserver's --authorization-mode chain
	// (empty: Node,RBAC); AnonymousAuth its --anonymous-auth.
	AuthorizationModes []string
	AnonymousAuth      bool
	// anonymousAuthSet: --anonymous-auth was given (then a configuration
	// file may not have an anonymous section, as kube-apiserver says).
	anonymousAuthSet bool
	// AuthenticationConfig is kube-apiserver's --authentication-config.
	AuthenticationConfig string
	// Admission is kube-apiserver's --enable-admission-plugins,
	// --disable-admission-plugins, --admission-control-config-file and
	// (inverted) --enable-aggregator-routing.
	Admission registry.AdmissionConfig
	// RuntimeConfig is kube-apiserver's --runtime-config: the optional
	// group-versions switched on (schema.OptionalGroupVersions).
	RuntimeConfig []string
	// ServiceAccountIssuers are kube-apiserver's --service-account-issuer
	// (the first issues, all are accepted; default
	// https://kubernetes.default.svc.cluster.local), APIAudiences its
	// --api-audiences (default every issuer),
	// ServiceAccountMaxTokenExpiration its
	// --service-account-max-token-expiration, ServiceAccountJWKSURI its
	// --service-account-jwks-uri.
	ServiceAccountIssuers            []string
	APIAudiences                     []string
	ServiceAccountMaxTokenExpiration time.Duration
	ServiceAccountJWKSURI            string
	// ServiceAccountSigningKeyFile is kube-apiserver's
	// --service-account-signing-key-file (default: <data-dir>/pki/sa.key,
	// made on first start); ServiceAccountKeyFiles its
	// --service-account-key-file, which may name only that key here.
	ServiceAccountSigningKeyFile string
	ServiceAccountKeyFiles       []string
	// Audit is kube-apiserver's --audit-* flags.
	Audit server.AuditConfig
	// RequestHeader* are kube-apiserver's --requestheader-* flags
	// (front-proxy authentication).
	RequestHeaderClientCAFile                                                                                                                    string
	RequestHeaderAllowedNames, RequestHeaderUsernameHeaders, RequestHeaderUIDHeaders, RequestHeaderGroupHeaders, RequestHeaderExtraHeadersPrefix []string
	// ProxyClientCertFile and ProxyClientKeyFile are the client
	// certificate presented to aggregated API servers
	// (--proxy-client-cert-file, --proxy-client-key-file).
	ProxyClientCertFile, ProxyClientKeyFile string
}

// Main is one Tabula server process: flags in, server up, clean close.
type Main struct {
	Config Config
	// Addr is the address actually listened on, known after Run.
	Addr string
	// KubeconfigPath is the kubeconfig written by Run.
	KubeconfigPath string

	flags *flag.FlagSet
	// usage heads the flags in WriteUsage (default: tabula serve's).
	usage  string
	log    *slog.Logger
	store  *sqlstore.Store
	srv    *server.Server
	http   *http.Server
	cancel context.CancelFunc
	done   chan struct{}
	// startup tells when start-up settled and whether the binary's
	// start-up pages were released then.
	startup *startup
}

// defaultDB is the database without --db: SQLite in the data directory.
const defaultDB = "sqlite://state.db"

// NewMain returns a Main with the defaults.
func NewMain() *Main {
	return &Main{Config: Config{
		Listen:                      "127.0.0.1:6443",
		DataDir:                     "tabula-data",
		EventTTL:                    time.Hour,
		ServiceCIDR:                 "10.96.0.0/12",
		NodePorts:                   "30000-32767",
		RequestTimeout:              time.Minute,
		IdleTimeout:                 90 * time.Second,
		WatchWriteTimeout:           30 * time.Second,
		WatchBuffer:                 4 << 20,
		MaxWatchesPerUser:           1000,
		AllowPrivileged:             true,
		MaxRequestsInflight:         400,
		PriorityAndFairness:         true,
		MaxMutatingRequestsInflight: 200,
		QueryTimeout:                30 * time.Second,
		CompactionWindow:            5 * time.Minute,
		CompactionInterval:          time.Minute,
		LogLevel:                    "info",
		Profiling:                   true,
		AnonymousAuth:               true,
		ReleaseStartupPages:         true,
	}}
}

type stringList []string

// trackedBool is a bool flag that remembers being set.
type trackedBool struct{ v, set *bool }

func (b trackedBool) String() string {
	if b.v == nil {
		return "false"
	}
	return strconv.FormatBool(*b.v)
}
func (b trackedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.v, *b.set = v, true
	return nil
}
func (b trackedBool) IsBoolFlag() bool { return true }

// invertedBool is a boolean flag stored negated (a default-true flag
// over a field whose zero value is the default).
type invertedBool struct{ v *bool }

func (b invertedBool) String() string {
	if b.v == nil {
		return "true"
	}
	return strconv.FormatBool(!*b.v)
}
func (b invertedBool) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return err
	}
	*b.v = !v
	return nil
}
func (b invertedBool) IsBoolFlag() bool { return true }

// repeated is a repeatable flag whose values are not split (URLs may hold
// commas).
type repeated []string

func (s *repeated) String() string     { return strings.Join(*s, " ") }
func (s *repeated) Set(v string) error { *s = append(*s, v); return nil }

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, strings.Split(v, ",")...); return nil }

// envName is the environment variable that sets a flag: TABULA_ and the
// flag's name in upper case, dashes as underscores (--data-dir is
// TABULA_DATA_DIR).
func envName(flagName string) string {
	return "TABULA_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// ParseFlags reads flags, with TABULA_<FLAG> environment variables
// (TABULA_DB, TABULA_LISTEN, …) as defaults. -h and --help return
// flag.ErrHelp; WriteUsage then prints the help.
func (m *Main) ParseFlags(args []string) error {
	fs, err := m.defineFlags("tabula serve")
	if err != nil {
		return err
	}
	return m.parseFlags(fs, args)
}

// defineFlags makes the flag set of `tabula serve` over m.Config, whose
// values are the defaults.
func (m *Main) defineFlags(name string) (*flag.FlagSet, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	// Tabula serves CBOR by default (kube-apiserver 1.35 does with this
	// gate on); --feature-gates=CBORServingAndStorage=false stops it.
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{string(genericfeatures.CBORServingAndStorage): true}); err != nil {
		return nil, err
	}
	// Errors are returned, and help printed by WriteUsage, not by the flag
	// package on its own.
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	m.flags = fs
	c := &m.Config
	fs.StringVar(&c.DB, "db", "", "database `URL`: sqlite:///abs/path.db, sqlite://rel/path.db (relative to --data-dir), sqlite://:memory:, postgres://…, mysql://… (default sqlite://state.db)")
	fs.Var((*repeated)(&c.DBStandbys), "db-standby", "read replica `URL`: a PostgreSQL hot standby of --db (repeatable); gets, lists and watches read from it once it has replayed what the request needs, else from --db")
	fs.StringVar(&c.Listen, "listen", c.Listen, "HTTPS listen address")
	fs.StringVar(&c.DataDir, "data-dir", c.DataDir, "directory for the SQLite database, certificates and kubeconfig")
	sans := (*stringList)(&c.TLSSANs)
	fs.Var(sans, "tls-san", "extra DNS `names` or IPs for the serving certificate (repeatable, comma-separated)")
	fs.StringVar(&c.TokenAuthFile, "token-auth-file", "", "static bearer tokens, in kube-apiserver's CSV format")
	fs.BoolVar(&c.BootstrapTokenAuth, "enable-bootstrap-token-auth", c.BootstrapTokenAuth, "accept bootstrap tokens (<id>.<secret>, from bootstrap.kubernetes.io/token Secrets in kube-system) as users system:bootstrap:<id> in system:bootstrappers, for kubeadm join and kubelet TLS bootstrap")
	fs.StringVar(&c.TLSCertFile, "tls-cert-file", "", "serve this certificate `file` (PEM, with its chain) instead of the generated one; needs --tls-private-key-file")
	fs.StringVar(&c.TLSPrivateKeyFile, "tls-private-key-file", "", "the private key `file` of --tls-cert-file")
	fs.StringVar(&c.ClientCAFile, "client-ca-file", "", "also accept client certificates of the CAs in this PEM `file` (the generated CA stays trusted)")
	fs.StringVar(&c.KubeletClientCertificate, "kubelet-client-certificate", "", "client certificate `file` presented to kubelets for logs, exec, attach, port-forward and the node proxy (default: one the server's CA issues, in <data-dir>/pki)")
	fs.StringVar(&c.KubeletClientKey, "kubelet-client-key", "", "the private key `file` of --kubelet-client-certificate")
	fs.StringVar(&c.KubeletCertificateAuthority, "kubelet-certificate-authority", "", "CA `file` that kubelets' serving certificates are verified with (default: not verified, as kube-apiserver)")
	fs.Var((*stringList)(&c.KubeletPreferredAddressTypes), "kubelet-preferred-address-types", "the Node address `types` to reach kubelets at, in order (default Hostname,InternalDNS,InternalIP,ExternalDNS,ExternalIP)")
	fs.StringVar(&c.EncryptionProviderConfig, "encryption-provider-config", "", "an EncryptionConfiguration `file` (kube-apiserver's format): the resources it names are stored encrypted")
	fs.StringVar(&c.PreviousToken, "previous-token", "", "the token being rotated out: secrets sealed with it are sealed again with --token")
	fs.StringVar(&c.Token, "token", "", "shared `secret` of the replicas on one database: the first generates the CA and service-account key and stores them sealed with it, the others load them (a wrong token fails start-up)")
	fs.DurationVar(&c.EventTTL, "event-ttl", c.EventTTL, "how long core Events are kept")
	fs.StringVar(&c.AdvertiseAddress, "advertise-address", "", "the `IP` in-cluster clients reach this replica at, listed in the kubernetes Service's endpoints (default: the listen IP, or the host's first non-loopback address)")
	fs.StringVar(&c.ServiceCIDR, "service-cluster-ip-range", c.ServiceCIDR, "the `CIDR` Services get their cluster IPs from")
	fs.StringVar(&c.NodePorts, "service-node-port-range", c.NodePorts, "the `range` NodePort and LoadBalancer Services get node ports from")
	fs.DurationVar(&c.RequestTimeout, "request-timeout", c.RequestTimeout, "the longest a non-watch request may run (clients' ?timeout= may ask for less)")
	fs.DurationVar(&c.IdleTimeout, "idle-timeout", c.IdleTimeout, "close keep-alive connections idle this long (kube-apiserver's 90s)")
	fs.DurationVar(&c.WatchWriteTimeout, "watch-write-timeout", c.WatchWriteTimeout, "how long a watch's pending frames may take to reach its client before the watch is closed")
	fs.Var(&c.WatchBuffer, "watch-buffer", "the events a watcher may fall behind by, in bytes (a quantity: 4Mi), before it is closed and its client re-lists")
	fs.BoolVar(&c.AllowPrivileged, "allow-privileged", c.AllowPrivileged, "allow Pods with privileged containers (kube-apiserver's flag; true as kubeadm, kind and k3s set it, for CNI and CSI DaemonSets)")
	fs.IntVar(&c.MaxWatchesPerUser, "max-watches-per-user", c.MaxWatchesPerUser, "watches one user may hold open at once; more get 429 with Retry-After (system:masters excepted; 0: no limit)")
	fs.Var((*stringList)(&c.Controllers), "controllers", "kube-controller-manager's controllers Tabula runs itself, in kcm's syntax: * for all, -name to switch one off (garbage-collector-controller, namespace-controller, serviceaccount-controller, root-ca-certificate-publisher-controller, persistentvolume-protection-controller, persistentvolumeclaim-protection-controller, clusterrole-aggregation-controller); switch off those a kube-controller-manager beside Tabula runs (default *)")
	fs.BoolVar(&c.ReleaseStartupPages, "release-startup-pages", c.ReleaseStartupPages, "once start-up has settled, unmap the pages of this binary's code and read-only data that start-up mapped (Linux); the kernel keeps them cached, and maps back those the server uses again")
	fs.Var(&c.MemoryLimit, "memory-limit", "the Go runtime's soft memory limit (a quantity: 1Gi; default GOMEMLIMIT, or none): past it the server collects garbage harder instead of growing")
	fs.BoolVar(&c.PriorityAndFairness, "enable-priority-and-fairness", c.PriorityAndFairness, "classify requests by FlowSchema into priority levels and queue them fairly, as kube-apiserver (its concurrency: the two max-in-flight limits together); false limits with the two max-in-flight pools instead")
	fs.IntVar(&c.MaxRequestsInflight, "max-requests-inflight", c.MaxRequestsInflight, "read-only requests served at once; more get 429 with Retry-After (0: no limit; watches are not counted)")
	fs.IntVar(&c.MaxMutatingRequestsInflight, "max-mutating-requests-inflight", c.MaxMutatingRequestsInflight, "mutating requests served at once; more get 429 with Retry-After (0: no limit)")
	fs.DurationVar(&c.ShutdownDelay, "shutdown-delay-duration", 0, "time to keep serving with /readyz failing after SIGTERM, before the listener closes")
	fs.DurationVar(&c.CompactionWindow, "compaction-window", c.CompactionWindow, "how much history to keep for watches and paginated lists")
	fs.DurationVar(&c.CompactionInterval, "compaction-interval", c.CompactionInterval, "how often to compact history")
	fs.DurationVar(&c.QueryTimeout, "query-timeout", c.QueryTimeout, "the longest one database query or write transaction may run")
	fs.StringVar(&c.Kubeconfig, "kubeconfig", "", "where to write the admin kubeconfig (default <data-dir>/kubeconfig)")
	fs.StringVar(&c.LogLevel, "log-level", c.LogLevel, "debug, info, warn or error")
	fs.BoolVar(&c.Profiling, "profiling", c.Profiling, "serve Go profiles at /debug/pprof/ to authenticated clients")
	fs.Var((*stringList)(&c.AuthorizationModes), "authorization-mode", "the authorizers every request passes, in order (AlwaysAllow, AlwaysDeny, Node, RBAC; default Node,RBAC); members of system:masters are always allowed")
	fs.Var((*stringList)(&c.Admission.Enable), "enable-admission-plugins", "admission plugins to run besides the default ones (kube-apiserver 1.35's defaults and NodeRestriction); they run in kube-apiserver's order whatever the order here")
	fs.Var((*stringList)(&c.Admission.Disable), "disable-admission-plugins", "admission plugins not to run, default ones included")
	fs.StringVar(&c.Admission.ConfigFile, "admission-control-config-file", "", "an AdmissionConfiguration `file` configuring the admission plugins (for the webhooks: kubeConfigFile, the credentials they are called with)")
	fs.Var((*stringList)(&c.RuntimeConfig), "runtime-config", "group-versions to serve besides the default ones, as kube-apiserver's key=value pairs: admissionregistration.k8s.io/v1beta1=true (MutatingAdmissionPolicy, beta and off by default in kube 1.35), api/beta=true or api/all=true")
	fs.Func("feature-gates", "kube-apiserver's feature gates, key=value pairs (MutatingAdmissionPolicy=true with --runtime-config=admissionregistration.k8s.io/v1beta1=true turns on mutating admission policies; CBORServingAndStorage, on by default here, serves application/cbor)", utilfeature.DefaultMutableFeatureGate.Set)
	fs.Var(invertedBool{&c.Admission.ClusterIPRouting}, "enable-aggregator-routing", "call admission and conversion webhooks named by a Service at a ready endpoint of it (default true); false calls the Service's cluster IP, which must route from here")
	fs.Var((*stringList)(&c.ServiceAccountIssuers), "service-account-issuer", "the `URL` service account tokens name as their issuer; repeated, the first issues and all are accepted (default https://kubernetes.default.svc.cluster.local)")
	fs.Var((*stringList)(&c.APIAudiences), "api-audiences", "the audiences a token must name to authenticate to the API (default every --service-account-issuer)")
	fs.DurationVar(&c.ServiceAccountMaxTokenExpiration, "service-account-max-token-expiration", 0, "the longest a requested service account token may live; longer requests are shortened (0: no limit)")
	fs.StringVar(&c.ServiceAccountJWKSURI, "service-account-jwks-uri", "", "the key set `URL` the issuer's discovery document names (default https://<advertise-address>:<port>/openid/v1/jwks)")
	fs.StringVar(&c.ServiceAccountSigningKeyFile, "service-account-signing-key-file", "", "the private key `file` service account tokens are signed with: RSA, or ECDSA on P-256, P-384 or P-521 (default: <data-dir>/pki/sa.key, an ECDSA P-256 key made on first start)")
	fs.Var((*repeated)(&c.ServiceAccountKeyFiles), "service-account-key-file", "a PEM `file` of keys tokens are verified with, besides the signing key (repeatable; public keys, certificates or private keys, RSA or ECDSA): keys of earlier signing keys, during a rotation")
	fs.StringVar(&c.RequestHeaderClientCAFile, "requestheader-client-ca-file", "", "the CA `file` of front proxies that authenticate users and name them in request headers")
	fs.Var((*stringList)(&c.RequestHeaderAllowedNames), "requestheader-allowed-names", "the common names a front proxy's certificate may have (default: any the CA signed)")
	fs.Var((*stringList)(&c.RequestHeaderUsernameHeaders), "requestheader-username-headers", "the headers a front proxy names the user in, the first present wins (kube's usual: X-Remote-User)")
	fs.Var((*stringList)(&c.RequestHeaderUIDHeaders), "requestheader-uid-headers", "the headers a front proxy gives the user's uid in")
	fs.Var((*stringList)(&c.RequestHeaderGroupHeaders), "requestheader-group-headers", "the headers a front proxy lists the user's groups in (kube's usual: X-Remote-Group)")
	fs.Var((*stringList)(&c.RequestHeaderExtraHeadersPrefix), "requestheader-extra-headers-prefix", "the prefixes of the headers a front proxy gives the user's extra fields in (kube's usual: X-Remote-Extra-)")
	fs.StringVar(&c.ProxyClientCertFile, "proxy-client-cert-file", "", "the client certificate `file` presented to aggregated API servers, which its CA in --requestheader-client-ca-file must have signed (default: the generated front-proxy-client.crt)")
	fs.StringVar(&c.ProxyClientKeyFile, "proxy-client-key-file", "", "the key `file` of --proxy-client-cert-file")
	fs.StringVar(&c.Audit.PolicyFile, "audit-policy-file", "", "an audit.k8s.io Policy `file`: which requests are recorded, at which level (without it nothing is)")
	fs.StringVar(&c.Audit.LogPath, "audit-log-path", "", "append audit events to this `file` (- for standard output)")
	fs.IntVar(&c.Audit.LogMaxAge, "audit-log-maxage", 0, "days to keep rotated audit log files (0: no limit)")
	fs.IntVar(&c.Audit.LogMaxBackups, "audit-log-maxbackup", 0, "rotated audit log files to keep (0: no limit)")
	fs.IntVar(&c.Audit.LogMaxSize, "audit-log-maxsize", 0, "megabytes an audit log file grows to before it is rotated (0: lumberjack's 100)")
	fs.StringVar(&c.Audit.LogFormat, "audit-log-format", "json", "json (one audit.k8s.io/v1 Event per line) or legacy")
	fs.StringVar(&c.Audit.WebhookConfigFile, "audit-webhook-config-file", "", "a kubeconfig `file` naming the webhook audit events are sent to, in batches")
	fs.Var(trackedBool{&c.AnonymousAuth, &c.anonymousAuthSet}, "anonymous-auth", "let requests without credentials in as system:anonymous (group system:unauthenticated) for the authorizers to decide; off with AlwaysAllow")
	fs.StringVar(&c.AuthenticationConfig, "authentication-config", "", "an AuthenticationConfiguration `file` (apiserver.config.k8s.io): JWT issuers whose tokens authenticate users, with claim mappings and CEL rules, reloaded when it changes; its anonymous section replaces --anonymous-auth")
	return fs, nil
}

// parseFlags reads the environment's TABULA_<FLAG> variables, then args.
func (m *Main) parseFlags(fs *flag.FlagSet, args []string) error {
	var envErr error
	fs.VisitAll(func(f *flag.Flag) {
		env := envName(f.Name)
		if v, ok := os.LookupEnv(env); ok {
			if err := f.Value.Set(v); err != nil && envErr == nil {
				envErr = fmt.Errorf("%s: %w", env, err)
			}
		}
	})
	if envErr != nil {
		return envErr
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	return nil
}

// WriteUsage prints `tabula serve --help`: every flag with its
// environment variable, default and meaning.
func (m *Main) WriteUsage(w io.Writer) {
	if m.flags == nil {
		_ = m.ParseFlags(nil)
	}
	if m.usage != "" {
		fmt.Fprint(w, m.usage)
	} else {
		fmt.Fprint(w, `Usage: tabula serve [flags]

Serves the Kubernetes API from a SQL database (SQLite in --data-dir unless
--db names another). Every flag can also be set by its environment
variable; a flag on the command line wins over the variable.

Flags:
`)
	}
	m.flags.VisitAll(func(f *flag.Flag) {
		kind, usage := flag.UnquoteUsage(f)
		if kind == "" {
			kind = "bool"
		}
		fmt.Fprintf(w, "  --%s %s\n", f.Name, kind)
		fmt.Fprintf(w, "        %s\n", usage)
		line := "        env " + envName(f.Name)
		if def := f.DefValue; def != "" && def != "[]" {
			line += ", default " + def
		}
		fmt.Fprintln(w, line)
	})
}

// Run starts the server and returns once it is listening.
func (m *Main) Run(ctx context.Context) error {
	c := m.Config
	var level slog.Level
	if err := level.UnmarshalText([]byte(c.LogLevel)); err != nil {
		return fmt.Errorf("--log-level: %w", err)
	}
	m.log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	setMemoryLimit(c.MemoryLimit)
	start := time.Now()
	defer relaxGCForStartup()()
	if err := checkInflight(&c); err != nil {
		return err
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return err
	}
	ranges, err := serviceRanges(&c)
	if err != nil {
		return err
	}
	// In-cluster clients reach the server as the kubernetes Service, by
	// name or cluster IP; the serving certificate names them, as
	// kube-apiserver's does.
	sans := append([]string{"kubernetes", "kubernetes.default", "kubernetes.default.svc",
		"kubernetes.default.svc.cluster.local", ranges.FirstServiceIP().String()}, c.TLSSANs...)
	// And the addresses clients are given: the listen IP (the
	// kubeconfig's) and the advertised one, as kube-apiserver's
	// self-signed certificate names its advertise address, which defaults
	// to the bind address or the host's first address.
	if ip, err := netip.ParseAddr(c.AdvertiseAddress); err == nil {
		sans = append(sans, ip.String())
	}
	if host, _, err := net.SplitHostPort(c.Listen); err == nil {
		if ip, err := netip.ParseAddr(host); err == nil && !ip.IsUnspecified() {
			sans = append(sans, ip.Unmap().String())
		}
		if ap, err := advertiseAddress(c.AdvertiseAddress, net.JoinHostPort(host, "0")); err == nil && ap.Addr().IsValid() {
			sans = append(sans, ap.Addr().String())
		}
	}
	db := c.DB
	if db == "" {
		db = defaultDB
	}
	dataDir, err := filepath.Abs(c.DataDir)
	if err != nil {
		return err
	}
	opts := sqlstore.Options{Logger: m.log, Dir: dataDir, WatchBufferBytes: int(c.WatchBuffer),
		CompactWindow: c.CompactionWindow, CompactInterval: c.CompactionInterval, QueryTimeout: c.QueryTimeout,
		Standbys: c.DBStandbys}
	if c.EncryptionProviderConfig != "" {
		enc, err := encrypt.Load(c.EncryptionProviderConfig)
		if err != nil {
			return err
		}
		opts.Values = enc
	}
	m.store, err = sqlstore.Open(ctx, db, opts)
	if err != nil {
		return err
	}
	pkiDir := filepath.Join(c.DataDir, "pki")
	if c.Token != "" {
		if err := shareClusterSecrets(ctx, m.store, c.Token, c.PreviousToken, pkiDir, sans); err != nil {
			m.store.Close()
			return err
		}
	}
	pki, err := auth.EnsurePKI(pkiDir, sans)
	if err != nil {
		m.store.Close()
		return err
	}
	if err := usePKIFiles(pki, &c); err != nil {
		m.store.Close()
		return err
	}
	saTokens, err := serviceAccountTokens(&c, pki.Dir)
	if err != nil {
		m.store.Close()
		return err
	}
	if len(c.ServiceAccountIssuers) > 0 {
		saTokens.Issuer, saTokens.OtherIssuers = c.ServiceAccountIssuers[0], c.ServiceAccountIssuers[1:]
		// Every issuer is an audience by default, as kube-apiserver
		// defaults --api-audiences: tokens of the issuer being retired
		// stay valid while they last.
		saTokens.Audiences = slices.Clone(c.ServiceAccountIssuers)
	}
	if len(c.APIAudiences) > 0 {
		saTokens.Audiences = c.APIAudiences
	}
	saTokens.MaxExpiration = c.ServiceAccountMaxTokenExpiration
	requestHeader, err := requestHeaderAuth(&c, pki)
	if err != nil {
		m.store.Close()
		return err
	}
	proxyClient, err := proxyClientCert(&c, pki)
	if err != nil {
		m.store.Close()
		return err
	}
	// The external issuers' key-set refreshes live as long as the server.
	cctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	authnOpts := auth.Options{ClientCA: pki.ClientCAPool, TokenFile: c.TokenAuthFile, ServiceAccountTokens: saTokens, RequestHeader: requestHeader, BootstrapTokens: c.BootstrapTokenAuth}
	var authnConfig *authnconfig.Authenticator
	var anonymousPaths []string
	if c.AuthenticationConfig != "" {
		authnConfig, err = authnconfig.New(cctx, authnconfig.Options{Path: c.AuthenticationConfig, DisallowedIssuers: append([]string{saTokens.Issuer}, saTokens.OtherIssuers...), Log: m.log})
		if err != nil {
			cancel()
			m.store.Close()
			return fmt.Errorf("--authentication-config: %w", err)
		}
		authnOpts.JWT = authnConfig
		if enabled, paths, ok := authnConfig.Anonymous(); ok {
			if c.anonymousAuthSet {
				cancel()
				m.store.Close()
				return errors.New("--authentication-config: anonymous: Forbidden: --anonymous-auth flag cannot be set when anonymous field is configured in authentication configuration file")
			}
			c.AnonymousAuth, anonymousPaths = enabled, paths
		}
		go authnConfig.Run(cctx, time.Minute)
	}
	authn, err := auth.NewAuthenticator(authnOpts)
	if err != nil {
		cancel()
		m.store.Close()
		return err
	}
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	metrics.MustRegister(sqlstore.Collectors()...)
	metrics.MustRegister(encrypt.Collectors()...)
	apis, err := runtimeConfig(c.RuntimeConfig)
	if err != nil {
		cancel()
		m.store.Close()
		return err
	}
	reg := schema.NewBuiltin(apis...)
	v := Version()
	oa, err := openapi.New(reg, openapi.Info{Title: "Kubernetes", Version: v.GitVersion, CBOR: utilfeature.DefaultFeatureGate.Enabled(genericfeatures.CBORServingAndStorage)})
	if err != nil {
		cancel()
		m.store.Close()
		return err
	}
	ln, err := net.Listen("tcp", c.Listen)
	if err != nil {
		cancel()
		m.store.Close()
		return err
	}
	m.Addr = ln.Addr().String()
	advertise, err := advertiseAddress(c.AdvertiseAddress, m.Addr)
	if err != nil {
		ln.Close()
		cancel()
		m.store.Close()
		return err
	}
	m.srv, err = server.New(server.Config{
		Store: m.store, Registry: reg, Authenticator: authn, Version: v, OpenAPI: oa.Handler(),
		Logger: m.log, Metrics: metrics, EventTTL: c.EventTTL, RequestTimeout: c.RequestTimeout, WatchWriteTimeout: c.WatchWriteTimeout, CABundle: rootCABundle(pki), ClientCABundle: pki.ClientCAPEM,
		MaxRequestsInflight: c.MaxRequestsInflight, MaxMutatingRequestsInflight: c.MaxMutatingRequestsInflight, MaxWatchesPerUser: c.MaxWatchesPerUser, DenyPrivileged: !c.AllowPrivileged, Controllers: c.Controllers,
		Profiling: c.Profiling, ServiceRanges: ranges, Advertise: advertise, ServiceAccountTokens: saTokens,
		Kubelet: kubeletConfig(&c, pki), AuthorizationModes: authorizationModes(&c), AnonymousAuth: c.AnonymousAuth, AnonymousPaths: anonymousPaths,
		ServiceAccountJWKSURI: c.ServiceAccountJWKSURI, Audit: c.Audit, RequestHeader: requestHeader, Admission: c.Admission,
		ProxyClientCert: proxyClient, NoCBOR: !utilfeature.DefaultFeatureGate.Enabled(genericfeatures.CBORServingAndStorage),
		NoPriorityAndFairness: !c.PriorityAndFairness,
		// Replicas share PostgreSQL and MySQL: a deleted namespace is
		// emptied once every replica's admission has seen it go.
		NamespaceDeletionGrace: sharedDatabaseGrace(m.store.Dialect()),
	})
	if err != nil {
		ln.Close()
		cancel()
		m.store.Close()
		return err
	}
	m.startup = &startup{settled: make(chan struct{})}
	go returnMemory(cctx, m.log, c.ReleaseStartupPages, m.startup)
	if err := m.srv.RunControllers(cctx); err != nil {
		cancel()
		ln.Close()
		m.store.Close()
		return err
	}
	// kube-apiserver's serving settings: idle connections closed after
	// 90s, 1 MiB of headers; HTTP/2's in server.ConfigureHTTP2.
	m.http = &http.Server{
		Handler:           m.srv.Handler(),
		TLSConfig:         pki.ServerTLSConfig(),
		ReadHeaderTimeout: 32 * time.Second,
		IdleTimeout:       c.IdleTimeout,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(m.log.Handler(), slog.LevelDebug),
	}
	if err := server.ConfigureHTTP2(m.http); err != nil {
		ln.Close()
		cancel()
		m.store.Close()
		return err
	}
	m.done = make(chan struct{})
	go func() {
		defer close(m.done)
		if err := m.http.ServeTLS(ln, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
			m.log.Error("serve", "err", err)
		}
	}()
	m.KubeconfigPath = c.Kubeconfig
	if m.KubeconfigPath == "" {
		m.KubeconfigPath = filepath.Join(c.DataDir, "kubeconfig")
	}
	if abs, err := filepath.Abs(m.KubeconfigPath); err == nil {
		m.KubeconfigPath = abs
	}
	if err := auth.WriteKubeconfig(m.KubeconfigPath, "https://"+clientAddr(m.Addr), pki); err != nil {
		return err
	}
	// kube-scheduler's and kube-controller-manager's own, beside it.
	for _, comp := range auth.Components {
		path := filepath.Join(filepath.Dir(m.KubeconfigPath), comp.Name+".kubeconfig")
		if err := auth.WriteComponentKubeconfig(path, "https://"+clientAddr(m.Addr), pki, comp.Name); err != nil {
			return err
		}
	}
	m.log.Info("tabula ready", "addr", m.Addr, "db", m.store.Dialect(), "startup", time.Since(start).Round(time.Millisecond))
	fmt.Fprintf(os.Stderr, "Tabula is serving on https://%s — run: export KUBECONFIG=%s\n", clientAddr(m.Addr), m.KubeconfigPath)
	return nil
}

// clientAddr is how a local client reaches a listen address.
func clientAddr(listen string) string {
	host, port, err := net.SplitHostPort(listen)
	if err != nil {
		return listen
	}
	if host == "" || host == "0.0.0.0" || host == "::" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// Close stops the server: readiness turns false and watches end, the
// listener closes after in-flight requests, then the database.
func (m *Main) Close() error {
	if m.srv == nil {
		return nil
	}
	m.srv.BeginShutdown()
	if d := m.Config.ShutdownDelay; d > 0 {
		m.log.Info("shutting down: readiness is off; serving on for the shutdown delay", "delay", d)
		time.Sleep(d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	m.srv.WaitWatches(ctx)
	err := m.http.Shutdown(ctx)
	<-m.done
	m.srv.StopAuditing()
	m.cancel()
	// The controllers' leave step writes through the store.
	left, cancelLeft := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancelLeft()
	m.srv.WaitControllers(left)
	return errors.Join(err, m.store.Close())
}

// sharedDatabaseGrace is how long a deleted namespace waits before it is
// emptied on a database replicas share: kube-controller-manager's 5 s
// (namespaceDeletionGracePeriod), which lets every API server's
// NamespaceLifecycle see the deletion, so none admits an object into the
// namespace after its contents were listed for deletion (it would
// outlive the namespace). SQLite serves one process in Tabula's edge
// use, whose admission sees the deletion as the controller does.
func sharedDatabaseGrace(dialect string) time.Duration {
	if dialect == "sqlite" {
		return 0
	}
	return 5 * time.Second
}

// serviceRanges parses --service-cluster-ip-range and
// --service-node-port-range.
func serviceRanges(c *Config) (registry.ServiceRanges, error) {
	cidr, err := netip.ParsePrefix(c.ServiceCIDR)
	if err != nil || cidr != cidr.Masked() {
		return registry.ServiceRanges{}, fmt.Errorf("--service-cluster-ip-range %q: want a network address and prefix length such as 10.96.0.0/12", c.ServiceCIDR)
	}
	if host := cidr.Addr().BitLen() - cidr.Bits(); host < 2 {
		return registry.ServiceRanges{}, fmt.Errorf("--service-cluster-ip-range %q: too small for any Service", c.ServiceCIDR)
	}
	ports, err := registry.ParsePortRange(c.NodePorts)
	if err != nil {
		return registry.ServiceRanges{}, fmt.Errorf("--service-node-port-range: %w", err)
	}
	return registry.ServiceRanges{ClusterIPs: cidr, NodePorts: ports}, nil
}

// advertiseAddress is the address and port the kubernetes Service lists
// for this replica: the flag's IP, else a specific listen IP, else the
// host's first global unicast address; loopback addresses cannot be
// endpoints, so with none of these the replica is not listed.
func advertiseAddress(flagValue, listenAddr string) (netip.AddrPort, error) {
	ap, err := netip.ParseAddrPort(listenAddr)
	if err != nil {
		return netip.AddrPort{}, err
	}
	if flagValue != "" {
		ip, err := netip.ParseAddr(flagValue)
		if err != nil || !ip.IsGlobalUnicast() {
			return netip.AddrPort{}, fmt.Errorf("--advertise-address %q: want an IP other clients can reach (not loopback, link-local or unspecified)", flagValue)
		}
		return netip.AddrPortFrom(ip.Unmap(), ap.Port()), nil
	}
	if ip := ap.Addr().Unmap(); ip.IsGlobalUnicast() {
		return netip.AddrPortFrom(ip, ap.Port()), nil
	}
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if p, err := netip.ParsePrefix(a.String()); err == nil && p.Addr().Is4() && p.Addr().IsGlobalUnicast() {
			return netip.AddrPortFrom(p.Addr(), ap.Port()), nil
		}
	}
	return netip.AddrPortFrom(netip.Addr{}, ap.Port()), nil
}

// clusterSecretsKey is where the sealed cluster secrets live in the log;
// no served resource maps to it, so no API request can read it.
var clusterSecretsKey = kv.Key{Resource: "tabula.internal/cluster-secrets", Name: "pki"}

// shareClusterSecrets makes the PKI directory hold the cluster's shared
// CA and service-account key: those in the database when a replica
// stored them, opened with token (a wrong token is an error and changes
// nothing); otherwise this replica's, which it stores for the others.
// Secrets sealed with previous (a token being rotated out) are sealed
// again with token.
func shareClusterSecrets(ctx context.Context, st *sqlstore.Store, token, previous, pkiDir string, sans []string) error {
	for {
		rec, err := st.Get(ctx, clusterSecretsKey)
		if err == nil {
			s, err := auth.OpenSecrets(token, rec.Value)
			rewrite := false
			if errors.Is(err, auth.ErrWrongToken) && previous != "" {
				s, err = auth.OpenSecrets(previous, rec.Value)
				rewrite = true // sealed again with the new token
			}
			if err != nil {
				return err
			}
			if len(s.FrontProxyCACert) == 0 || len(s.FrontProxyCAKey) == 0 {
				// Stored by a Tabula without a front proxy: this replica's
				// becomes the cluster's.
				if s.FrontProxyCACert, s.FrontProxyCAKey, err = auth.EnsureFrontProxyCA(pkiDir); err != nil {
					return err
				}
				rewrite = true
			}
			if rewrite {
				sealed, err := auth.SealSecrets(token, s)
				if err != nil {
					return err
				}
				_, err = st.Update(ctx, clusterSecretsKey, rec.Rev, func(int64) (kv.Entry, error) { return kv.Entry{Value: sealed}, nil })
				if errors.Is(err, kv.ErrConflict) {
					continue // another replica rewrote them first: read them again
				}
				if err != nil {
					return err
				}
			}
			return auth.InstallSecrets(pkiDir, s)
		}
		if !errors.Is(err, kv.ErrNotFound) {
			return err
		}
		// The first replica: its PKI (made now if missing) becomes the
		// cluster's.
		if _, err := auth.EnsurePKI(pkiDir, sans); err != nil {
			return err
		}
		if _, err := auth.EnsureServiceAccountKey(pkiDir); err != nil {
			return err
		}
		s, err := auth.LocalSecrets(pkiDir)
		if err != nil {
			return err
		}
		sealed, err := auth.SealSecrets(token, s)
		if err != nil {
			return err
		}
		_, err = st.Create(ctx, clusterSecretsKey, func(int64) (kv.Entry, error) { return kv.Entry{Value: sealed}, nil })
		if !errors.Is(err, kv.ErrExists) {
			return err
		}
		// Another replica stored its secrets first: take those.
	}
}

// usePKIFiles applies the certificates given as files over the generated
// ones.
func usePKIFiles(pki *auth.PKI, c *Config) error {
	if (c.TLSCertFile == "") != (c.TLSPrivateKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together")
	}
	if c.TLSCertFile != "" {
		if err := pki.UseServingFiles(c.TLSCertFile, c.TLSPrivateKeyFile); err != nil {
			return err
		}
	}
	if c.ClientCAFile != "" {
		if err := pki.UseClientCAFile(c.ClientCAFile); err != nil {
			return err
		}
	}
	if err := authz.CheckModes(authorizationModes(c)); err != nil {
		return fmt.Errorf("--authorization-mode: %w", err)
	}
	for _, iss := range c.ServiceAccountIssuers {
		if iss == "" || (strings.Contains(iss, ":") && !strings.HasPrefix(iss, "https://") && !strings.HasPrefix(iss, "http://")) {
			return fmt.Errorf("--service-account-issuer %q: not a URL (kube-apiserver takes a URL, or a string without a colon)", iss)
		}
	}
	if c.ServiceAccountMaxTokenExpiration != 0 && c.ServiceAccountMaxTokenExpiration < time.Hour {
		return fmt.Errorf("--service-account-max-token-expiration must be at least 1h, got %v", c.ServiceAccountMaxTokenExpiration)
	}
	return checkKubeletFlags(c)
}

// checkInflight refuses the in-flight limits kube-apiserver refuses: a
// negative one, and two that leave priority and fairness no seats (it
// shares their sum among the priority levels). Without priority and
// fairness, 0 is "no limit".
func checkInflight(c *Config) error {
	if c.MaxRequestsInflight < 0 {
		return errors.New("--max-requests-inflight can not be negative value")
	}
	if c.MaxMutatingRequestsInflight < 0 {
		return errors.New("--max-mutating-requests-inflight can not be negative value")
	}
	if c.PriorityAndFairness && c.MaxRequestsInflight+c.MaxMutatingRequestsInflight <= 0 {
		return fmt.Errorf("invalid configuration: MaxRequestsInFlight=%d and MaxMutatingRequestsInFlight=%d; they must add up to something positive",
			c.MaxRequestsInflight, c.MaxMutatingRequestsInflight)
	}
	return nil
}

// serviceAccountTokens signs with --service-account-signing-key-file,
// else the PKI directory's own key, and verifies with that key and those
// of --service-account-key-file. kube-apiserver verifies with the files'
// keys alone, so a signing key left out of them makes its own tokens
// fail; here it is always among them.
func serviceAccountTokens(c *Config, pkiDir string) (*auth.ServiceAccountTokens, error) {
	var key crypto.Signer
	var err error
	if c.ServiceAccountSigningKeyFile != "" {
		key, err = auth.LoadServiceAccountKey(c.ServiceAccountSigningKeyFile)
		if err != nil {
			return nil, fmt.Errorf("--service-account-signing-key-file: %w", err)
		}
	} else if key, err = auth.EnsureServiceAccountKey(pkiDir); err != nil {
		return nil, err
	}
	var verify []any
	for _, f := range c.ServiceAccountKeyFiles {
		keys, err := auth.LoadVerificationKeys(f)
		if err != nil {
			return nil, fmt.Errorf("--service-account-key-file: %w", err)
		}
		verify = append(verify, keys...)
	}
	t, err := auth.NewServiceAccountTokens(key, verify...)
	if err != nil {
		return nil, fmt.Errorf("service account keys: %w", err)
	}
	return t, nil
}

// requestHeaderAuth is front-proxy authentication from the flags, or
// without --requestheader-client-ca-file the generated front proxy's
// (kubeadm's settings: its CA, its client's name, the X-Remote-* headers),
// which Tabula's own proxy to aggregated API servers uses.
func requestHeaderAuth(c *Config, pki *auth.PKI) (*auth.RequestHeader, error) {
	if c.RequestHeaderClientCAFile == "" {
		if len(c.RequestHeaderUsernameHeaders) > 0 {
			return nil, errors.New("--requestheader-username-headers needs --requestheader-client-ca-file")
		}
		return &auth.RequestHeader{ClientCA: pki.FrontProxyCAPool, CAPEM: pki.FrontProxyCAPEM, AllowedNames: []string{auth.FrontProxyClientUser},
			UsernameHeaders: []string{"X-Remote-User"}, UIDHeaders: []string{"X-Remote-Uid"}, GroupHeaders: []string{"X-Remote-Group"},
			ExtraHeaderPrefixes: []string{"X-Remote-Extra-"}}, nil
	}
	pem, err := os.ReadFile(c.RequestHeaderClientCAFile)
	if err != nil {
		return nil, fmt.Errorf("--requestheader-client-ca-file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("--requestheader-client-ca-file: no PEM certificate in %s", c.RequestHeaderClientCAFile)
	}
	return &auth.RequestHeader{ClientCA: pool, CAPEM: pem, AllowedNames: c.RequestHeaderAllowedNames,
		UsernameHeaders: c.RequestHeaderUsernameHeaders, UIDHeaders: c.RequestHeaderUIDHeaders,
		GroupHeaders: c.RequestHeaderGroupHeaders, ExtraHeaderPrefixes: c.RequestHeaderExtraHeadersPrefix}, nil
}

// proxyClientCert is the certificate presented to aggregated API servers:
// the flags', else the generated front proxy's when its CA is the one
// trusted; nil (requests go without one, as kube-apiserver's do) when
// only --requestheader-client-ca-file was given.
func proxyClientCert(c *Config, pki *auth.PKI) (*registry.KeyPair, error) {
	if (c.ProxyClientCertFile == "") != (c.ProxyClientKeyFile == "") {
		return nil, errors.New("--proxy-client-cert-file and --proxy-client-key-file go together")
	}
	certFile, keyFile := c.ProxyClientCertFile, c.ProxyClientKeyFile
	if certFile != "" && c.RequestHeaderClientCAFile == "" {
		// Aggregated API servers verify it with the CA published as
		// requestheader-client-ca-file, which must then be its own.
		return nil, errors.New("--proxy-client-cert-file needs --requestheader-client-ca-file naming the CA that signed it")
	}
	if certFile == "" {
		if c.RequestHeaderClientCAFile != "" {
			return nil, nil
		}
		certFile, keyFile = pki.FrontProxyClientCertPath, pki.FrontProxyClientKeyPath
	}
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("--proxy-client-cert-file: %w", err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("--proxy-client-key-file: %w", err)
	}
	if _, err := tls.X509KeyPair(certPEM, keyPEM); err != nil {
		return nil, fmt.Errorf("--proxy-client-cert-file: %w", err)
	}
	return &registry.KeyPair{CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// runtimeConfig reads --runtime-config: the optional group-versions it
// switches on. kube's api/all and api/beta switch on every optional one
// (they are beta); api/ga names what is always served and api/alpha what
// Tabula has none of. Any other key is refused rather than ignored:
// Tabula cannot switch its other APIs off. As on kube-apiserver, the
// MutatingAdmissionPolicy kinds of admissionregistration.k8s.io/v1beta1
// are served only with their feature gate on (kube serves that version's
// deprecated ValidatingAdmissionPolicy kinds there too; Tabula does not).
func runtimeConfig(entries []string) ([]runtimeschema.GroupVersion, error) {
	on := map[runtimeschema.GroupVersion]bool{}
	for _, e := range entries {
		key, value, _ := strings.Cut(strings.TrimSpace(e), "=")
		enable, err := strconv.ParseBool(cmp.Or(value, "true"))
		if err != nil {
			return nil, fmt.Errorf("--runtime-config: %s: %q is not a boolean", key, value)
		}
		switch key {
		case "api/all", "api/beta":
			for _, gv := range schema.OptionalGroupVersions {
				on[gv] = enable
			}
			continue
		case "api/ga":
			if enable {
				continue
			}
		case "api/alpha":
			continue
		}
		gv, err := runtimeschema.ParseGroupVersion(key)
		if err != nil || !slices.Contains(schema.OptionalGroupVersions, gv) {
			return nil, fmt.Errorf("--runtime-config: %q cannot be switched: Tabula serves its built-in group-versions always, and switches on only %v", key, schema.OptionalGroupVersions)
		}
		on[gv] = enable
	}
	if !utilfeature.DefaultFeatureGate.Enabled(genericfeatures.MutatingAdmissionPolicy) {
		delete(on, runtimeschema.GroupVersion{Group: "admissionregistration.k8s.io", Version: "v1beta1"})
	}
	var out []runtimeschema.GroupVersion
	for _, gv := range schema.OptionalGroupVersions {
		if on[gv] {
			out = append(out, gv)
		}
	}
	return out, nil
}

// authorizationModes are the flag's modes, or the default chain.
func authorizationModes(c *Config) []string {
	if len(c.AuthorizationModes) == 0 {
		return authz.DefaultModes
	}
	return c.AuthorizationModes
}

// checkKubeletFlags fails start-up on kubelet client settings that would
// only fail later, at the first kubectl logs.
func checkKubeletFlags(c *Config) error {
	if (c.KubeletClientCertificate == "") != (c.KubeletClientKey == "") {
		return errors.New("--kubelet-client-certificate and --kubelet-client-key go together")
	}
	if c.KubeletClientCertificate != "" {
		if _, err := tls.LoadX509KeyPair(c.KubeletClientCertificate, c.KubeletClientKey); err != nil {
			return fmt.Errorf("--kubelet-client-certificate: %w", err)
		}
	}
	if c.KubeletCertificateAuthority != "" {
		pem, err := os.ReadFile(c.KubeletCertificateAuthority)
		if err != nil {
			return fmt.Errorf("--kubelet-certificate-authority: %w", err)
		}
		if !x509.NewCertPool().AppendCertsFromPEM(pem) {
			return fmt.Errorf("--kubelet-certificate-authority: no PEM certificate in %s", c.KubeletCertificateAuthority)
		}
	}
	for _, t := range c.KubeletPreferredAddressTypes {
		if !slices.Contains(server.KubeletAddressTypes, t) {
			return fmt.Errorf("--kubelet-preferred-address-types: %q is not one of %s", t, strings.Join(server.KubeletAddressTypes, ", "))
		}
	}
	return nil
}

// kubeletConfig is how the server reaches kubelets: the flags, else the
// client certificate of the generated PKI.
func kubeletConfig(c *Config, pki *auth.PKI) server.KubeletConfig {
	k := server.KubeletConfig{PreferredAddressTypes: c.KubeletPreferredAddressTypes, TLSClientConfig: server.KubeletTLSConfig{
		CertFile: c.KubeletClientCertificate, KeyFile: c.KubeletClientKey, CAFile: c.KubeletCertificateAuthority,
	}}
	if k.TLSClientConfig.CertFile == "" && k.TLSClientConfig.KeyFile == "" {
		k.TLSClientConfig.CertFile, k.TLSClientConfig.KeyFile = pki.KubeletClientCertPath, pki.KubeletClientKeyPath
	}
	return k
}

// rootCABundle is kube-root-ca.crt's content: what verifies the serving
// certificate, as kube-apiserver publishes its root CA.
func rootCABundle(pki *auth.PKI) []byte {
	if len(pki.ServingCAPEM) > 0 {
		return pki.ServingCAPEM
	}
	return pki.CAPEM
}
