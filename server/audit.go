package server

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/google/uuid"
	"github.com/labstack/echo/v4"
	"gopkg.in/natefinch/lumberjack.v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metainternalversionscheme "k8s.io/apimachinery/pkg/apis/meta/internalversion/scheme"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/audit/policy"
	"k8s.io/apiserver/pkg/endpoints/filters"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/warning"
	auditbuffered "k8s.io/apiserver/plugin/pkg/audit/buffered"
	auditlog "k8s.io/apiserver/plugin/pkg/audit/log"
	auditwebhook "k8s.io/apiserver/plugin/pkg/audit/webhook"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
)

// Auditing is kube-apiserver's, with its own parts: the policy file is
// read and evaluated by k8s.io/apiserver/pkg/audit/policy, events are made
// by its audit filters at kube's stages (RequestReceived, ResponseStarted
// for long-running requests, ResponseComplete, Panic) and written by its
// log backend (rotated by lumberjack, as kube's) and webhook backend
// (batched, as kube's default). Request and response bodies are added
// where the handlers decode and encode them, at the level the policy asks.

// AuditConfig is kube-apiserver's --audit-* flags.
type AuditConfig struct {
	// PolicyFile is an audit.k8s.io Policy; without one nothing is
	// recorded (as kube-apiserver).
	PolicyFile string
	// LogPath is the file events are appended to ("-": standard output);
	// LogMaxAge (days), LogMaxBackups and LogMaxSize (megabytes) rotate
	// it; LogFormat is "json" (default) or "legacy".
	LogPath                              string
	LogMaxAge, LogMaxBackups, LogMaxSize int
	LogFormat                            string
	// WebhookConfigFile is a kubeconfig naming the webhook events are
	// sent to, in batches.
	WebhookConfigFile string
}

// auditing is the configured policy and backends; nil means off.
type auditing struct {
	policy  audit.PolicyRuleEvaluator
	backend audit.Backend
	stop    chan struct{}
	stopped sync.Once
}

