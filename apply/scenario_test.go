package apply_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/tabula-dev/tabula/apply"
	"github.com/tabula-dev/tabula/schema"
)

// A scenario is a sequence of writes to one object through the field
// manager, each with what kube-apiserver makes of it: the object, its
// managedFields, or the error. Scenarios live in testdata/scenarios.
type scenario struct {
	// Resource is "<group>/<version>/<resource>" ("/v1/configmaps" for
	// the core group) of the first step; a step's configuration may name
	// another version of the same kind.
	Resource string `json:"resource"`
	// CRD, when set, defines the custom resource the scenario writes.
	CRD *apiextensionsv1.CustomResourceDefinition `json:"crd"`
	// Live is the object before the first step (absent: none yet).
	Live  map[string]interface{} `json:"live"`
	Steps []step                 `json:"steps"`
}

type step struct {
	Name string `json:"name"`
	// CRD, when set, replaces the scenario's CRD before the step (a
	// schema change between writes).
	CRD     *apiextensionsv1.CustomResourceDefinition `json:"crd"`
	Manager string                                    `json:"manager"`
	// Apply is an applied configuration (Server-Side Apply); Update is a
	// whole object written by create, update or a client-side patch.
	Apply     map[string]interface{} `json:"apply"`
	ApplyText string                 `json:"applyText"`
	Update    map[string]interface{} `json:"update"`
	Force     bool                   `json:"force"`
	// FieldValidation judges an apply's duplicate fields (Strict, Warn).
	FieldValidation string `json:"fieldValidation"`
	Subresource     string `json:"subresource"`
	Expect          expect `json:"expect"`
}

type expect struct {
	// Object is the whole object after the step, managedFields aside.
	Object map[string]interface{} `json:"object"`
	// Has checks single fields by dotted path; null means absent.
	Has map[string]interface{} `json:"has"`
	// ManagedFields are the entries in any order. An entry's time is
	// "old" (kept from before the step), "new" (set by it) or absent.
	ManagedFields []map[string]interface{} `json:"managedFields"`
	// NoManagedFields: the object has none.
	NoManagedFields bool `json:"noManagedFields"`
	// Warnings an apply reports (duplicate fields under Warn).
	Warnings []string `json:"warnings"`
	// Error is the Status the step fails with (code and message); the
	// object stays as it was.
	Error *struct {
		Code    int32  `json:"code"`
		Message string `json:"message"`
		// Causes are "<field>: <message>" of a conflict's details.
		Causes []string `json:"causes"`
	} `json:"error"`
}

// oldTime is what every live entry's time is set to before a step, so a
// step's own timestamps can be told from older ones.
const oldTime = "2020-01-01T00:00:00Z"

func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios in testdata/scenarios (%v)", err)
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var sc scenario
			if err := yaml.UnmarshalStrict(raw, &sc); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			runScenario(t, &sc)
		})
	}
}

