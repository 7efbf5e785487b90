package schema

import (
	"fmt"
	"slices"
	"sync/atomic"

	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Type describes one served resource in one group-version.
type Type struct {
	Group    string
	Version  string
	Kind     string
	ListKind string
	// Resource is the plural, lower-case name used in URLs.
	Resource   string
	Singular   string
	ShortNames []string
	Categories []string
	Namespaced bool
	// Verbs as discovery reports them.
	Verbs []string

	// StorageResource names the collection in the store. Two group-versions
	// of one underlying resource (core/v1 and events.k8s.io/v1 Events) share
	// it; the stored bytes are in the storage form, and ToStorage/FromStorage
	// convert.
	StorageResource string
	// StorageVersion is the version objects are stored as when it is
	// not this Type's own and no other Type serves it (a custom
	// resource's storage version); empty otherwise.
	StorageVersion string
	// StorageUnserved: the storage version is not served (a custom
	// resource's may not be), so discovery names no storage version
	// hash, as kube's CRD discovery names none then.
	StorageUnserved bool

	// New returns an empty object of the Go type; NewList an empty list.
	New     func() runtime.Object
	NewList func() runtime.Object

	// Unstructured objects are unstructured.Unstructured described by a
	// schema, not a Go type (custom resources): they have no Protobuf
	// form, list items carry kind and apiVersion, and strategic merge
	// patch does not apply to them.
	Unstructured bool
	// Coerce runs on every decoded request body (custom resources: prune
	// unknown fields, apply defaults; built-in kinds whose annotations
	// convert: check that they do); it returns the unknown fields'
	// paths, which the request's fieldValidation judges.
	Coerce func(obj runtime.Object) (unknown []string, err error)

	// OpenAPIV3 and OpenAPIV2 build the documents of a Type without Go
	// definitions (a custom resource's, from its CRD's schema); the
	// server's OpenAPI service merges them into its group-version's.
	OpenAPIV3 func() (*spec3.OpenAPI, error)
	OpenAPIV2 func() (*spec.Swagger, error)

	// ManagedFields describes the kind to field management (managedFields
	// and Server-Side Apply); nil for kinds that are never stored.
	ManagedFields func() (*ManagedFields, error)

	// ToStorage converts an object of this Type to the stored form and
	// FromStorage back; nil means the served form is the stored form.
	ToStorage   func(runtime.Object) (runtime.Object, error)
	FromStorage func(runtime.Object) (runtime.Object, error)
	// LossyStorage: the stored form can lose what an object of this Type
	// holds (a custom resource served in a version other than its storage
	// version is pruned to the storage version's schema), so a write is
	// answered with what was stored, decoded, as kube-apiserver answers.
	LossyStorage bool
	// StoresVersion: its objects' stored bytes name the version they
	// were stored in (custom resources, whose CRD's storage version may
	// change while objects stored in the old one remain).
	StoresVersion bool
	// Convertor converts a custom resource between its served versions
	// (admission gives webhooks the version they ask for); nil for
	// built-in kinds, which kube's scheme converts.
	Convertor runtime.ObjectConvertor

	// PrepareForCreate sets server-owned defaults on a new object
	// (for example a Namespace's phase and finalizers).
	PrepareForCreate func(obj runtime.Object)
	// Requested records who asks for a new object in it, after
	// PrepareForCreate (CertificateSigningRequests: spec.username, …).
	Requested func(obj runtime.Object, who Requester)
	// PrepareForUpdate carries server-owned fields from old to obj.
	PrepareForUpdate func(obj, old runtime.Object)
	// Validate checks an object before a create (old == nil) or update;
	// ObjectMeta checks are done by the generic path.
	Validate func(obj, old runtime.Object) field.ErrorList
	// PrepareStatus runs on a status write once its fields are narrowed,
	// for what kube's status strategy sets beyond them (a Pod keeps its
	// QoS class, a DaemonSet its template generation); ValidateStatus
	// validates a status write in place of Validate, as kube's status
	// strategy's ValidateUpdate does. Nil: nothing more, and validated as
	// the main resource.
	PrepareStatus  func(obj, old runtime.Object)
	ValidateStatus func(obj, old runtime.Object) field.ErrorList

	// Warnings are what the kind's strategy says about an accepted create
	// (old == nil) or update, sent as Warning headers (kube-apiserver's
	// WarningsOnCreate and WarningsOnUpdate).
	Warnings func(obj, old runtime.Object) []string
	// StatusWarnings are what its status strategy says about an accepted
	// status update (kube's WarningsOnUpdate of the status strategy).
	StatusWarnings func(obj, old runtime.Object) []string

	// ValidatesMeta says Validate checks ObjectMeta itself, with the
	// kind's own name rule (kube's validation functions do), so the
	// generic ObjectMeta checks are not run again.
	ValidatesMeta bool

	// NameIsDNSLabel: names must be DNS labels (Namespaces), not the
	// default DNS subdomains.
	NameIsDNSLabel bool
	// GenerateNameAsIs: generateName is the name itself, with nothing
	// appended (IPAddresses, named by their address).
	GenerateNameAsIs bool
	// MainWritesStatus: an update of the main resource writes the status
	// it carries too, though the kind has a status subresource (kube's
	// ServiceCIDR strategy resets nothing).
	MainWritesStatus bool
	// DeletePreconditionsOwn: kube's storage of the kind checks a
	// delete's preconditions itself, in its own words (Namespaces).
	DeletePreconditionsOwn bool
	// ValidateDeleteFirst: ValidateDelete runs before the object is read
	// (kube's PriorityClass storage refuses a system class's name before
	// it looks any further).
	ValidateDeleteFirst bool
	// ForegroundOnOrphanFalse: orphanDependents=false asks for a
	// foreground deletion (kube's namespace storage), where other kinds'
	// stores delete the dependents in the background.
	ForegroundOnOrphanFalse bool
	// FirstDeleteMarksOnly: the first delete only marks the object
	// (deletionTimestamp and PrepareForDelete), asking for no propagation,
	// grace period or new generation; later ones are the generic store's
	// (kube's CRD storage).
	FirstDeleteMarksOnly bool

	// PrepareForDelete changes an object as its delete begins (a
	// Namespace becomes Terminating).
	PrepareForDelete func(obj runtime.Object)
	// GracePeriod makes deletes graceful, as kube's strategies that check
	// a graceful delete (Pods): the seconds a delete of obj asked with
	// requested (nil: none) leaves it in place, marked, for its node to
	// stop it; 0 deletes it at once.
	GracePeriod func(obj runtime.Object, requested *int64) int64
	// RemovedByController: a delete only marks the object; a controller
	// removes it once its work is done (Namespaces, once empty), never
	// the removal of its last finalizer — unless SpecFinalized says the
	// kind's own finalizers are gone too (a Namespace whose
	// spec.finalizers kube-controller-manager's namespace controller
	// emptied through /finalize is removed, as kube-apiserver does).
	RemovedByController bool
	SpecFinalized       func(obj runtime.Object) bool

	// Virtual types are not stored: a create computes the answer into the
	// object and returns it (the review resources), or reads compute the
	// objects (ComponentStatuses).
	Virtual bool

	// Expiring objects live for the server's --event-ttl (core Events,
	// as etcd leases give them on kube-apiserver).
	Expiring bool

	// ValidateDelete may refuse to delete the named object (nil allows it),
	// as kube-apiserver's admission does for the system namespaces.
	ValidateDelete func(name string) error

	// Fields returns the selectable fields of obj (metadata.name and
	// metadata.namespace are always included by the generic path).
	Fields func(obj runtime.Object) map[string]string
	// FieldLabels lists the field selector keys this Type supports besides
	// metadata.name and metadata.namespace.
	FieldLabels []string
	// ConvertFieldLabel, when set, checks a field selector's label as
	// kube-apiserver's field label conversion for the kind does, and
	// names the field it selects (pods' legacy spec.host is
	// spec.nodeName); its error is the client's message.
	ConvertFieldLabel func(label, value string) (string, string, error)

	// Columns and Row give the server-side Table representation; nil means
	// the default Name / Created At columns.
	Columns []metav1.TableColumnDefinition
	Row     func(obj runtime.Object) ([]interface{}, error)
	// RowConditions, when set, are the conditions of an object's row, as
	// kube's printer sets them (Pods: Completed once they succeeded or
	// failed).
	RowConditions func(obj runtime.Object) []metav1.TableRowCondition
	// Cells, when set, are Row's cells with each Age-style one a Since,
	// unrendered: the row depends on the clock only there, so a server
	// can keep it by revision (kinds printed by kube's printers, which
	// read the clock themselves, have none).
	Cells func(obj runtime.Object) ([]interface{}, error)
	// TableOrder, when set, is the order kube's list printer puts a list
	// page's rows in (FlowSchemas: by matchingPrecedence, then name, the
	// order requests are matched in); nil keeps the list's own order.
	TableOrder func(a, b runtime.Object) int
	// NoTable: kube-apiserver's storage of the kind converts nothing to a
	// Table (reviews, bindings), so asking for one is not acceptable (406).
	NoTable bool

	// StatusMetadata: a status write takes the object's metadata from the
	// request too (labels, annotations, finalizers, owner references), as
	// the status strategies of most built-in kinds in kube-apiserver do,
	// resetting only the spec (kube-controller-manager's deployment
	// controller records a Deployment's revision annotation so);
	// StatusKeepsMetadata names the metadata fields such a write still
	// keeps as stored ("labels" of Deployments, "ownerReferences" of Pods).
	StatusMetadata      bool
	StatusKeepsMetadata []string
	// ResetPaths, when set for a subresource ("" for the main resource),
	// are the dotted field paths kube's strategy for it resets
	// (GetResetFields), in place of the ones ResetFields derives.
	ResetPaths map[string][]string
	// OwnedPaths, when set for a subresource, are the only fields (dotted
	// prefixes, "*" for any list item) a write through it is compared and
	// owned by, as kube's strategies' include filters
	// (GetResetFieldsFilter) for pods/ephemeralcontainers and pods/resize.
	OwnedPaths map[string][]string

	// OrphanByDefault makes a delete that names neither propagationPolicy
	// nor orphanDependents orphan the dependents, as kube-apiserver keeps
	// for v1 ReplicationControllers and Jobs; OrphanWarning, when set, is
	// the warning such a delete gets (Jobs').
	OrphanByDefault bool
	OrphanWarning   string
	// NoGCFinalizers: a delete never waits for the garbage collector
	// (kube's Unsupported collection policy, which Events have): it adds
	// no orphan or foregroundDeletion finalizer, whatever it asks for,
	// and takes off one the object carries.
	NoGCFinalizers bool

	// ReturnDeletedObject makes DELETE answer with the deleted object
	// instead of a Status (ServiceAccounts, as kube-apiserver does).
	ReturnDeletedObject bool

	// AllowCreateOnUpdate lets PUT create a missing object (Events, Leases).
	AllowCreateOnUpdate bool

	// UpdateNeedsResourceVersion refuses a PUT of an existing object (or
	// its status) that names no resourceVersion, where kube's strategy
	// does not allow unconditional updates (Leases, webhook
	// configurations, CRDs, custom resources, ...): a writer that lost
	// its read must not overwrite what it never saw.
	UpdateNeedsResourceVersion bool
	// InOwnNamespace: a request about one of these objects is in the
	// namespace the object names (a Namespace: kube's request info reads
	// /api/v1/namespaces/<name> so), which admission's namespace
	// selectors and webhooks see.
	InOwnNamespace bool

	// Subresources served besides the main resource, such as "status".
	Subresources []string

	// SubresourceInfo describes the subresources whose kind or verbs are
	// not the object's own get/patch/update (pods/log, pods/eviction, …).
	SubresourceInfo map[string]SubresourceInfo

	// SubresourceUpdates are the subresources that write part of the
	// object in a kind-specific way (pods/ephemeralcontainers,
	// pods/resize): Prepare makes the object to store from the request's
	// and the stored one, Validate replaces the kind's update validation.
	SubresourceUpdates map[string]SubresourceUpdate

	// Scale describes where the scale subresource (autoscaling/v1 Scale)
	// finds its numbers; "scale" is in Subresources when it is set.
	Scale *Scale

	// Deprecation is set for a kind this version serves but deprecates;
	// every request to it gets a Warning header.
	Deprecation *Deprecation

	// retired is closed when the Registry stops serving this Type (see
	// Retired); nil for kinds served for good.
	retired chan struct{}
	// terminating is set once the CRD serving this Type is being deleted
	// (see Terminating); nil for built-in kinds.
	terminating *atomic.Bool
}

// Terminating says the CRD serving this Type is being deleted (its
// Terminating condition is True): as on kube-apiserver, no new objects
// may be created meanwhile.
func (t *Type) Terminating() bool { return t.terminating != nil && t.terminating.Load() }

// ServedVerbs are the verbs discovery lists now: a custom resource whose
// CRD is being deleted lists those it still serves (no create, update or
// patch), as kube's discovery controller lists them.
func (t *Type) ServedVerbs() []string {
	if t.Terminating() {
		return terminatingVerbs
	}
	return t.Verbs
}

var terminatingVerbs = []string{"delete", "deletecollection", "get", "list", "watch"}

// SetTerminating marks a CRD's Type as Terminating; built-in kinds never are.
func (t *Type) SetTerminating() {
	if t.terminating != nil {
		t.terminating.Store(true)
	}
}

// Retired is closed once the Registry no longer serves this Type: its
// CustomResourceDefinition was deleted or rebuilt. Requests that last
// (watches) end then, as kube-apiserver tears a CRD's storage down. Nil
// (never ready) for built-in kinds.
func (t *Type) Retired() <-chan struct{} { return t.retired }

// Scale locates a scalable object's replica counts and selector, as a
// CustomResourceDefinition's scale subresource does: dotted paths from
// the object's root.
type Scale struct {
	SpecReplicasPath   string // ".spec.replicas"
	StatusReplicasPath string // ".status.replicas"
	// LabelSelectorPath may be empty (no selector); what it holds is
	// read as SelectorForm says.
	LabelSelectorPath string
	SelectorForm      SelectorForm
}

// ScaleKind is the kind every scale subresource reads and writes. Its
// Table is kube's scale printer's (kubectl get --subresource=scale).
// TokenRequestKind is the kind serviceaccounts/token reads and answers
// (never stored): its managedFields are the writer's, as kube's create
// handler records them.
var TokenRequestKind = &Type{Group: "authentication.k8s.io", Version: "v1", Kind: "TokenRequest", Resource: "tokenrequests",
	New: func() runtime.Object { return &authenticationv1.TokenRequest{} }}

var ScaleKind = &Type{Group: "autoscaling", Version: "v1", Kind: "Scale", Resource: "scale",
	New: func() runtime.Object { return &autoscalingv1.Scale{} },
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: descName},
		{Name: "Desired", Type: "integer", Description: autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Available", Type: "integer", Description: autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Age", Type: "string", Description: descAge},
	},
	Cells: scaleCells,
	Row:   withAges(scaleCells),
}

