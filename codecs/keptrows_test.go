package codecs_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/schema"
)

// A kept row, its ages filled in, is the row a Table made from the object
// has, byte for byte, for every kind with Cells; the row keeps its times,
// not their text.
func TestKeptRowReadsAsRow(t *testing.T) {
	reg := schema.NewBuiltin()
	// Each age is half a minute or more from its text's next change, so
	// the two renderings compared read the same.
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(time.Now().Add(-d).Truncate(time.Second)) }
	holder := `a"b<c>ü`
	count := int32(7)
	objs := []struct {
		resource, group, version string
		obj                      runtime.Object
		age                      string // a text the kept row must not hold
	}{
		{"configmaps", "", "v1", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm-1", Namespace: "ns", ResourceVersion: "12", CreationTimestamp: ago(90*time.Minute + 30*time.Second)},
			Data: map[string]string{"a": "1", "b": "2"}, BinaryData: map[string][]byte{"c": {1}}}, "90m"},
		{"configmaps", "", "v1", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "never-created", Namespace: "ns"}}, ""},
		{"secrets", "", "v1", &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "tls", Namespace: "ns", CreationTimestamp: ago(10*24*time.Hour + 12*time.Hour)},
			Type: corev1.SecretTypeTLS, Data: map[string][]byte{"tls.crt": {1}, "tls.key": {2}}}, "10d"},
		{"namespaces", "", "v1", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team", CreationTimestamp: ago(3*time.Hour + 20*time.Minute + 30*time.Second)},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive}}, "3h20m"},
		{"serviceaccounts", "", "v1", &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: "ns", CreationTimestamp: ago(45*time.Minute + 30*time.Second)}}, ""},
		{"leases", "coordination.k8s.io", "v1", &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l", Namespace: "ns", CreationTimestamp: ago(30 * time.Minute)},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder}}, "30m"},
		{"events", "", "v1", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e.1", Namespace: "ns", CreationTimestamp: ago(time.Hour)},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Name: "p", FieldPath: "spec.containers{c}"}, Reason: "Pulled", Message: " <done>\n", Type: "Normal",
			Source: corev1.EventSource{Component: "kubelet", Host: "node-1"}, FirstTimestamp: ago(10*24*time.Hour + 12*time.Hour), LastTimestamp: ago(2*24*time.Hour + 30*time.Minute), Count: 4}, "10d"},
		{"events", "", "v1", &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e.2", Namespace: "ns"},
			EventTime: metav1.NewMicroTime(time.Now().Add(-25*time.Minute - 30*time.Second)), ReportingController: "ctl", ReportingInstance: "ctl-1",
			Series: &corev1.EventSeries{Count: 3, LastObservedTime: metav1.NewMicroTime(time.Now().Add(-15*time.Minute - 30*time.Second))}}, "25m"},
		{"events", "events.k8s.io", "v1", &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e.3", Namespace: "ns"},
			EventTime: metav1.NewMicroTime(time.Now().Add(-20*time.Minute - 30*time.Second)), ReportingController: "ctl", ReportingInstance: "ctl-1",
			Regarding: corev1.ObjectReference{Kind: "Node", Name: "n"}, Note: "note", DeprecatedCount: count}, "20m"},
		{"endpoints", "", "v1", &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "svc", Namespace: "ns", CreationTimestamp: ago(4 * 24 * time.Hour)},
			Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}, "4d"},
	}
	// Pods whose Restarts cells show an age, or only a count, each as
	// kube's printer chooses the containers it counts; one that succeeded,
	// whose row has a condition.
	done := restartedPods(ago)[0].DeepCopy()
	done.Name, done.Status.Phase = "done", corev1.PodSucceeded
	for _, p := range append(restartedPods(ago), done) {
		objs = append(objs, struct {
			resource, group, version string
			obj                      runtime.Object
			age                      string
		}{"pods", "", "v1", p, "120m"})
	}
	// Jobs running, finished and not started; CronJobs scheduled and not.
	for _, j := range clockedJobs(ago) {
		resource := "jobs"
		if _, ok := j.(*batchv1.CronJob); ok {
			resource = "cronjobs"
		}
		objs = append(objs, struct {
			resource, group, version string
			obj                      runtime.Object
			age                      string
		}{resource, "batch", "v1", j, "120m"})
	}
	// The objects kube-apiserver v1.35 answered creates of built-in kinds
	// with (testdata/reference/types), where their kind has Cells.
	files, err := filepath.Glob("../testdata/reference/types/*-create-*.json")
	if err != nil || len(files) < 20 {
		t.Fatalf("reference creates: %d files, %v", len(files), err)
	}
	for _, f := range files {
		var rec struct {
			Request  struct{ Path string }
			Response struct{ Body json.RawMessage }
		}
		b, err := os.ReadFile(f)
		if err == nil {
			err = json.Unmarshal(b, &rec)
		}
		if err != nil {
			t.Fatal(f, err)
		}
		// /api/v1/... or /apis/<group>/<version>/..., the resource last.
		parts := strings.Split(strings.Trim(rec.Request.Path, "/"), "/")
		group, version := "", parts[1]
		if parts[0] == "apis" {
			group, version = parts[1], parts[2]
		}
		typ, ok := reg.Lookup(group, version, parts[len(parts)-1])
		if !ok {
			t.Fatalf("%s: no type for %s", f, rec.Request.Path)
		}
		if typ.Cells == nil {
			continue
		}
		obj := typ.New()
		// The recorder wrote placeholders for what changes run to run.
		body := strings.NewReplacer(`"<time>"`, `"2026-01-02T03:04:05Z"`, `"<allocated-port>"`, `30080`,
			`"<allocated-ip>"`, `"10.96.0.10"`).Replace(string(rec.Response.Body))
		if err := json.Unmarshal([]byte(body), obj); err != nil {
			t.Fatal(f, err)
		}
		m, _ := meta.Accessor(obj)
		m.SetCreationTimestamp(ago(5*time.Hour + 30*time.Second))
		age := "5h"
		if !hasAge(typ) {
			age = "" // Roles, ClusterRoles, LimitRanges: Created At
		}
		objs = append(objs, struct {
			resource, group, version string
			obj                      runtime.Object
			age                      string
		}{typ.Resource, group, version, obj, age})
	}

	// Every other kind with Cells (those kube's printers print) with an
	// object that has little but its name and age.
	covered := map[*schema.Type]bool{}
	for _, o := range objs {
		typ, ok := reg.Lookup(o.group, o.version, o.resource)
		if !ok || typ.Cells == nil {
			t.Fatalf("%s/%s %s: no type with Cells", o.group, o.version, o.resource)
		}
		covered[typ] = true
	}
	for _, typ := range reg.Types() {
		if typ.Cells == nil || covered[typ] {
			continue
		}
		obj := typ.New()
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatal(err)
		}
		m.SetName("x-1")
		if typ.Namespaced {
			m.SetNamespace("ns")
		}
		m.SetCreationTimestamp(ago(90*time.Minute + 30*time.Second))
		age := "90m"
		if !hasAge(typ) {
			age = "" // PodTemplates, CSIStorageCapacities, CRDs
		}
		objs = append(objs, struct {
			resource, group, version string
			obj                      runtime.Object
			age                      string
		}{typ.Resource, typ.Group, typ.Version, obj, age})
	}
	n := 0
	for _, version := range []string{"v1", "v1beta1"} {
		out := codecs.Output{View: codecs.ViewTable, MediaType: codecs.JSON, ViewVersion: version}
		for _, o := range objs {
			typ, _ := reg.Lookup(o.group, o.version, o.resource)
			view, err := codecs.ObjectView(out, typ, o.obj.DeepCopyObject(), "Metadata")
			if err != nil {
				t.Fatal(err)
			}
			tbl := view.(*metav1.Table)
			var want bytes.Buffer
			if err := codecs.WriteTableJSON(&want, tbl); err != nil {
				t.Fatal(err)
			}
			kept, err := codecs.KeptRow(typ, o.obj, codecs.MetadataJSON(out, o.obj))
			if err != nil {
				t.Fatal(err)
			}
			if o.age != "" && bytes.Contains(kept, []byte(`"`+o.age+`"`)) {
				t.Errorf("%s %s: kept row %q holds the age %q", o.resource, version, kept, o.age)
			}
			var got bytes.Buffer
			err = codecs.WriteTableRowsJSON(&got, out, typ, tbl.ListMeta, 1, func(b []byte, _ int) ([]byte, error) { return codecs.AppendKeptRow(b, kept, time.Now()) })
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s %s:\nkept row   %s\nTable's row %s", o.resource, version, got.Bytes(), want.Bytes())
			}
			if o.age != "" && !bytes.Contains(got.Bytes(), []byte(`"`+o.age+`"`)) {
				t.Errorf("%s %s: row %s without the age %q", o.resource, version, got.Bytes(), o.age)
			}
			n++
		}
	}
	// Every built-in kind a Table is made of but IPAddress has Cells.
	if n < 2*50 {
		t.Errorf("%d rows compared; want every kind with Cells, more than 50", n/2)
	}
	// IPAddress, whose printer adds an age cell without a column, has none.
	if typ, _ := reg.Lookup("networking.k8s.io", "v1", "ipaddresses"); typ == nil || typ.Row == nil || typ.Cells != nil {
		t.Error("ipaddresses: want a Row and no Cells")
	}
}

