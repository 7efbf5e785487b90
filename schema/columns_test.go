package schema

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// referenceTable is the part of a recorded Table the tests compare.
type referenceTable struct {
	ColumnDefinitions []metav1.TableColumnDefinition `json:"columnDefinitions"`
	Rows              []struct {
		Cells []interface{} `json:"cells"`
	} `json:"rows"`
}

func loadReferenceTable(t *testing.T, file string) referenceTable {
	t.Helper()
	c := loadReference(t, "representations/"+file)
	var table referenceTable
	if err := json.Unmarshal(c.Response.Body, &table); err != nil {
		t.Fatalf("decode table %s: %v", file, err)
	}
	if len(table.ColumnDefinitions) == 0 {
		t.Fatalf("table %s: got no column definitions, want some", file)
	}
	return table
}

// withNow fixes the clock used for Age cells for the duration of a test.
func withNow(t *testing.T, at time.Time) {
	t.Helper()
	saved := now
	now = func() time.Time { return at }
	t.Cleanup(func() { now = saved })
}

func TestColumnDefinitionsMatchReference(t *testing.T) {
	tests := []struct {
		name                     string
		group, version, resource string
		files                    []string
	}{
		{name: "configmaps", version: "v1", resource: "configmaps", files: []string{"table-v1-configmaps.json", "table-v1-configmaps-single.json", "table-v1beta1-configmaps.json"}},
		{name: "secrets", version: "v1", resource: "secrets", files: []string{"table-v1-secrets.json", "table-v1beta1-secrets.json"}},
		{name: "namespaces", version: "v1", resource: "namespaces", files: []string{"table-v1-namespaces.json", "table-v1beta1-namespaces.json"}},
		{name: "serviceaccounts", version: "v1", resource: "serviceaccounts", files: []string{"table-v1-serviceaccounts.json", "table-v1beta1-serviceaccounts.json"}},
		{name: "core events", version: "v1", resource: "events", files: []string{"table-v1-events.json", "table-v1beta1-events.json"}},
		{name: "events.k8s.io events", group: "events.k8s.io", version: "v1", resource: "events", files: []string{"table-v1-events.k8s.io.json", "table-v1beta1-events.k8s.io.json"}},
		{name: "leases", group: "coordination.k8s.io", version: "v1", resource: "leases", files: []string{"table-v1-leases.json", "table-v1beta1-leases.json"}},
	}
	for _, tt := range tests {
		for _, file := range tt.files {
			t.Run(tt.name+"/"+file, func(t *testing.T) {
				want := loadReferenceTable(t, file).ColumnDefinitions
				got := lookupBuiltin(t, tt.group, tt.version, tt.resource).Columns
				if len(got) != len(want) {
					t.Fatalf("column count: got %d (%v), want %d (%v)", len(got), columnNames(got), len(want), columnNames(want))
				}
				for i := range want {
					g, w := got[i], want[i]
					if g.Name != w.Name {
						t.Errorf("column %d name: got %q, want %q", i, g.Name, w.Name)
					}
					if g.Type != w.Type {
						t.Errorf("column %q type: got %q, want %q", w.Name, g.Type, w.Type)
					}
					if g.Format != w.Format {
						t.Errorf("column %q format: got %q, want %q", w.Name, g.Format, w.Format)
					}
					if g.Description != w.Description {
						t.Errorf("column %q description:\ngot  %q\nwant %q", w.Name, g.Description, w.Description)
					}
					if g.Priority != w.Priority {
						t.Errorf("column %q priority: got %d, want %d", w.Name, g.Priority, w.Priority)
					}
				}
			})
		}
	}
}

func columnNames(cols []metav1.TableColumnDefinition) []string {
	var names []string
	for _, c := range cols {
		names = append(names, c.Name)
	}
	return names
}

// referenceEvent is the event the recorder created before taking the
// events Tables (the same content as crud/events-create.json, named r-1).
func referenceEvent() *corev1.Event {
	return &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "r-1", Namespace: "ref-repr", CreationTimestamp: metaTime("2024-01-01T00:00:00Z")},
		InvolvedObject: corev1.ObjectReference{Kind: "ConfigMap", Namespace: "ref-repr", Name: "cm-a", APIVersion: "v1"},
		Reason:         "Testing",
		Message:        "hello from the recorder",
		Source:         corev1.EventSource{Component: "recorder"},
		FirstTimestamp: metaTime("2020-01-02T03:04:05Z"),
		LastTimestamp:  metaTime("2020-01-02T03:04:05Z"),
		Count:          1,
		Type:           "Normal",
	}
}