// newAuditing reads the policy and opens the backends.
func newAuditing(cfg AuditConfig, log interface{ Warn(string, ...any) }) (*auditing, error) {
	if cfg.PolicyFile == "" {
		if cfg.LogPath != "" || cfg.WebhookConfigFile != "" {
			log.Warn("no audit policy file: no audit events are recorded")
		}
		return nil, nil
	}
	p, err := policy.LoadPolicyFromFile(cfg.PolicyFile)
	if err != nil {
		return nil, fmt.Errorf("--audit-policy-file: %w", err)
	}
	var backends []audit.Backend
	if cfg.LogPath != "" {
		format := cfg.LogFormat
		if format == "" {
			format = auditlog.FormatJson
		}
		if format != auditlog.FormatJson && format != auditlog.FormatLegacy {
			return nil, fmt.Errorf("--audit-log-format %q: want %s or %s", format, auditlog.FormatJson, auditlog.FormatLegacy)
		}
		var w io.Writer = os.Stdout
		if cfg.LogPath != "-" {
			// Fail at start-up on a path that cannot be written, making
			// its directory first, as kube.
			if err := os.MkdirAll(filepath.Dir(cfg.LogPath), 0o700); err != nil {
				return nil, fmt.Errorf("--audit-log-path: %w", err)
			}
			f, err := os.OpenFile(cfg.LogPath, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
			if err != nil {
				return nil, fmt.Errorf("--audit-log-path: %w", err)
			}
			f.Close()
			w = &lumberjack.Logger{Filename: cfg.LogPath, MaxAge: cfg.LogMaxAge, MaxBackups: cfg.LogMaxBackups, MaxSize: cfg.LogMaxSize}
		}
		// kube-apiserver's default --audit-log-mode, blocking: a failed
		// write is logged and the request goes on (blocking-strict, which
		// fails it, is not the default).
		backends = append(backends, ignoreErrors{auditlog.NewBackend(w, format, auditv1.SchemeGroupVersion)})
	}
	if cfg.WebhookConfigFile != "" {
		wh, err := auditwebhook.NewBackend(cfg.WebhookConfigFile, auditv1.SchemeGroupVersion,
			wait.Backoff{Duration: 10 * time.Second, Factor: 1.5, Jitter: 0.2, Steps: 5}, nil)
		if err != nil {
			return nil, fmt.Errorf("--audit-webhook-config-file: %w", err)
		}
		// kube-apiserver's default webhook mode and batch settings.
		backends = append(backends, auditbuffered.NewBackend(wh, auditbuffered.BatchConfig{
			BufferSize: 10000, MaxBatchSize: 400, MaxBatchWait: 30 * time.Second,
			ThrottleEnable: true, ThrottleQPS: 10, ThrottleBurst: 15, AsyncDelegate: true,
		}))
	}
	if len(backends) == 0 {
		log.Warn("an audit policy but no audit backend: no audit events are recorded")
		return nil, nil
	}
	a := &auditing{policy: policy.NewPolicyRuleEvaluator(p), backend: audit.Union(backends...), stop: make(chan struct{})}
	if err := a.backend.Run(a.stop); err != nil {
		return nil, err
	}
	return a, nil
}

// ignoreErrors is kube's blocking mode around a backend: the request
// does not fail when its event cannot be written.
type ignoreErrors struct{ audit.Backend }

func (b ignoreErrors) ProcessEvents(ev ...*auditinternal.Event) bool {
	b.Backend.ProcessEvents(ev...)
	return true
}

// StopAuditing flushes and closes the audit backends; call it once the
// server has stopped serving. Later calls do nothing.
func (s *Server) StopAuditing() {
	if s.audit != nil {
		s.audit.stopped.Do(func() {
			close(s.audit.stop)
			s.audit.backend.Shutdown()
		})
	}
}

// auditInit gives every request what kube's WithAuditInit,
// WithRequestInfo and WithWarningRecorder filters give it: an audit
// context with its Audit-Id (the request's own header, else a new UUID,
// echoed in the response), kube's request info, which the audit filters
// and the authorizer read, and the recorder through which kube's code
// adds Warning headers (see warningRecorder).
// Done in place rather than by wrapping kube's filters: every request
// passes here.
func (s *Server) auditInit(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		info, err := requestInfoFactory.NewRequestInfo(r)
		if err != nil {
			return apierrors.NewInternalError(err)
		}
		// Received now, as kube's first filters mark it: the audit
		// event's requestReceivedTimestamp and flow control's wait limit
		// count from here, authentication included.
		ctx := genericapirequest.WithReceivedTimestamp(genericapirequest.WithRequestInfo(audit.WithAuditContext(r.Context()), info), time.Now())
		id := r.Header.Get(auditinternal.HeaderAuditID)
		if id == "" {
			id = uuid.NewString()
		}
		audit.WithAuditID(ctx, types.UID(id))
		h := c.Response().Header()
		if h.Get(auditinternal.HeaderAuditID) == "" {
			h.Set(auditinternal.HeaderAuditID, id)
		}
		// The warning recorder joins the same context: each context
		// added here used to cost the request a copy of itself.
		ctx = warning.WithWarningRecorder(ctx, &warningRecorder{h: h})
		if s.audit != nil && info.Verb != "watch" {
			// kube's latency trackers, which its audit filter turns into
			// the apiserver.latency.k8s.io/* annotations of a request
			// slower than 500 ms: authentication, authorization, the
			// priority-and-fairness queue and admission webhooks record
			// into them. Only with auditing on: they are a dozen
			// allocations a request.
			ctx = genericapirequest.WithLatencyTrackers(ctx)
		}
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}

// auditRequests is kube's audit filter, after authentication: it decides
// the request's level from the policy and records its stages. Errors are
// answered inside it, so the recorded status is the one sent.
func (s *Server) auditRequests() echo.MiddlewareFunc {
	if s.audit == nil {
		return func(next echo.HandlerFunc) echo.HandlerFunc { return next }
	}
	longRunning := func(r *http.Request, _ *genericapirequest.RequestInfo) bool { return longRunning(r) }
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			filters.WithAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				c.SetRequest(r)
				c.SetResponse(echo.NewResponse(w, c.Echo()))
				if err := next(c); err != nil {
					s.errorHandler(err, c)
				}
			}), s.audit.backend, s.audit.policy, longRunning).ServeHTTP(c.Response(), c.Request())
			return nil
		}
	}
}