// restartedPods are Pods created two hours ago whose Restarts cells
// kube's printer makes in each of its ways: a container's restarts and
// when it last finished; restarts without a finish (a count alone); an
// init container still failing, whose restarts alone count; one done,
// whose restarts do not count once the Pod has started; and a
// started sidecar (a restartable init container) of an initialized Pod,
// counted with the containers.
func restartedPods(ago func(time.Duration) metav1.Time) []*corev1.Pod {
	finished := func(d time.Duration) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, FinishedAt: ago(d)}}
	}
	running := corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: ago(time.Minute)}}
	always, yes := corev1.ContainerRestartPolicyAlways, true
	pod := func(name string, init []corev1.Container, initSt, st []corev1.ContainerStatus, conds ...corev1.PodCondition) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(2*time.Hour + 30*time.Second)},
			Spec:   corev1.PodSpec{InitContainers: init, Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: conds, InitContainerStatuses: initSt, ContainerStatuses: st}}
	}
	return []*corev1.Pod{
		pod("restarted", nil, nil, []corev1.ContainerStatus{{Name: "app", RestartCount: 3, Ready: true, State: running, LastTerminationState: finished(25*time.Minute + 30*time.Second)}}),
		pod("counted", nil, nil, []corev1.ContainerStatus{{Name: "app", RestartCount: 2, Ready: true, State: running}}),
		pod("init-failing", []corev1.Container{{Name: "setup", Image: "setup:1"}},
			[]corev1.ContainerStatus{{Name: "setup", RestartCount: 4, State: finished(time.Minute), LastTerminationState: finished(7*time.Minute + 30*time.Second)}},
			[]corev1.ContainerStatus{{Name: "app", RestartCount: 9, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}}, LastTerminationState: finished(time.Hour + 30*time.Second)}}),
		pod("init-done", []corev1.Container{{Name: "setup", Image: "setup:1"}},
			[]corev1.ContainerStatus{{Name: "setup", RestartCount: 5, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: ago(time.Hour)}}, LastTerminationState: finished(10*time.Minute + 30*time.Second)}},
			[]corev1.ContainerStatus{{Name: "app", RestartCount: 1, Ready: true, State: running, LastTerminationState: finished(50*time.Minute + 30*time.Second)}}),
		pod("sidecar", []corev1.Container{{Name: "proxy", Image: "proxy:1", RestartPolicy: &always}},
			[]corev1.ContainerStatus{{Name: "proxy", RestartCount: 1, Started: &yes, Ready: true, State: running, LastTerminationState: finished(40*time.Minute + 30*time.Second)}},
			[]corev1.ContainerStatus{{Name: "app", RestartCount: 2, Ready: true, State: running, LastTerminationState: finished(3*time.Hour + 30*time.Second)}},
			corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}),
	}
}