// CustomResourceScaleKind is ScaleKind as a custom resource's scale
// subresource prints it: apiextensions' own columns, not kube's printer's.
var CustomResourceScaleKind = &Type{Group: "autoscaling", Version: "v1", Kind: "Scale", Resource: "scale",
	New: ScaleKind.New,
	Columns: []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Format: "name", Description: descName},
		{Name: "Desired", Type: "integer", Description: "Number of desired replicas"},
		{Name: "Available", Type: "integer", Description: "Number of actual replicas"},
		{Name: "Age", Type: "date", Description: descAge},
	},
	Cells: scaleCells,
	Row:   withAges(scaleCells),
}

func scaleCells(obj runtime.Object) ([]interface{}, error) {
	sc, ok := obj.(*autoscalingv1.Scale)
	if !ok || sc == nil {
		return nil, wrongType(obj, "*v1.Scale")
	}
	return []interface{}{sc.Name, int64(sc.Spec.Replicas), int64(sc.Status.Replicas), Since(sc.CreationTimestamp.Time)}, nil
}

// SelectorForm is how a scalable object writes its selector.
type SelectorForm int

const (
	// SelectorString: already serialized (custom resources' status.selector).
	SelectorString SelectorForm = iota
	// SelectorLabelSelector: a metav1.LabelSelector (apps/v1 kinds).
	SelectorLabelSelector
	// SelectorMap: a map of labels (ReplicationControllers).
	SelectorMap
)

