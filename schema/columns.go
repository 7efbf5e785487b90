package schema

import (
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// Column descriptions, as kube-apiserver v1.35 sends them in Table
// columnDefinitions (they are the API field docs of the printed field).
const (
	descName = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"
	descAge  = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"

	descConfigMapData  = "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process."
	descSecretType     = "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types"
	descSecretData     = "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4"
	descNamespacePhase = "The status of the namespace"
	descLeaseHolder    = "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field."

	descEventLastSeen  = "The time at which the most recent occurrence of this event was recorded."
	descEventType      = "Type of this event (Normal, Warning), new types could be added in the future"
	descEventReason    = "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."
	descEventObject    = "The object that this event is about."
	descEventSubobject = "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object."
	descEventSource    = "The component reporting this event. Should be a short machine understandable string."
	descEventMessage   = "A human-readable description of the status of this operation."
	descEventFirstSeen = "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)"
	descEventCount     = "The number of times this event has occurred."
)

// now is the clock used for Age-style cells; tests replace it.
var now = time.Now

func column(name, format, description string, priority int32) metav1.TableColumnDefinition {
	// kube-apiserver declares every built-in column as type "string", even
	// the ones whose cells are integers (Data, Count).
	return metav1.TableColumnDefinition{Name: name, Type: "string", Format: format, Description: description, Priority: priority}
}

func nameColumn(priority int32) metav1.TableColumnDefinition {
	return column("Name", "name", descName, priority)
}

func ageColumn() metav1.TableColumnDefinition { return column("Age", "", descAge, 0) }

// builtinColumns returns the Table columns kube-apiserver prints for a
// built-in kind and the function computing one row's cells, with Since
// for its ages (Type.Cells). The server
// always prints the wide form, so priority-1 columns have cells too.
func builtinColumns(t *Type) ([]metav1.TableColumnDefinition, func(runtime.Object) ([]interface{}, error)) {
	switch t.GroupVersionKind() {
	case gvkConfigMap:
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			column("Data", "", descConfigMapData, 0),
			ageColumn(),
		}, configMapRow
	case gvkSecret:
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			column("Type", "", descSecretType, 0),
			column("Data", "", descSecretData, 0),
			ageColumn(),
		}, secretRow
	case gvkNamespace:
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			column("Status", "", descNamespacePhase, 0),
			ageColumn(),
		}, namespaceRow
	case gvkServiceAccount:
		// kube-apiserver v1.35 prints no Secrets column any more
		// (representations/table-v1-serviceaccounts.json).
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			ageColumn(),
		}, serviceAccountRow
	case gvkCoreEvent, gvkEventsV1Event:
		// Both groups print the same columns and cells: kube-apiserver
		// prints the internal (core) form of either.
		return eventColumns(), eventRow
	case gvkEndpoints:
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			column("Endpoints", "", corev1.Endpoints{}.SwaggerDoc()["subsets"], 0),
			ageColumn(),
		}, endpointsRow
	case gvkLease:
		return []metav1.TableColumnDefinition{
			nameColumn(0),
			column("Holder", "", descLeaseHolder, 0),
			ageColumn(),
		}, leaseRow
	}
	return nil, nil
}

func eventColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		column("Last Seen", "", descEventLastSeen, 0),
		column("Type", "", descEventType, 0),
		column("Reason", "", descEventReason, 0),
		column("Object", "", descEventObject, 0),
		column("Subobject", "", descEventSubobject, 1),
		column("Source", "", descEventSource, 1),
		column("Message", "", descEventMessage, 0),
		column("First Seen", "", descEventFirstSeen, 1),
		column("Count", "", descEventCount, 1),
		nameColumn(1),
	}
}

// age renders the time elapsed since ts the way kubectl and kube-apiserver
// do ("5m", "3d4h"), or "<unknown>" for a zero time.
func age(ts time.Time) string { return AgeAt(Since(ts), now()) }

// AgeAt is a Since cell as a row shows it at the time at.
func AgeAt(s Since, at time.Time) string {
	if ts := time.Time(s); !ts.IsZero() {
		return duration.HumanDuration(at.Sub(ts))
	}
	return "<unknown>"
}

// Since is a cell of a kind's Cells that shows the time elapsed since it,
// Age-style: such a row's text changes with the clock and nothing else,
// so it can be kept by revision and its ages filled in when it is served.
type Since time.Time

// Ago is a cell of a kind's Cells that shows the time elapsed since At
// Age-style between the texts Before and After: Pods' restarts, "3 (5m
// ago)".
type Ago struct {
	Before string
	At     Since
	After  string
}

// withAges is cells's row as a Table shows it now: each Since and Ago
// rendered.
func withAges(cells func(runtime.Object) ([]interface{}, error)) func(runtime.Object) ([]interface{}, error) {
	return func(obj runtime.Object) ([]interface{}, error) {
		row, err := cells(obj)
		for i, c := range row {
			switch c := c.(type) {
			case Since:
				row[i] = age(time.Time(c))
			case Ago:
				row[i] = c.Before + age(time.Time(c.At)) + c.After
			}
		}
		return row, err
	}
}

