package authnconfig

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/apis/apiserver"
	"k8s.io/apiserver/pkg/apis/apiserver/install"
	apiservervalidation "k8s.io/apiserver/pkg/apis/apiserver/validation"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	authenticationcel "k8s.io/apiserver/pkg/authentication/cel"
	tokenunion "k8s.io/apiserver/pkg/authentication/token/union"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/plugin/pkg/authenticator/token/oidc"
	"k8s.io/kubernetes/pkg/util/filesystem"
)

// The file's decoder: every version kube-apiserver 1.35 reads, strictly
// (an unknown or repeated field is an error, as it is to kube).
var (
	scheme = runtime.NewScheme()
	codecs = serializer.NewCodecFactory(scheme, serializer.EnableStrict)
)

func init() { install.Install(scheme) }

// ReloadTimeout bounds how long a changed file's issuers have to become
// reachable before the change is given up (kube-apiserver's
// UpdateAuthenticationConfigTimeout).
const ReloadTimeout = time.Minute

// Decode reads an AuthenticationConfiguration and validates it as
// kube-apiserver does at start: disallowedIssuers are the service
// account issuers, which no JWT authenticator may claim.
func Decode(data []byte, disallowedIssuers []string) (*apiserver.AuthenticationConfiguration, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("empty config data")
	}
	obj, err := runtime.Decode(codecs.UniversalDecoder(), data)
	if err != nil {
		return nil, err
	}
	cfg, ok := obj.(*apiserver.AuthenticationConfiguration)
	if !ok {
		return nil, fmt.Errorf("expected AuthenticationConfiguration, got %T", obj)
	}
	if err := apiservervalidation.ValidateAuthenticationConfiguration(authenticationcel.NewDefaultCompiler(), cfg, disallowedIssuers).ToAggregate(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// Options configures New.
type Options struct {
	// Path is the --authentication-config file.
	Path string
	// DisallowedIssuers are the service account issuers.
	DisallowedIssuers []string
	// APIServerID names this server in the OIDC authenticator's metrics.
	APIServerID string
	// Log receives reloads and their failures.
	Log *slog.Logger
}

// Authenticator is the file's JWT authenticators (their union, failing
// on the first issuer that claims a token and rejects it) and its
// anonymous section. Safe for concurrent use; the JWT part is swapped
// whole on a reload.
type Authenticator struct {
	opts Options
	ctx  context.Context
	jwt  atomic.Pointer[jwtSet]
	// anonymous is the file's anonymous section (nil: the file says
	// nothing and --anonymous-auth decides); it may not change on reload.
	anonymous *apiserver.AnonymousAuthConfig

	mu      sync.Mutex // serialises reloads
	tracked string     // the file content last acted on
}

// jwtSet is one generation of JWT authenticators, with what stops their
// key-set refreshes.
type jwtSet struct {
	token   authenticator.Token
	health  func() error
	issuers []string
	cancel  context.CancelFunc
}

// New reads and validates the file and starts its issuers' discovery
// (in the background: a token from an issuer not yet reached fails until
// it is). ctx bounds the authenticators' lives.
func New(ctx context.Context, opts Options) (*Authenticator, error) {
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	data, err := os.ReadFile(opts.Path)
	if err != nil {
		return nil, err
	}
	cfg, err := Decode(data, opts.DisallowedIssuers)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Path, err)
	}
	set, err := newJWTSet(ctx, cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", opts.Path, err)
	}
	a := &Authenticator{opts: opts, ctx: ctx, anonymous: cfg.Anonymous, tracked: string(data)}
	a.jwt.Store(set)
	return a, nil
}

func newJWTSet(ctx context.Context, cfg *apiserver.AuthenticationConfiguration, opts Options) (_ *jwtSet, err error) {
	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		if err != nil {
			cancel()
		}
	}()
	var tokens []authenticator.Token
	var checks []func() error
	var issuers []string
	for _, j := range cfg.JWT {
		var ca oidc.CAContentProvider
		if j.Issuer.CertificateAuthority != "" {
			if ca, err = dynamiccertificates.NewStaticCAContent("oidc-authenticator", []byte(j.Issuer.CertificateAuthority)); err != nil {
				return nil, err
			}
		}
		t, err := oidc.New(ctx, oidc.Options{
			JWTAuthenticator:     j,
			CAContentProvider:    ca,
			SupportedSigningAlgs: oidc.AllValidSigningAlgorithms(),
			DisallowedIssuers:    opts.DisallowedIssuers,
			APIServerID:          opts.APIServerID,
		})
		if err != nil {
			return nil, err
		}
		tokens, checks, issuers = append(tokens, t), append(checks, t.HealthCheck), append(issuers, j.Issuer.URL)
	}
	return &jwtSet{
		token: tokenunion.NewFailOnError(tokens...),
		health: func() error {
			var errs []error
			for _, c := range checks {
				if err := c(); err != nil {
					errs = append(errs, err)
				}
			}
			return utilerrors.NewAggregate(errs)
		},
		issuers: issuers,
		cancel:  cancel,
	}, nil
}