// clockedJobs are Jobs and CronJobs created two hours ago whose printed
// rows show the clock beyond Age, or do not: a Job running for 12
// minutes, one that ran for 3 and finished, one not started; a CronJob
// last scheduled 45 minutes ago, one never scheduled.
func clockedJobs(ago func(time.Duration) metav1.Time) []runtime.Object {
	meta := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Name: name, Namespace: "ns", CreationTimestamp: ago(2*time.Hour + 30*time.Second)}
	}
	at := func(d time.Duration) *metav1.Time { t := ago(d); return &t }
	tmpl := corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	return []runtime.Object{
		&batchv1.Job{ObjectMeta: meta("running"), Spec: batchv1.JobSpec{Template: tmpl}, Status: batchv1.JobStatus{StartTime: at(12*time.Minute + 30*time.Second), Active: 1}},
		&batchv1.Job{ObjectMeta: meta("finished"), Spec: batchv1.JobSpec{Template: tmpl}, Status: batchv1.JobStatus{StartTime: at(time.Hour), CompletionTime: at(57 * time.Minute), Succeeded: 1,
			Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}},
		&batchv1.Job{ObjectMeta: meta("waiting"), Spec: batchv1.JobSpec{Template: tmpl}},
		&batchv1.CronJob{ObjectMeta: meta("nightly"), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}},
			Status: batchv1.CronJobStatus{LastScheduleTime: at(45*time.Minute + 30*time.Second)}},
		&batchv1.CronJob{ObjectMeta: meta("never"), Spec: batchv1.CronJobSpec{Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: tmpl}}}},
	}
}

