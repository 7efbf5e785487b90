package registry

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apiserver/pkg/admission"
	kubeinitializer "k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/admission/plugin/namespace/lifecycle"
	mutatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	validatingpolicy "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	webhookinitializer "k8s.io/apiserver/pkg/admission/plugin/webhook/initializer"
	apiserverinstall "k8s.io/apiserver/pkg/apis/apiserver/install"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/compatibility"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	certapproval "k8s.io/kubernetes/plugin/pkg/admission/certificates/approval"
	"k8s.io/kubernetes/plugin/pkg/admission/certificates/ctbattest"
	certsigning "k8s.io/kubernetes/plugin/pkg/admission/certificates/signing"
	certsubjectrestriction "k8s.io/kubernetes/plugin/pkg/admission/certificates/subjectrestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/defaulttolerationseconds"
	"k8s.io/kubernetes/plugin/pkg/admission/limitranger"
	"k8s.io/kubernetes/plugin/pkg/admission/network/defaultingressclass"
	"k8s.io/kubernetes/plugin/pkg/admission/noderestriction"
	"k8s.io/kubernetes/plugin/pkg/admission/nodetaint"
	"k8s.io/kubernetes/plugin/pkg/admission/podtopologylabels"
	"k8s.io/kubernetes/plugin/pkg/admission/priority"
	"k8s.io/kubernetes/plugin/pkg/admission/runtimeclass"
	"k8s.io/kubernetes/plugin/pkg/admission/security/podsecurity"
	"k8s.io/kubernetes/plugin/pkg/admission/serviceaccount"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/persistentvolume/resize"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageclass/setdefault"
	"k8s.io/kubernetes/plugin/pkg/admission/storage/storageobjectinuseprotection"

	"github.com/tabula-dev/tabula/schema"
)

// Admission is the registry's admission step: every write — a handler's
// or an in-process controller's — is shown to kube's own admission
// plugins (k8s.io/apiserver/pkg/admission) with the writer's identity:
// mutation before the kind's storage hooks, strategy and validation,
// validation after them, where kube-apiserver runs them. Plugins see kube's
// internal types, converted from the object only when a plugin asks for
// it; what a mutating plugin changes is converted back.
//
// NodeRestriction (what a kubelet's system:node:<name> identity may
// change: its own Node and Lease, the status of its own pods, mirror pods
// bound to it, tokens for its pods, …) is on by default, as every
// production cluster enables it beside the Node authorizer.

// loopbackUser is who the server's own writes are, to plugins (as
// kube-apiserver's loopback client).
var loopbackUser = &user.DefaultInfo{Name: user.APIServerUser, Groups: []string{user.SystemPrivilegedGroup}}

// admissionReads are the kinds the plugins read (liveInformers).
var admissionReads = [][2]string{{"", "pods"}, {"", "nodes"}, {"", "serviceaccounts"}, {"", "namespaces"},
	{"", "persistentvolumeclaims"}, {"", "persistentvolumes"}, {"storage.k8s.io", "csidrivers"},
	{"", "services"}, {"discovery.k8s.io", "endpointslices"}, {"", "limitranges"},
	{"storage.k8s.io", "storageclasses"}, {"networking.k8s.io", "ingressclasses"}, {"node.k8s.io", "runtimeclasses"},
	{admissionregistrationGroup, "mutatingwebhookconfigurations"}, {admissionregistrationGroup, "validatingwebhookconfigurations"},
	{admissionregistrationGroup, "validatingadmissionpolicies"}, {admissionregistrationGroup, "validatingadmissionpolicybindings"},
	{"", "resourcequotas"}, {"scheduling.k8s.io", "priorityclasses"}}

// admissionReadsServed: the registry serves every kind the plugins read
// (a registry of a few kinds, in tests, has no admission).
func admissionReadsServed(types *schema.Registry) bool {
	for _, r := range admissionReads {
		if _, ok := types.Lookup(r[0], "v1", r[1]); !ok {
			return false
		}
	}
	return true
}