// TestRowsMatchReference prints objects like the ones the recorder stored
// and compares the cells with the recorded Tables; Age-like cells are
// compared as the normalised "<age>".
func TestRowsMatchReference(t *testing.T) {
	created := metaTime("2024-01-01T00:00:00Z")
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ref-repr", CreationTimestamp: created}
	}
	holder := "holder-1"
	eventsV1, err := eventFromCore(referenceEvent())
	if err != nil {
		t.Fatalf("eventFromCore: got error %v, want none", err)
	}

	tests := []struct {
		name                     string
		group, version, resource string
		file                     string
		objs                     []runtime.Object
	}{
		{
			name: "configmaps", version: "v1", resource: "configmaps", file: "table-v1-configmaps.json",
			objs: []runtime.Object{
				&corev1.ConfigMap{ObjectMeta: meta("kube-root-ca.crt"), Data: map[string]string{"ca.crt": "x"}},
				&corev1.ConfigMap{ObjectMeta: meta("r-1"), Data: map[string]string{"key": "value", "other": "x"}},
			},
		},
		{
			name: "secrets", version: "v1", resource: "secrets", file: "table-v1-secrets.json",
			objs: []runtime.Object{
				&corev1.Secret{ObjectMeta: meta("r-1"), Type: corev1.SecretTypeOpaque, Data: map[string][]byte{"password": nil, "username": nil}},
			},
		},
		{
			name: "namespaces", version: "v1", resource: "namespaces", file: "table-v1-namespaces.json",
			objs: []runtime.Object{
				&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ref-repr", CreationTimestamp: created}, Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}},
			},
		},
		{
			name: "serviceaccounts", version: "v1", resource: "serviceaccounts", file: "table-v1-serviceaccounts.json",
			objs: []runtime.Object{
				&corev1.ServiceAccount{ObjectMeta: meta("default")},
				&corev1.ServiceAccount{ObjectMeta: meta("r-1")},
			},
		},
		{
			name: "core events", version: "v1", resource: "events", file: "table-v1-events.json",
			objs: []runtime.Object{referenceEvent()},
		},
		{
			name: "events.k8s.io events", group: "events.k8s.io", version: "v1", resource: "events", file: "table-v1-events.k8s.io.json",
			objs: []runtime.Object{eventsV1},
		},
		{
			name: "leases", group: "coordination.k8s.io", version: "v1", resource: "leases", file: "table-v1-leases.json",
			objs: []runtime.Object{
				&coordinationv1.Lease{ObjectMeta: meta("r-1"), Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			table := loadReferenceTable(t, tt.file)
			typ := lookupBuiltin(t, tt.group, tt.version, tt.resource)
			if len(table.Rows) != len(tt.objs) {
				t.Fatalf("rows: got %d objects for %d reference rows", len(tt.objs), len(table.Rows))
			}
			ageColumns := map[int]bool{}
			for i, c := range table.ColumnDefinitions {
				switch c.Name {
				case "Age", "Last Seen", "First Seen":
					ageColumns[i] = true
				}
			}
			for i, obj := range tt.objs {
				cells, err := typ.Row(obj)
				if err != nil {
					t.Fatalf("row %d: got error %v, want none", i, err)
				}
				if len(cells) != len(typ.Columns) {
					t.Errorf("row %d: got %d cells, want one per column (%d)", i, len(cells), len(typ.Columns))
				}
				for j := range cells {
					if ageColumns[j] {
						if s, ok := cells[j].(string); !ok || s == "" || s == "<unknown>" {
							t.Errorf("row %d cell %d: got %#v, want an age", i, j, cells[j])
						}
						cells[j] = "<age>"
					}
				}
				got := normalizeJSON(t, cells)
				want := normalizeJSON(t, table.Rows[i].Cells)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("row %d cells:\ngot  %v\nwant %v", i, got, want)
				}
			}
		})
	}
}

func normalizeJSON(t *testing.T, v interface{}) interface{} {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal: %v", err)
	}
	var out interface{}
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatalf("unmarshal: %v", err)
	}
	return out
}