// Deprecation says when a served kind was deprecated and what replaces it.
type Deprecation struct {
	// In and RemovedIn are Kubernetes releases ("1.33"); RemovedIn may be
	// empty when no removal is planned.
	In, RemovedIn string
	// Replacement names the group-version and kind to use instead
	// ("discovery.k8s.io/v1 EndpointSlice"), if any.
	Replacement string
	// Message, when set, is the whole warning (a CRD version's
	// deprecationWarning).
	Message string
	// NoWarning: deprecated, but no warning is sent (a CRD version whose
	// deprecationWarning is empty).
	NoWarning bool
}

// DeprecationWarning is the Warning text kube-apiserver sends for requests
// to a deprecated kind, or "" when the Type is not deprecated.
func (t *Type) DeprecationWarning() string {
	d := t.Deprecation
	if d == nil || d.NoWarning {
		return ""
	}
	if d.Message != "" {
		return d.Message
	}
	msg := fmt.Sprintf("%s %s is deprecated", t.APIVersion(), t.Kind)
	if d.In != "" {
		msg += fmt.Sprintf(" in v%s+", d.In)
	}
	if d.RemovedIn != "" {
		msg += fmt.Sprintf(", unavailable in v%s+", d.RemovedIn)
	}
	if d.Replacement != "" {
		msg += "; use " + d.Replacement
	}
	return msg
}