// ageOpen is the Cells of a kind whose printer, row, reads the clock
// only for its Age column: row's cells with that one the Since of the
// object's creationTimestamp, which is what the printer renders there. A
// kind without an Age column has row for its Cells. It is nil when row
// prints empty, an empty object, with other than a cell per column: such
// a row's cells cannot be told apart by column (v1.35's IPAddress printer
// adds an age its columns do not name).
func ageOpen(columns []metav1.TableColumnDefinition, row func(runtime.Object) ([]interface{}, error), empty runtime.Object) func(runtime.Object) ([]interface{}, error) {
	if cells, err := row(empty); err != nil || len(cells) != len(columns) {
		return nil
	}
	at := slices.IndexFunc(columns, func(c metav1.TableColumnDefinition) bool { return c.Name == "Age" })
	if at < 0 {
		return row
	}
	return func(obj runtime.Object) ([]interface{}, error) {
		cells, err := row(obj)
		if err != nil {
			return nil, err
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		if len(cells) != len(columns) {
			return nil, fmt.Errorf("table row: %d cells for %d columns", len(cells), len(columns))
		}
		cells[at] = Since(m.GetCreationTimestamp().Time)
		return cells, nil
	}
}

// DefaultRow is the row of a kind without Row, as kube-apiserver's default
// Table convertor prints it: the object's name and when it was created
// (a time, not an age), under the columns Name and Created At.
func DefaultRow(obj runtime.Object) ([]interface{}, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return []interface{}{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
}

func wrongType(obj runtime.Object, want string) error {
	return fmt.Errorf("table row: expected %s, got %T", want, obj)
}

func configMapRow(obj runtime.Object) ([]interface{}, error) {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm == nil {
		return nil, wrongType(obj, "*v1.ConfigMap")
	}
	return []interface{}{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), Since(cm.CreationTimestamp.Time)}, nil
}

func secretRow(obj runtime.Object) ([]interface{}, error) {
	s, ok := obj.(*corev1.Secret)
	if !ok || s == nil {
		return nil, wrongType(obj, "*v1.Secret")
	}
	return []interface{}{s.Name, string(s.Type), int64(len(s.Data)), Since(s.CreationTimestamp.Time)}, nil
}

func namespaceRow(obj runtime.Object) ([]interface{}, error) {
	ns, ok := obj.(*corev1.Namespace)
	if !ok || ns == nil {
		return nil, wrongType(obj, "*v1.Namespace")
	}
	return []interface{}{ns.Name, string(ns.Status.Phase), Since(ns.CreationTimestamp.Time)}, nil
}

func serviceAccountRow(obj runtime.Object) ([]interface{}, error) {
	sa, ok := obj.(*corev1.ServiceAccount)
	if !ok || sa == nil {
		return nil, wrongType(obj, "*v1.ServiceAccount")
	}
	return []interface{}{sa.Name, Since(sa.CreationTimestamp.Time)}, nil
}

func leaseRow(obj runtime.Object) ([]interface{}, error) {
	l, ok := obj.(*coordinationv1.Lease)
	if !ok || l == nil {
		return nil, wrongType(obj, "*v1.Lease")
	}
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []interface{}{l.Name, holder, Since(l.CreationTimestamp.Time)}, nil
}

// eventRow prints a core/v1 or events.k8s.io/v1 Event.
//
//   - First Seen is firstTimestamp, or eventTime for events that only have
//     the newer field.
//   - Last Seen is series.lastObservedTime for a series, else
//     lastTimestamp, else First Seen.
//   - Count is series.count for a series, else count, and 1 for a
//     singleton event that has no count.
//   - Object is "<lower-case kind>/<name>" (just the kind without a name).
//   - Source is source.component (or reportingController), followed by
//     ", <host or reportingInstance>" when there is one.
func eventRow(obj runtime.Object) ([]interface{}, error) {
	e, ok := asCoreEvent(obj)
	if !ok {
		return nil, wrongType(obj, "*v1.Event")
	}

	firstSeen := Since(e.FirstTimestamp.Time)
	if e.FirstTimestamp.IsZero() {
		firstSeen = Since(e.EventTime.Time)
	}
	lastSeen := Since(e.LastTimestamp.Time)
	if e.LastTimestamp.IsZero() {
		lastSeen = firstSeen
	}
	count := e.Count
	if e.Series != nil {
		lastSeen = Since(e.Series.LastObservedTime.Time)
		count = e.Series.Count
	} else if count == 0 {
		count = 1
	}

	object := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		object += "/" + e.InvolvedObject.Name
	}

	source := firstNonEmpty(e.Source.Component, e.ReportingController)
	if instance := firstNonEmpty(e.Source.Host, e.ReportingInstance); instance != "" {
		source += ", " + instance
	}

	return []interface{}{
		lastSeen,
		e.Type,
		e.Reason,
		object,
		e.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(e.Message),
		firstSeen,
		int64(count),
		e.Name,
	}, nil
}

func firstNonEmpty(values ...string) string {
	for _, v := range values {
		if v != "" {
			return v
		}
	}
	return ""
}