// AuthenticateToken checks a bearer token against the file's issuers; a
// token no issuer claims is not theirs (false, nil). The answer is
// audience-agnostic: each issuer checks its own audiences.
func (a *Authenticator) AuthenticateToken(ctx context.Context, token string) (*authenticator.Response, bool, error) {
	return a.jwt.Load().token.AuthenticateToken(ctx, token)
}

// Healthy reports whether every issuer's keys have been fetched.
func (a *Authenticator) Healthy() error { return a.jwt.Load().health() }

// Anonymous is the file's anonymous section: configured reports whether
// it has one; enabled whether requests without credentials are let in as
// system:anonymous, and paths the only request paths they may be (kube's
// anonymous authenticator conditions; nil: every path).
func (a *Authenticator) Anonymous() (enabled bool, paths []string, configured bool) {
	if a == nil || a.anonymous == nil {
		return false, nil, false
	}
	for _, c := range a.anonymous.Conditions {
		paths = append(paths, c.Path)
	}
	return a.anonymous.Enabled, paths, true
}

// Run reloads the file when it changes (watched, and read every minute
// as kube-apiserver does) until ctx ends.
func (a *Authenticator) Run(ctx context.Context, every time.Duration) {
	filesystem.WatchUntil(ctx, every, a.opts.Path, func() { a.Reload(ctx) },
		func(err error) {
			a.opts.Log.Error("watching the authentication config file", "path", a.opts.Path, "err", err)
		})
}

// Reload applies the file if it changed since last acted on: a valid
// configuration whose issuers all answer within ReloadTimeout replaces
// the JWT authenticators; an invalid one is logged and left (until the
// file changes again), as kube-apiserver does. It returns what happened.
func (a *Authenticator) Reload(ctx context.Context) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	data, err := os.ReadFile(a.opts.Path)
	if err != nil {
		a.opts.Log.Error("reading the authentication config file", "path", a.opts.Path, "err", err)
		return err // may pass: retried at the next tick
	}
	if string(data) == a.tracked {
		return nil
	}
	cfg, err := Decode(data, a.opts.DisallowedIssuers)
	if err == nil && !reflect.DeepEqual(cfg.Anonymous, a.anonymous) {
		err = field.ErrorList{field.Forbidden(field.NewPath("anonymous"), "changed from initial configuration file")}.ToAggregate()
	}
	if err != nil {
		a.tracked = string(data) // never valid: not retried until it changes
		a.opts.Log.Error("the authentication config file is invalid: kept the previous configuration", "path", a.opts.Path, "err", err)
		return err
	}
	set, err := newJWTSet(a.ctx, cfg, a.opts)
	if err != nil {
		a.tracked = string(data)
		a.opts.Log.Error("the authentication config file is invalid: kept the previous configuration", "path", a.opts.Path, "err", err)
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, ReloadTimeout)
	defer cancel()
	var last error
	werr := wait.PollUntilContextCancel(tctx, 100*time.Millisecond, true, func(context.Context) (bool, error) {
		last = set.health()
		return last == nil, nil
	})
	if last != nil || werr != nil {
		set.cancel()
		err := utilerrors.NewAggregate([]error{last, werr})
		a.opts.Log.Error("the authentication config file's issuers did not answer: kept the previous configuration", "path", a.opts.Path, "err", err)
		return err
	}
	old := a.jwt.Swap(set)
	a.tracked = string(data)
	a.opts.Log.Info("reloaded the authentication config file", "path", a.opts.Path, "issuers", set.issuers)
	// Requests already holding the old set finish with it; its key-set
	// refreshes stop a minute later, as kube's do.
	go func() {
		t := time.NewTimer(time.Minute)
		defer t.Stop()
		select {
		case <-a.ctx.Done():
		case <-t.C:
		}
		old.cancel()
	}()
	return nil
}