func runScenario(t *testing.T, sc *scenario) {
	reg := schema.NewBuiltin()
	addCRD(t, reg, sc.CRD)
	parts := strings.SplitN(sc.Resource, "/", 3)
	if len(parts) != 3 {
		t.Fatalf("resource %q is not group/version/resource", sc.Resource)
	}
	first, ok := reg.Lookup(parts[0], parts[1], parts[2])
	if !ok {
		t.Fatalf("no type %s", sc.Resource)
	}
	var live runtime.Object
	if sc.Live != nil {
		live = decodeAs(t, first, sc.Live)
		if acc, err := meta.Accessor(live); err == nil && acc.GetUID() == "" {
			acc.SetUID("0b8b8a2e-7d5c-4a40-a3a4-000000000001")
		}
	}
	if len(sc.Steps) == 0 {
		t.Fatal("scenario has no steps")
	}
	for i, st := range sc.Steps {
		name := st.Name
		if name == "" {
			name = fmt.Sprint("step ", i+1)
		}
		if st.CRD != nil {
			addCRD(t, reg, st.CRD)
			first, _ = reg.Lookup(parts[0], parts[1], parts[2])
		}
		// The step's Type: the version its object names.
		ty := first
		body := st.Apply
		if body == nil {
			body = st.Update
		}
		if av, _ := body["apiVersion"].(string); av != "" && av != first.GroupVersion().String() {
			gv := strings.SplitN(av, "/", 2)
			if other, ok := reg.Lookup(first.Group, gv[len(gv)-1], first.Resource); ok {
				ty = other
			}
		}
		if live != nil {
			live = convertTo(t, reg, live, ty)
			ageTimes(live)
		}
		m, err := apply.NewManager(ty, st.Subresource)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		before := live
		base := live
		if base == nil {
			base = m.Empty()
		}
		var out runtime.Object
		var warnings []string
		switch {
		case st.Apply != nil || st.ApplyText != "":
			patch := []byte(st.ApplyText)
			if st.Apply != nil {
				if patch, err = yaml.Marshal(st.Apply); err != nil {
					t.Fatal(err)
				}
			}
			var applied apply.Applied
			applied, err = m.Apply(base.DeepCopyObject(), patch, st.Manager, st.Force, st.FieldValidation)
			out, warnings = applied.Obj, applied.Warnings
		case st.Update != nil:
			out = m.Update(base.DeepCopyObject(), decodeAs(t, ty, st.Update), st.Manager)
		default:
			t.Fatalf("%s: neither apply nor update", name)
		}
		if st.Expect.Error != nil {
			checkError(t, name, err, st.Expect)
			live = before
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(warnings, st.Expect.Warnings) {
			t.Errorf("%s: warnings %q, want %q", name, warnings, st.Expect.Warnings)
		}
		live = out
		// A stored object has a uid; the field manager tells creates
		// from updates by it.
		if acc, err := meta.Accessor(live); err == nil && acc.GetUID() == "" {
			acc.SetUID("0b8b8a2e-7d5c-4a40-a3a4-000000000001")
		}
		checkObject(t, name, live, st.Expect)
	}
}

// addCRD serves crd's versions in reg (none when crd is nil).
func addCRD(t *testing.T, reg *schema.Registry, crd *apiextensionsv1.CustomResourceDefinition) {
	t.Helper()
	if crd == nil {
		return
	}
	crd.Status.AcceptedNames = crd.Spec.Names
	if crd.Status.AcceptedNames.ListKind == "" {
		crd.Status.AcceptedNames.ListKind = crd.Spec.Names.Kind + "List"
	}
	types, err := schema.CustomResourceTypes(crd, nil)
	if err != nil {
		t.Fatalf("CRD: %v", err)
	}
	for _, ty := range types {
		reg.Add(ty)
	}
}

// decodeAs decodes a scenario's object into ty's Go type.
func decodeAs(t *testing.T, ty *schema.Type, m map[string]interface{}) runtime.Object {
	t.Helper()
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	obj := ty.New()
	if err := json.Unmarshal(b, obj); err != nil {
		t.Fatalf("decoding %s: %v", ty.Kind, err)
	}
	obj.GetObjectKind().SetGroupVersionKind(ty.GroupVersionKind())
	return obj
}

// convertTo reads the live object as ty serves it, as the registry does:
// through the stored form (a built-in kind's other version), or by
// apiVersion alone (a custom resource's).
func convertTo(t *testing.T, reg *schema.Registry, obj runtime.Object, ty *schema.Type) runtime.Object {
	t.Helper()
	gvk := obj.GetObjectKind().GroupVersionKind()
	if gvk == ty.GroupVersionKind() {
		return obj
	}
	if ty.Unstructured {
		m := toMap(t, obj)
		m["apiVersion"] = ty.GroupVersion().String()
		return decodeAs(t, ty, m)
	}
	from, ok := reg.Lookup(gvk.Group, gvk.Version, ty.Resource)
	if !ok {
		t.Fatalf("no type serves %v", gvk)
	}
	var err error
	if from.ToStorage != nil {
		if obj, err = from.ToStorage(obj); err != nil {
			t.Fatal(err)
		}
	}
	if ty.FromStorage != nil {
		if obj, err = ty.FromStorage(obj); err != nil {
			t.Fatal(err)
		}
	}
	obj.GetObjectKind().SetGroupVersionKind(ty.GroupVersionKind())
	return obj
}

func ageTimes(obj runtime.Object) {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	entries := acc.GetManagedFields()
	at, _ := time.Parse(time.RFC3339, oldTime)
	old := metav1.NewTime(at)
	for i := range entries {
		if entries[i].Time != nil {
			entries[i].Time = &old
		}
	}
	acc.SetManagedFields(entries)
}

func toMap(t *testing.T, obj runtime.Object) map[string]interface{} {
	t.Helper()
	b, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]interface{}
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// normal round-trips a scenario value through JSON, as objects are.
func normal(t *testing.T, v interface{}) interface{} {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out interface{}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

func checkError(t *testing.T, name string, err error, want expect) {
	t.Helper()
	if err == nil {
		t.Errorf("%s: succeeded; want a %d error", name, want.Error.Code)
		return
	}
	var st apierrors.APIStatus
	if !errors.As(err, &st) {
		t.Errorf("%s: %v is not a Status", name, err)
		return
	}
	s := st.Status()
	if s.Code != want.Error.Code || s.Message != want.Error.Message {
		t.Errorf("%s: got %d %q\nwant %d %q", name, s.Code, s.Message, want.Error.Code, want.Error.Message)
	}
	if want.Error.Causes != nil {
		var got []string
		if s.Details != nil {
			for _, c := range s.Details.Causes {
				got = append(got, c.Field+": "+c.Message)
			}
		}
		if !reflect.DeepEqual(got, want.Error.Causes) {
			t.Errorf("%s: causes %q, want %q", name, got, want.Error.Causes)
		}
	}
}

func checkObject(t *testing.T, name string, obj runtime.Object, want expect) {
	t.Helper()
	got := toMap(t, obj)
	md, _ := got["metadata"].(map[string]interface{})
	entries, _ := md["managedFields"].([]interface{})
	delete(md, "managedFields")
	delete(md, "uid")
	if md["creationTimestamp"] == nil {
		delete(md, "creationTimestamp")
	}
	if want.Object != nil {
		if w := normal(t, want.Object); !reflect.DeepEqual(got, w) {
			t.Errorf("%s: object\n%s\nwant\n%s", name, show(got), show(w))
		}
	}
	for path, w := range want.Has {
		v, found := dig(got, path)
		switch {
		case w == nil && found:
			t.Errorf("%s: %s is %v; want it absent", name, path, v)
		case w != nil && !reflect.DeepEqual(v, normal(t, w)):
			t.Errorf("%s: %s is %v; want %v", name, path, v, w)
		}
	}
	if want.NoManagedFields && len(entries) > 0 {
		t.Errorf("%s: managedFields %s; want none", name, show(entries))
	}
	if want.ManagedFields == nil {
		return
	}
	var gotEntries []interface{}
	for _, e := range entries {
		m := e.(map[string]interface{})
		switch tm, ok := m["time"].(string); {
		case !ok:
		case tm == oldTime:
			m["time"] = "old"
		default:
			m["time"] = "new"
		}
		gotEntries = append(gotEntries, m)
	}
	wantEntries, _ := normal(t, want.ManagedFields).([]interface{})
	sortEntries(gotEntries)
	sortEntries(wantEntries)
	if !reflect.DeepEqual(gotEntries, wantEntries) {
		t.Errorf("%s: managedFields\n%s\nwant\n%s", name, show(gotEntries), show(wantEntries))
	}
}

func sortEntries(entries []interface{}) {
	key := func(e interface{}) string {
		m, _ := e.(map[string]interface{})
		return fmt.Sprint(m["manager"], "|", m["operation"], "|", m["subresource"], "|", m["apiVersion"])
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
}

// dig follows a dotted path (".spec.replicas") through maps.
func dig(v interface{}, path string) (interface{}, bool) {
	for _, k := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		m, ok := v.(map[string]interface{})
		if !ok {
			return nil, false
		}
		if v, ok = m[k]; !ok {
			return nil, false
		}
	}
	return v, true
}

func show(v interface{}) string {
	b, _ := yaml.Marshal(v)
	return string(b)
}
