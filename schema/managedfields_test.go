package schema

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Every stored built-in kind has field management, typed from its own
// OpenAPI definition: a kind typed by deduction would treat every list
// as atomic and make every apply of it conflict.
func TestBuiltinKindsHaveFieldTypes(t *testing.T) {
	r := NewBuiltin()
	for _, ty := range r.Types() {
		if ty.Virtual {
			if ty.ManagedFields != nil {
				t.Errorf("%s is never stored but has field management", ty.GroupVersionKind())
			}
			continue
		}
		if ty.ManagedFields == nil {
			t.Errorf("%s has no field management", ty.GroupVersionKind())
			continue
		}
		mf, err := ty.ManagedFields()
		if err != nil {
			t.Fatalf("%s: %v", ty.GroupVersionKind(), err)
		}
		obj := ty.New()
		obj.GetObjectKind().SetGroupVersionKind(ty.GroupVersionKind())
		tv, err := mf.Types.ObjectToTyped(obj)
		if err != nil {
			t.Errorf("%s: %v", ty.GroupVersionKind(), err)
			continue
		}
		if tv == nil {
			t.Errorf("%s: no typed value", ty.GroupVersionKind())
		}
	}
}

// A list with patchStrategy=merge and no list type is a map keyed by its
// patchMergeKey (the seed's rule): two containers named alike in an
// applied Pod are a duplicate, and each container is its own field.
func TestPatchStrategyMergeIsListMap(t *testing.T) {
	r := NewBuiltin()
	ty, _ := r.Lookup("", "v1", "pods")
	mf, err := ty.ManagedFields()
	if err != nil {
		t.Fatal(err)
	}
	pod := &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": "v1", "kind": "Pod", "metadata": map[string]interface{}{"name": "p"},
		"spec": map[string]interface{}{"containers": []interface{}{
			map[string]interface{}{"name": "a", "image": "x"},
			map[string]interface{}{"name": "b", "image": "y"},
		}},
	}}
	tv, err := mf.Types.ObjectToTyped(pod)
	if err != nil {
		t.Fatal(err)
	}
	set, err := tv.ToFieldSet()
	if err != nil {
		t.Fatal(err)
	}
	got := set.String()
	for _, want := range []string{`.spec.containers[name="a"].image`, `.spec.containers[name="b"].image`} {
		if !contains(got, want) {
			t.Errorf("field set lacks %s:\n%s", want, got)
		}
	}
	pod.Object["spec"].(map[string]interface{})["containers"] = []interface{}{
		map[string]interface{}{"name": "a"}, map[string]interface{}{"name": "a"},
	}
	if _, err := mf.Types.ObjectToTyped(pod); err == nil {
		t.Error("two containers named a were accepted in an applied Pod")
	}
	if _, err := mf.Types.ObjectToTyped(pod, typed.AllowDuplicates); err != nil {
		t.Errorf("a live object with duplicates must still be typed: %v", err)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func BenchmarkBuiltinTypeConverter(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := buildBuiltinTypeConverter(); err != nil {
			b.Fatal(err)
		}
	}
}