// newAdmission builds the chain of the enabled kube plugins over g.
func newAdmission(g *Registry, cfg AdmissionConfig) (admission.Interface, error) {
	names, err := cfg.enabled()
	if err != nil {
		return nil, err
	}
	g.admissionOn = map[string]bool{}
	var kube []string
	for _, n := range names {
		g.admissionOn[n] = true
		if kubePlugins[n] {
			kube = append(kube, n)
		}
	}
	if g.admissionOn["MutatingAdmissionPolicy"] && utilfeature.DefaultFeatureGate.Enabled(genericfeatures.MutatingAdmissionPolicy) {
		if _, ok := g.types.Lookup(admissionregistrationGroup, "v1beta1", "mutatingadmissionpolicies"); !ok {
			return nil, errors.New("the MutatingAdmissionPolicy feature gate needs its API: --runtime-config=admissionregistration.k8s.io/v1beta1=true")
		}
	}
	plugins := admission.NewPlugins()
	lifecycle.Register(plugins)
	serviceaccount.Register(plugins)
	priority.Register(plugins)
	defaulttolerationseconds.Register(plugins)
	noderestriction.Register(plugins)
	limitranger.Register(plugins)
	podsecurity.Register(plugins)
	nodetaint.Register(plugins)
	setdefault.Register(plugins)
	storageobjectinuseprotection.Register(plugins)
	resize.Register(plugins)
	runtimeclass.Register(plugins)
	certapproval.Register(plugins)
	certsigning.Register(plugins)
	ctbattest.Register(plugins)
	certsubjectrestriction.Register(plugins)
	defaultingressclass.Register(plugins)
	podtopologylabels.Register(plugins)
	mutatingpolicy.Register(plugins)
	validatingpolicy.Register(plugins)
	resourcequota.Register(plugins)
	var initializers admission.PluginInitializers // set below, before any write
	g.registerLazyWebhooks(plugins, &initializers)

	configScheme := runtime.NewScheme()
	apiserverinstall.Install(configScheme)
	provider, err := admission.ReadAdmissionConfiguration(kube, cfg.ConfigFile, configScheme)
	if err != nil {
		return nil, fmt.Errorf("admission-control-config-file: %w", err)
	}
	if r, err := provider.ConfigFor("ResourceQuota"); err == nil && r != nil {
		g.quotaConfigured = true
	}
	// The authorizer is set once the server has built it.
	az := authorizer.AuthorizerFunc(func(ctx context.Context, a authorizer.Attributes) (authorizer.Decision, string, error) {
		if az := g.authorizer(); az != nil {
			return az.Authorize(ctx, a)
		}
		return authorizer.DecisionNoOpinion, "no authorizer", nil
	})
	initializers = admission.PluginInitializers{
		kubeinitializer.New(registryClient{g: g}, noDynamicClient{}, liveInformers{g: g}, az, utilfeature.DefaultFeatureGate,
			compatibility.NewEffectiveVersionFromString("1.35", "", ""), make(chan struct{}), restMapper{types: g.types}),
		webhookinitializer.NewPluginInitializer(nil, g.ServiceResolver()),
		quotaConfiguration{g: g},
	}
	chain, err := plugins.NewFromPlugins(kube, provider, initializers, idleWhen(g))
	if err != nil {
		return nil, err
	}
	// Audit annotations the plugins add reach the request's audit event.
	return admission.WithAudit(chain), nil
}

// admissionAttributes are one write's attributes; the internal objects
// are made on first use.
type admissionAttributes struct {
	admission.Attributes
	obj, old         runtime.Object // as stored (versioned)
	internal         runtime.Object
	internalOld      runtime.Object
	converted, oldOK bool
	err              error
	// fieldsValid: see admissionWrite.
	fieldsValid bool

	annotationsMu sync.Mutex
	annotations   map[string]leveledAnnotation
}