// HasSubresource reports whether sub is one of the Type's subresources.
func (t *Type) HasSubresource(sub string) bool {
	for _, s := range t.Subresources {
		if s == sub {
			return true
		}
	}
	return false
}

// Requester is the user making a request, as kinds' strategies see it.
type Requester struct {
	Name, UID string
	Groups    []string
	Extra     map[string][]string
}

// SubresourceUpdate is how one subresource writes its part of an object.
type SubresourceUpdate struct {
	Prepare  func(obj, old runtime.Object) (runtime.Object, error)
	Validate func(obj, old runtime.Object) field.ErrorList
}

// SubresourceInfo is a subresource's kind, as discovery reports it, and
// verbs.
type SubresourceInfo struct {
	Group, Version, Kind string
	Verbs                []string
	// Connect, for a subresource relayed elsewhere (a kubelet stream, a
	// proxy), is the HTTP methods it relays: kube's ConnectMethods, the
	// only ones routed to it. Such a request cannot be a dry run.
	Connect []string
}

// Subresource describes sub for discovery: its kind (the Type's own when
// Kind is empty) and verbs.
func (t *Type) Subresource(sub string) SubresourceInfo {
	if info, ok := t.SubresourceInfo[sub]; ok {
		return info
	}
	switch {
	case sub == "scale" && t.Scale != nil:
		return SubresourceInfo{Group: ScaleKind.Group, Version: ScaleKind.Version, Kind: ScaleKind.Kind, Verbs: []string{"get", "patch", "update"}}
	case sub == "finalize":
		return SubresourceInfo{Verbs: []string{"update"}}
	}
	return SubresourceInfo{Verbs: []string{"get", "patch", "update"}}
}