// A kept Job or CronJob row's clock cells read at the time it is served:
// a running Job's duration and a CronJob's last schedule move with the
// clock, a finished Job's duration does not.
func TestKeptJobRowsLater(t *testing.T) {
	reg := schema.NewBuiltin()
	now := time.Now()
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d).Truncate(time.Second)) }
	want := map[string]string{
		"running":  `["running","Running","0/1","72m","3h",`,
		"finished": `["finished","Complete","1/1","3m","3h",`,
		"waiting":  `["waiting","Running","0/1","","3h",`,
		"nightly":  `["nightly","0 3 * * *","\u003cnone\u003e","\u003cunset\u003e",0,"105m","3h",`,
		"never":    `["never","0 3 * * *","\u003cnone\u003e","\u003cunset\u003e",0,"\u003cnone\u003e","3h",`,
	}
	for _, obj := range clockedJobs(ago) {
		resource := "jobs"
		if _, ok := obj.(*batchv1.CronJob); ok {
			resource = "cronjobs"
		}
		typ, _ := reg.Lookup("batch", "v1", resource)
		row := keptRowAt(t, typ, obj, now.Add(time.Hour))
		name := obj.(metav1.Object).GetName()
		if !bytes.Contains(row, []byte(want[name])) {
			t.Errorf("%s: an hour later the row reads %s; want %s in it", name, row, want[name])
		}
	}
}

// A kept Pod row's restarts age, like its Age, is the one at the time the
// row is served; a Pod's that succeeded has its Completed condition.
func TestKeptPodRowRestartsAge(t *testing.T) {
	typ, _ := schema.NewBuiltin().Lookup("", "v1", "pods")
	now := time.Now()
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d).Truncate(time.Second)) }
	want := map[string]string{
		"restarted":    `"Running","3 (85m ago)","3h"`,
		"counted":      `"Running","2","3h"`,
		"init-failing": `"Init:ExitCode:1","4 (67m ago)","3h"`,
		"init-done":    `"Running","1 (110m ago)","3h"`,
		"sidecar":      `"Running","3 (100m ago)","3h"`,
	}
	// A Pod that succeeded: kube's printer marks its row Completed.
	done := restartedPods(ago)[1].DeepCopy()
	done.Name, done.Status.Phase = "done", corev1.PodSucceeded
	want["done"] = `"Succeeded","2","3h","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e","\u003cnone\u003e"],` +
		`"conditions":[{"type":"Completed","status":"True","reason":"Succeeded","message":"The pod has completed successfully."}],"object":null}`
	for _, p := range append(restartedPods(ago), done) {
		row := keptRowAt(t, typ, p, now.Add(time.Hour))
		// The printer's cells: Name, Ready, Status, Restarts, Age, ...
		if !bytes.Contains(row, []byte(want[p.Name])) {
			t.Errorf("%s: an hour later the row reads %s; want %s in it", p.Name, row, want[p.Name])
		}
	}
}