// AddAnnotation and AddAnnotationWithLevel keep the plugins' audit
// annotations (a webhook's auditAnnotations among them) for
// admission.WithAudit, which adds them to the request's audit event.
func (a *admissionAttributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

func (a *admissionAttributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if errs := validation.IsQualifiedName(key); len(errs) > 0 {
		return fmt.Errorf("annotation key has invalid format %s: %s", key, strings.Join(errs, ","))
	}
	if level.Less(auditinternal.LevelMetadata) {
		return fmt.Errorf("admission annotations are not allowed to be set at audit level lower than Metadata, key: %q, level: %s", key, level)
	}
	a.annotationsMu.Lock()
	defer a.annotationsMu.Unlock()
	if old, ok := a.annotations[key]; ok && (old.value != value || old.level != level) {
		return fmt.Errorf("admission annotations are not allowd to be overwritten, key:%q, old value: %v, new value: %v", key, old.value, value)
	}
	if a.annotations == nil {
		a.annotations = map[string]leveledAnnotation{}
	}
	a.annotations[key] = leveledAnnotation{value: value, level: level}
	return nil
}

// GetAnnotations are the annotations recorded at maxLevel or below.
func (a *admissionAttributes) GetAnnotations(maxLevel auditinternal.Level) map[string]string {
	a.annotationsMu.Lock()
	defer a.annotationsMu.Unlock()
	var out map[string]string
	for k, v := range a.annotations {
		if v.level.Less(maxLevel) || v.level == maxLevel {
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v.value
		}
	}
	return out
}

type leveledAnnotation struct {
	value string
	level auditinternal.Level
}

func (a *admissionAttributes) GetObject() runtime.Object {
	if !a.converted {
		a.converted = true
		a.internal, a.err = toInternal(a.obj)
	}
	return a.internal
}

func (a *admissionAttributes) GetOldObject() runtime.Object {
	if !a.oldOK {
		a.oldOK = true
		var err error
		if a.internalOld, err = toInternal(a.old); err != nil && a.err == nil {
			a.err = err
		}
	}
	return a.internalOld
}

// toInternal converts a versioned built-in object to kube's internal
// version (nil stays nil; kinds kube does not know are passed as they are).
func toInternal(obj runtime.Object) (runtime.Object, error) {
	if obj == nil {
		return nil, nil
	}
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return obj, nil
	}
	gv := runtimeschema.GroupVersion{Group: gvks[0].Group, Version: runtime.APIVersionInternal}
	// A copy: the conversion may share memory with obj, and a plugin may
	// change what it is given.
	out, err := legacyscheme.Scheme.ConvertToVersion(obj.DeepCopyObject(), gv)
	if err != nil {
		return obj, nil // not a kind kube converts: plugins see it as stored
	}
	return out, nil
}

// builtinInterfaces is what plugins convert and default built-in kinds
// with (kube's scheme); custom resources have their own (crObjects).
var builtinInterfaces = admission.NewObjectInterfacesFromScheme(legacyscheme.Scheme)

// admissionWrite names one write for admission.
type admissionWrite struct {
	op          admission.Operation
	obj, old    runtime.Object
	namespace   string
	name        string
	subresource string
	// kind is the object's kind when it is not the resource's (a
	// subresource's: Eviction, Binding, TokenRequest).
	kind    *runtimeschema.GroupVersionKind
	options runtime.Object
	dryRun  bool
	// sent are the request's options as the client sent them, for the
	// options plugins see.
	sent SentOptions
	// fieldsValid: obj's managedFields are what the write's field
	// manager made (see fieldsGuard).
	fieldsValid bool
}

// Admission runs in two phases, where kube-apiserver runs them: mutation
// (built-in plugins, then mutating webhooks, reinvoked when asked) on the
// object as the client sent it, before the strategy; validation on the
// object as it will be stored, after the kind's validation.
const (
	mutate   = 1 << iota // the plugins' Admit
	validate             // the plugins' Validate
)

// admit runs the mutating phase on one write of x's resource; a plugin's
// change to the object is copied back into w.obj.
func (x *Resource) admit(ctx context.Context, w admissionWrite) error {
	return x.admitPhases(ctx, w, mutate)
}