// SubresourceKind is the kind a subresource reads and writes: the Type
// itself, or another kind (Scale) for subresources that translate.
func (t *Type) SubresourceKind(sub string) *Type {
	if sub == "scale" && t.Scale != nil {
		return ScaleKind
	}
	return t
}

// GroupVersion returns the Type's group-version.
func (t *Type) GroupVersion() schema.GroupVersion {
	return schema.GroupVersion{Group: t.Group, Version: t.Version}
}

// GroupVersionKind returns the Type's kind with its group-version.
func (t *Type) GroupVersionKind() schema.GroupVersionKind {
	return t.GroupVersion().WithKind(t.Kind)
}

// GroupResource returns the Type's group and plural resource name.
func (t *Type) GroupResource() schema.GroupResource {
	return schema.GroupResource{Group: t.Group, Resource: t.Resource}
}

// APIVersion returns the apiVersion string written in objects.
func (t *Type) APIVersion() string { return t.GroupVersion().String() }

// subresourceWrites names the top-level fields of an object a write
// through a subresource changes; the rest stays as stored.
var subresourceWrites = map[string][]string{
	"status": {"status"},
	// kube's namespace finalize strategy resets the status alone.
	"finalize": {"metadata", "spec"},
	// A binding sets spec.nodeName, annotations and a status condition.
	"binding": {"metadata", "spec", "status"},
}

// SubresourceWrites is what a write through subresource changes of the
// object (nil for subresources with a writer of their own).
func SubresourceWrites(subresource string) []string { return subresourceWrites[subresource] }

// Writes is what a write through subresource changes of t's objects:
// SubresourceWrites, with the metadata for a status write of a kind whose
// status writes change it (StatusMetadata).
func (t *Type) Writes(subresource string) []string {
	if subresource == "status" && t.StatusMetadata {
		return []string{"metadata", "status"}
	}
	return subresourceWrites[subresource]
}

// ResetFields are the fields (dotted paths) a write through subresource
// ("" for the main resource) never changes, so writing them there gives
// no ownership in managedFields and no conflict (kube's strategies' reset
// fields): ResetPaths where the kind names them; else status for the main
// resource of a kind with a status subresource; for a subresource, the
// object's parts it does not write, and for a status write that writes
// metadata, the metadata fields it keeps as stored.
func (t *Type) ResetFields(subresource string) []string {
	if paths, ok := t.ResetPaths[subresource]; ok {
		return paths
	}
	if subresource == "status" && t.StatusMetadata {
		reset := []string{"spec"}
		for _, f := range t.StatusKeepsMetadata {
			reset = append(reset, "metadata."+f)
		}
		return reset
	}
	if subresource == "" {
		if t.HasSubresource("status") {
			return []string{"status"}
		}
		return nil
	}
	written := t.Writes(subresource)
	if written == nil {
		return nil
	}
	var reset []string
	for _, f := range []string{"metadata", "spec", "status"} {
		if !slices.Contains(written, f) {
			reset = append(reset, f)
		}
	}
	return reset
}
