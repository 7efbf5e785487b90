package apply

import (
	"errors"
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
		{name: "json add", kind: JSONPatch, patch: `[{"op":"add","path":"/data/b","value":"2"}]`, want: `{"metadata":{"name":"c"},"data":{"a":"1","b":"2"}}`},
		{name: "json test fails", kind: JSONPatch, patch: `[{"op":"test","path":"/data/a","value":"9"}]`},
		{name: "json test without value", kind: JSONPatch, patch: `[{"op":"test","path":""}]`, bad: true},
		{name: "json not an array", kind: JSONPatch, patch: `{"op":"add"}`, bad: true},
		{name: "merge", kind: MergePatch, patch: `{"data":{"a":null,"b":"2"}}`, want: `{"metadata":{"name":"c"},"data":{"b":"2"}}`},
		{name: "merge truncated", kind: MergePatch, patch: `{"data":`, bad: true},
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
