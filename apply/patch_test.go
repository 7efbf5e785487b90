package apply

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestApply(t *testing.T) {
	orig := []byte(`{"metadata":{"name":"c"},"data":{"a":"1"}}`)
	cases := []struct {
		name  string
		kind  Kind
		patch string
		want  string // JSON result, or "" when an error is wanted
		bad   bool   // BadPatchError (400) rather than InvalidPatchError (422)
	}{
		{name: "json add", kind: JSONPatch, patch: `[{"op":"add","path":"/data/b","value":"2"}]`, want: `{"data":{"a":"1","b":"2"},"metadata":{"name":"c"}}`},
		{name: "json test fails", kind: JSONPatch, patch: `[{"op":"test","path":"/data/a","value":"9"}]`},
		{name: "json test of the document without value", kind: JSONPatch, patch: `[{"op":"test","path":""}]`},
		{name: "json not an array", kind: JSONPatch, patch: `{"op":"add"}`, bad: true},
		// kube-apiserver's json-patch v4, where RFC 6902 readings differ:
		{name: "json add at the root", kind: JSONPatch, patch: `[{"op":"add","path":"","value":{"data":{"x":"y"}}}]`},
		{name: "json operation in another case", kind: JSONPatch, patch: `[{"op":"Add","path":"/data/b","value":"2"}]`},
		{name: "json copy of a missing path", kind: JSONPatch, patch: `[{"op":"copy","from":"/data/zz","path":"/data/q"}]`, want: `{"data":{"a":"1","q":null},"metadata":{"name":"c"}}`},
		{name: "json test without value of a missing path", kind: JSONPatch, patch: `[{"op":"test","path":"/data/zz"},{"op":"add","path":"/data/b","value":"2"}]`, want: `{"data":{"a":"1","b":"2"},"metadata":{"name":"c"}}`},
		{name: "json test without value of a present path", kind: JSONPatch, patch: `[{"op":"test","path":"/data/a"}]`},
		{name: "json copies past 3 MiB", kind: JSONPatch, patch: `[{"op":"add","path":"/data/a","value":"` + strings.Repeat("x", 1<<20) + `"},` +
			`{"op":"copy","from":"/data/a","path":"/data/b"},{"op":"copy","from":"/data/a","path":"/data/c"},{"op":"copy","from":"/data/a","path":"/data/d"}]`},
		// Inputs json-patch v4 panics on: a failed patch, never a crash.
		{name: "json replace of the document without value", kind: JSONPatch, patch: `[{"op":"replace","path":""}]`},
		{name: "json test of an array holding null", kind: JSONPatch, patch: `[{"op":"add","path":"/f","value":["a"]},{"op":"test","path":"/f","value":[null]}]`},
		{name: "json add into a copied null", kind: JSONPatch, patch: `[{"op":"add","path":"/metadata/x","value":null},{"op":"copy","from":"/metadata/x","path":"/metadata/y"},{"op":"add","path":"/metadata/y/z","value":1}]`},
		{name: "merge", kind: MergePatch, patch: `{"data":{"a":null,"b":"2"}}`, want: `{"data":{"b":"2"},"metadata":{"name":"c"}}`},
		{name: "merge truncated", kind: MergePatch, patch: `{"data":`, bad: true},
		{name: "merge null", kind: MergePatch, patch: `null`, bad: true},
		{name: "strategic", kind: StrategicPatch, patch: `{"data":{"b":"2"}}`, want: `{"data":{"a":"1","b":"2"},"metadata":{"name":"c"}}`},
		{name: "strategic not an object", kind: StrategicPatch, patch: `[1]`, bad: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Apply(c.kind, orig, []byte(c.patch), &corev1.ConfigMap{})
			if c.want != "" {
				if err != nil || string(got) != c.want {
					t.Fatalf("Apply = %s, %v; want %s", got, err, c.want)
				}
				return
			}
			var bad *BadPatchError
			var inv *InvalidPatchError
			if c.bad && !errors.As(err, &bad) {
				t.Fatalf("Apply error = %v; want BadPatchError", err)
			}
			if !c.bad && !errors.As(err, &inv) {
				t.Fatalf("Apply error = %v; want InvalidPatchError", err)
			}
		})
	}
}