// admitValidate runs the validating phase on the object to be stored.
func (x *Resource) admitValidate(ctx context.Context, w admissionWrite) error {
	return x.admitPhases(ctx, w, validate)
}

func (x *Resource) admitPhases(ctx context.Context, w admissionWrite, phases int) error {
	if w.op == admission.Create && x.t.Terminating() {
		// kube's CRD handler wraps admission so (forbidCreateAdmission).
		return apierrors.NewForbidden(x.t.GroupResource(), w.name, errors.New("create not allowed while custom resource definition is terminating"))
	}
	chain := x.g.admission
	if chain == nil || !chain.Handles(w.op) {
		return nil
	}
	who, ok := genericapirequest.UserFrom(ctx)
	if !ok || who == nil {
		who = loopbackUser
	}
	kind := runtimeschema.GroupVersionKind{Group: x.t.Group, Version: x.t.Version, Kind: x.t.Kind}
	if w.kind != nil {
		kind = *w.kind
	}
	resource := runtimeschema.GroupVersionResource{Group: x.t.Group, Version: x.t.Version, Resource: x.t.Resource}
	// The options are the request's, as kube's handlers pass them: with
	// their kind, dryRun and fieldManager (webhooks see them).
	var dryRun []string
	if w.dryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	meta := func(kind string) metav1.TypeMeta { return metav1.TypeMeta{Kind: kind, APIVersion: "meta.k8s.io/v1"} }
	switch o := w.options.(type) {
	case nil:
		switch w.op {
		case admission.Create:
			w.options = &metav1.CreateOptions{TypeMeta: meta("CreateOptions"), DryRun: dryRun, FieldManager: w.sent.FieldManager, FieldValidation: w.sent.FieldValidation}
		case admission.Update:
			w.options = &metav1.UpdateOptions{TypeMeta: meta("UpdateOptions"), DryRun: dryRun, FieldManager: w.sent.FieldManager, FieldValidation: w.sent.FieldValidation}
		case admission.Delete:
			w.options = &metav1.DeleteOptions{TypeMeta: meta("DeleteOptions"), DryRun: dryRun}
		}
	case *metav1.DeleteOptions:
		c := *o
		c.TypeMeta = meta("DeleteOptions")
		w.options = &c
	}
	if x.t.InOwnNamespace {
		w.namespace = w.name
	}
	a := &admissionAttributes{
		Attributes: admission.NewAttributesRecord(nil, nil, kind, w.namespace, w.name, resource, w.subresource, w.op, w.options, w.dryRun, who),
		obj:        w.obj, old: w.old, fieldsValid: w.fieldsValid,
	}
	o := x.objectInterfaces(w.kind != nil)
	if m, ok := chain.(admission.MutationInterface); ok && phases&mutate != 0 {
		if err := m.Admit(ctx, a, o); err != nil {
			return admissionError(err)
		}
	}
	if v, ok := chain.(admission.ValidationInterface); ok && phases&validate != 0 {
		if err := v.Validate(ctx, a, o); err != nil {
			return admissionError(err)
		}
	}
	if a.err != nil {
		return apierrors.NewInternalError(a.err)
	}
	// What a mutating plugin changed goes back into the stored version.
	if phases&mutate != 0 && a.converted && a.internal != nil && a.internal != w.obj && w.obj != nil {
		if err := legacyscheme.Scheme.Convert(a.internal, w.obj, nil); err != nil {
			return apierrors.NewInternalError(fmt.Errorf("admission: converting the admitted object back: %w", err))
		}
	}
	return nil
}

// admissionError keeps a plugin's API error. Anything else reaches
// kube-apiserver's response writer as it is, which answers 500 with no
// reason and the error's text (responsewriters ErrorToAPIStatus): the
// quota plugin's "insufficient quota to match these scopes" is one.
func admissionError(err error) error {
	if _, ok := err.(apierrors.APIStatus); ok {
		return err
	}
	return &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
		Reason: metav1.StatusReasonUnknown, Message: err.Error()}}
}