// A custom resource's kept row shows each date column's age at the time
// it is served, and reads as the convertor's row: the default Age, a date
// in the spec, one that does not parse ("<invalid>") and one missing
// (null), among string and integer columns.
func TestKeptCustomResourceRow(t *testing.T) {
	cols := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Phase", Type: "string", JSONPath: ".status.phase"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
		{Name: "Renewed", Type: "date", JSONPath: ".status.renewed"},
		{Name: "Broken", Type: "date", JSONPath: ".status.broken"},
		{Name: "Missing", Type: "date", JSONPath: ".status.missing"},
		{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "certs.kept.tabula.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "kept.tabula.test", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "certs", Kind: "Cert"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true, AdditionalPrinterColumns: cols,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptrTo(true)}}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Plural: "certs", Kind: "Cert", ListKind: "CertList"}},
	}
	types, err := schema.CustomResourceTypes(crd, nil)
	if err != nil || len(types) != 1 || types[0].Cells == nil {
		t.Fatalf("CustomResourceTypes: %v (%d types)", err, len(types))
	}
	typ := types[0]
	now := time.Now()
	ts := func(d time.Duration) string { return now.Add(-d).UTC().Format(time.RFC3339) }
	obj := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "kept.tabula.test/v1", "kind": "Cert",
		"metadata": map[string]interface{}{"name": "web", "namespace": "ns", "creationTimestamp": ts(26*time.Hour + 30*time.Second)},
		"spec":     map[string]interface{}{"replicas": int64(3)},
		"status":   map[string]interface{}{"phase": "Ready", "renewed": ts(50*time.Minute + 30*time.Second), "broken": "yesterday"},
	}}
	out := codecs.Output{View: codecs.ViewTable, MediaType: codecs.JSON, ViewVersion: "v1"}
	view, err := codecs.ObjectView(out, typ, obj.DeepCopyObject(), "None")
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := codecs.WriteTableJSON(&want, view.(*metav1.Table)); err != nil {
		t.Fatal(err)
	}
	kept, err := codecs.KeptRow(typ, obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	err = codecs.WriteTableRowsJSON(&got, out, typ, metav1.ListMeta{}, 1, func(b []byte, _ int) ([]byte, error) { return codecs.AppendKeptRow(b, kept, now) })
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("kept row\n%s\nthe convertor's\n%s", got.Bytes(), want.Bytes())
	}
	later, err := codecs.AppendKeptRow(nil, kept, now.Add(2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if w := `{"cells":["web","Ready",3,"170m","\u003cinvalid\u003e",null,"28h"],"object":null}`; string(later) != w {
		t.Errorf("two hours later the row reads\n%s\nwant\n%s", later, w)
	}
}

func ptrTo[T any](v T) *T { return &v }

// keptRowAt is obj's kept row (without an object) served at the time at.
func keptRowAt(t *testing.T, typ *schema.Type, obj runtime.Object, at time.Time) []byte {
	t.Helper()
	kept, err := codecs.KeptRow(typ, obj, nil)
	if err != nil {
		t.Fatal(err)
	}
	row, err := codecs.AppendKeptRow(nil, kept, at)
	if err != nil {
		t.Fatal(err)
	}
	return row
}

// hasAge: a Table of typ has an Age column.
func hasAge(typ *schema.Type) bool {
	return slices.ContainsFunc(typ.Columns, func(c metav1.TableColumnDefinition) bool { return c.Name == "Age" })
}

// A kept row cut short is refused, not read past its end.
func TestKeptRowCutShort(t *testing.T) {
	typ, _ := schema.NewBuiltin().Lookup("", "v1", "events")
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "e", CreationTimestamp: metav1.Now()}, FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now()}
	kept, err := codecs.KeptRow(typ, ev, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	refused := 0
	for n := range len(kept) {
		if _, err := codecs.AppendKeptRow(nil, kept[:n], time.Now()); err != nil {
			refused++
		}
	}
	// Every cut before the JSON's last open age (First Seen's) is
	// refused; the cuts after it only shorten what follows: that cell's
	// closing quote, Count, Name, the object.
	if tail := `",1,"e"],"object":{}}`; refused != len(kept)-len(tail) {
		t.Errorf("%d of %d cuts refused; want all but the %d in %s", refused, len(kept), len(tail), tail)
	}
	if _, err := codecs.AppendKeptRow(nil, []byte{0xff, 0xff}, time.Now()); err == nil {
		t.Error("a count without its end was read")
	}
}

// A kept row's ages are those at the time it is served, not when it was
// made; a row without an object or cells reads as appendTableRow writes it.
func TestKeptRowAgesWhenServed(t *testing.T) {
	typ, _ := schema.NewBuiltin().Lookup("", "v1", "configmaps")
	made := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", CreationTimestamp: metav1.NewTime(made)}}
	kept, err := codecs.KeptRow(typ, cm, nil)
	if err != nil {
		t.Fatal(err)
	}
	for after, want := range map[time.Duration]string{
		90 * time.Second: `{"cells":["a",0,"90s"],"object":null}`,
		25 * time.Minute: `{"cells":["a",0,"25m"],"object":null}`,
		50 * time.Hour:   `{"cells":["a",0,"2d2h"],"object":null}`,
	} {
		got, err := codecs.AppendKeptRow(nil, kept, made.Add(after))
		if err != nil || string(got) != want {
			t.Errorf("%v after: %s, %v; want %s", after, got, err, want)
		}
	}
	none := &schema.Type{Cells: func(runtime.Object) ([]any, error) { return nil, nil }}
	kept, err = codecs.KeptRow(none, cm, []byte(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := codecs.AppendKeptRow(nil, kept, made); err != nil || string(got) != `{"cells":null,"object":{}}` {
		t.Errorf("a row of no cells: %s, %v", got, err)
	}
}