// auditUnauthorized records a request whose credentials failed, as kube's
// failed-authentication audit does, then answers 401.
func (s *Server) auditUnauthorized(write func(echo.Context) error) func(echo.Context) error {
	if s.audit == nil {
		return write
	}
	return func(c echo.Context) error {
		var err error
		filters.WithFailedAuthenticationAudit(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			c.SetRequest(r)
			c.SetResponse(echo.NewResponse(w, c.Echo()))
			// kube's 401 is written as an object, which records its Status
			// over the attempted methods (reason Unauthorized).
			s.auditStatus(c, metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
				Message: "Unauthorized", Reason: metav1.StatusReasonUnauthorized, Code: http.StatusUnauthorized})
			err = write(c)
		}), s.audit.backend, s.audit.policy).ServeHTTP(c.Response(), c.Request())
		return err
	}
}

// auditAt reports whether the request's audit event is recorded at level
// or above: false, and free, when auditing is off.
func (s *Server) auditAt(c echo.Context, level auditinternal.Level) bool {
	if s.audit == nil {
		return false
	}
	ac := audit.AuditContextFrom(c.Request().Context())
	return ac != nil && ac.Enabled() && !ac.GetEventLevel().Less(level)
}

// auditRequestObject adds a decoded request body to the audit event.
func (r *request) auditRequestObject(obj runtime.Object) {
	if r.s.auditAt(r.c, auditinternal.LevelRequest) && obj != nil {
		// kube decodes a body with its defaults before recording it: a
		// Service's targetPort is its port there, not 0. (Custom
		// resources come defaulted from their decoder.)
		if _, ok := obj.(*unstructured.Unstructured); !ok {
			obj = obj.DeepCopyObject()
			legacyscheme.Scheme.Default(obj)
		}
	}
	if r.s.auditAt(r.c, auditinternal.LevelMetadata) && obj != nil {
		gvr := runtimeschema.GroupVersionResource{Group: r.t.Group, Version: r.t.Version, Resource: r.t.Resource}
		audit.LogRequestObject(r.ctx, obj, gvr.GroupVersion(), gvr, r.ri.Subresource, r.s.codec.Serializer())
	}
}

// auditPatch adds a patch body to the audit event.
func (r *request) auditPatch(patch []byte) {
	if r.s.auditAt(r.c, auditinternal.LevelMetadata) {
		audit.LogRequestPatch(r.ctx, patch)
	}
}

// auditResponse adds an answered object to the audit event.
func (r *request) auditResponse(obj runtime.Object) {
	if r.s.auditAt(r.c, auditinternal.LevelMetadata) && obj != nil {
		audit.LogResponseObject(r.ctx, obj, runtimeschema.GroupVersion{Group: r.t.Group, Version: r.t.Version}, r.s.codec.Serializer())
	}
}

// auditView adds an answer in the view the client asked for: a
// meta.k8s.io Table or PartialObjectMetadata is recorded as such, in its
// own version, as kube records what it sends.
func (r *request) auditView(obj runtime.Object) {
	if obj == nil || !r.s.auditAt(r.c, auditinternal.LevelMetadata) {
		return
	}
	if gvk := obj.GetObjectKind().GroupVersionKind(); gvk.Group == metav1.GroupName {
		audit.LogResponseObject(r.ctx, obj, gvk.GroupVersion(), metainternalversionscheme.Codecs)
		return
	}
	r.auditResponse(obj)
}

// auditStatus adds an error's Status to the audit event.
func (s *Server) auditStatus(c echo.Context, st metav1.Status) {
	if s.auditAt(c, auditinternal.LevelMetadata) {
		audit.LogResponseObject(c.Request().Context(), &st, metav1.SchemeGroupVersion, s.codec.Serializer())
	}
}