// MutateCreate and ValidateCreate are admission's two phases for the
// create of an object that is not stored (the reviews, answered from the
// request): kube's create handler mutates it, and their storage calls
// validation once its own checks pass.
func (x *Resource) MutateCreate(ctx context.Context, namespace string, obj runtime.Object, dryRun bool) error {
	return x.admitPhases(ctx, admissionWrite{op: admission.Create, obj: obj, namespace: namespace, name: mustAccessor(obj).GetName(), dryRun: dryRun}, mutate)
}

func (x *Resource) ValidateCreate(ctx context.Context, namespace string, obj runtime.Object, dryRun bool) error {
	return x.admitPhases(ctx, admissionWrite{op: admission.Create, obj: obj, namespace: namespace, name: mustAccessor(obj).GetName(), dryRun: dryRun}, validate)
}

// AdmitSubresource runs admission for a subresource write that is not a
// store write of x's objects (pods/eviction, pods/binding,
// serviceaccounts/token): obj is the request's object, of kind kind.
func (x *Resource) AdmitSubresource(ctx context.Context, namespace, name, subresource string, kind *schema.Type, obj runtime.Object, dryRun bool) error {
	return x.admitSubresource(ctx, namespace, name, subresource, kind, obj, dryRun, mutate|validate)
}

// MutateSubresource and ValidateSubresource are AdmitSubresource's two
// phases, for a subresource whose storage fills in the request between
// them (serviceaccounts/token: validation sees its defaults, as kube's
// token storage calls it).
func (x *Resource) MutateSubresource(ctx context.Context, namespace, name, subresource string, kind *schema.Type, obj runtime.Object, dryRun bool) error {
	return x.admitSubresource(ctx, namespace, name, subresource, kind, obj, dryRun, mutate)
}

func (x *Resource) ValidateSubresource(ctx context.Context, namespace, name, subresource string, kind *schema.Type, obj runtime.Object, dryRun bool) error {
	return x.admitSubresource(ctx, namespace, name, subresource, kind, obj, dryRun, validate)
}

func (x *Resource) admitSubresource(ctx context.Context, namespace, name, subresource string, kind *schema.Type, obj runtime.Object, dryRun bool, phases int) error {
	gvk := runtimeschema.GroupVersionKind{Group: kind.Group, Version: kind.Version, Kind: kind.Kind}
	return x.admitPhases(ctx, admissionWrite{op: admission.Create, obj: obj, namespace: namespace, name: name,
		subresource: subresource, kind: &gvk, dryRun: dryRun}, phases)
}

// AdmitConnect runs admission for a CONNECT of one of x's objects (pods
// exec, attach, portforward), as kube-apiserver's connect handler does
// before it opens the stream: opts is the request's options, of the
// version the client sent (v1 PodExecOptions, …).
func (x *Resource) AdmitConnect(ctx context.Context, namespace, name, subresource string, opts runtime.Object) error {
	gvks, _, err := legacyscheme.Scheme.ObjectKinds(opts)
	if err != nil || len(gvks) == 0 {
		return apierrors.NewInternalError(fmt.Errorf("admission: connect options %T: %v", opts, err))
	}
	return x.admitPhases(ctx, admissionWrite{op: admission.Connect, obj: opts, namespace: namespace, name: name,
		subresource: subresource, kind: &gvks[0]}, mutate|validate)
}

type admittedKey struct{}

// AdmittedAs marks ctx's writes as admitted already as another operation:
// an eviction, admitted as the create of pods/eviction, deletes its Pod
// without the Pod's DELETE admission, as kube-apiserver's eviction does.
func AdmittedAs(ctx context.Context) context.Context {
	return context.WithValue(ctx, admittedKey{}, true)
}

func admittedAs(ctx context.Context) bool {
	v, _ := ctx.Value(admittedKey{}).(bool)
	return v
}