func TestAge(t *testing.T) {
	base := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	withNow(t, base)
	tests := []struct {
		name string
		ts   time.Time
		want string
	}{
		{name: "zero time", ts: time.Time{}, want: "<unknown>"},
		{name: "seconds", ts: base.Add(-42 * time.Second), want: "42s"},
		{name: "minutes", ts: base.Add(-5 * time.Minute), want: "5m"},
		{name: "minutes and seconds", ts: base.Add(-(7*time.Minute + 30*time.Second)), want: "7m30s"},
		{name: "hours", ts: base.Add(-26 * time.Hour), want: "26h"},
		{name: "days and hours", ts: base.Add(-(3*24*time.Hour + 4*time.Hour)), want: "3d4h"},
		{name: "in the future", ts: base.Add(time.Hour), want: "<invalid>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := age(tt.ts); got != tt.want {
				t.Errorf("age: got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestRowCells(t *testing.T) {
	base := time.Date(2024, 5, 6, 7, 8, 9, 0, time.UTC)
	withNow(t, base)
	ago := func(d time.Duration) time.Time { return base.Add(-d) }
	holder := "me"

	tests := []struct {
		name                     string
		group, version, resource string
		obj                      runtime.Object
		want                     []interface{}
	}{
		{
			name: "configmap counts data and binaryData", version: "v1", resource: "configmaps",
			obj: &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm", CreationTimestamp: metav1.NewTime(ago(5 * time.Minute))},
				Data:       map[string]string{"a": "1"}, BinaryData: map[string][]byte{"b": {1}, "c": {2}},
			},
			want: []interface{}{"cm", int64(3), "5m"},
		},
		{
			name: "configmap without creationTimestamp", version: "v1", resource: "configmaps",
			obj:  &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}},
			want: []interface{}{"cm", int64(0), "<unknown>"},
		},
		{
			name: "secret", version: "v1", resource: "secrets",
			obj: &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s", CreationTimestamp: metav1.NewTime(ago(2 * time.Hour))},
				Type:       corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": nil, "tls.key": nil},
			},
			want: []interface{}{"s", "kubernetes.io/tls", int64(2), "120m"},
		},
		{
			name: "terminating namespace", version: "v1", resource: "namespaces",
			obj: &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{Name: "ns", CreationTimestamp: metav1.NewTime(ago(50 * time.Hour))},
				Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
			},
			want: []interface{}{"ns", "Terminating", "2d2h"},
		},
		{
			name: "service account", version: "v1", resource: "serviceaccounts",
			obj:  &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "sa", CreationTimestamp: metav1.NewTime(ago(10 * time.Second))}},
			want: []interface{}{"sa", "10s"},
		},
		{
			name: "lease with holder", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", CreationTimestamp: metav1.NewTime(ago(time.Minute))}, Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}},
			want: []interface{}{"l", "me", "60s"},
		},
		{
			name: "lease without holder", group: "coordination.k8s.io", version: "v1", resource: "leases",
			obj:  &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l"}},
			want: []interface{}{"l", "", "<unknown>"},
		},
		{
			name: "legacy event", version: "v1", resource: "events",
			obj: &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "e"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{c}"},
				Reason:         "Pulled", Message: "  pulled image\n", Type: "Normal",
				Source:         corev1.EventSource{Component: "kubelet", Host: "node-1"},
				FirstTimestamp: metav1.NewTime(ago(10 * time.Minute)), LastTimestamp: metav1.NewTime(ago(time.Minute)),
				Count: 7,
			},
			want: []interface{}{"60s", "Normal", "Pulled", "pod/p", "spec.containers{c}", "kubelet, node-1", "pulled image", "10m", int64(7), "e"},
		},
		{
			name: "new-style singleton event", version: "v1", resource: "events",
			obj: &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "e"},
				InvolvedObject: corev1.ObjectReference{Kind: "Node"},
				Reason:         "R", Type: "Warning",
				EventTime:           metav1.NewMicroTime(ago(3 * time.Minute)),
				ReportingController: "example.com/ctl", ReportingInstance: "ctl-1",
			},
			want: []interface{}{"3m", "Warning", "R", "node", "", "example.com/ctl, ctl-1", "", "3m", int64(1), "e"},
		},
		{
			name: "event series", group: "events.k8s.io", version: "v1", resource: "events",
			obj: func() runtime.Object {
				e := fullEventsV1Event()
				e.DeprecatedFirstTimestamp = metav1.Time{}
				e.DeprecatedLastTimestamp = metav1.NewTime(ago(time.Hour))
				e.DeprecatedSource = corev1.EventSource{}
				e.EventTime = metav1.NewMicroTime(ago(20 * time.Minute))
				e.Series = &eventsv1.EventSeries{Count: 5, LastObservedTime: metav1.NewMicroTime(ago(2 * time.Minute))}
				return e
			}(),
			want: []interface{}{"2m", "Warning", "Why", "pod/p", "spec.containers{c}", "example.com/ctl, ctl-1", "a note", "20m", int64(5), "ev"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := lookupBuiltin(t, tt.group, tt.version, tt.resource).Row(tt.obj)
			if err != nil {
				t.Fatalf("Row: got error %v, want none", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Row:\ngot  %#v\nwant %#v", got, tt.want)
			}
		})
	}
}

func TestRowWrongType(t *testing.T) {
	for _, typ := range NewBuiltin().Types() {
		t.Run(typ.GroupVersionKind().String(), func(t *testing.T) {
			if typ.Row == nil {
				// Kinds kube prints with the default Name / Created At
				// columns have neither.
				if typ.Columns != nil {
					t.Fatalf("Row: got nil with %d columns, want a row function", len(typ.Columns))
				}
				return
			}
			if _, err := typ.Row(&metav1.Status{}); err == nil {
				t.Errorf("Row(Status): got no error, want one")
			}
		})
	}
}
