package apply_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/tabula-dev/tabula/apply"
)

// FuzzApply applies arbitrary patches of the three client-side formats to a
// ConfigMap. A patch may be refused, but only with *apply.BadPatchError
// (400) or *apply.InvalidPatchError (422): the server answers anything else
// with a 500. A successful patch must produce a JSON object.
//
//	GOFLAGS=-mod=mod go test ./apply -run '^$' -fuzz '^FuzzApply$' -fuzztime 20s

// fuzzOriginal is a ConfigMap as the server hands it to Apply.
const fuzzOriginal = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"fv-target","namespace":"ref-writes",` +
	`"uid":"0b8b8a2e-7d5c-4a40-a3a4-000000000000","resourceVersion":"42","creationTimestamp":"2020-01-02T03:04:05Z",` +
	`"labels":{"app":"crud"},"annotations":{"a":"b"},"finalizers":["example.com/f"],` +
	`"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner","uid":"u1"}]},` +
	`"data":{"key":"value","other":"x"},"binaryData":{"bin":"AAEC"}}`

var fuzzKinds = []apply.Kind{apply.JSONPatch, apply.MergePatch, apply.StrategicPatch}

func kindFor(b uint8) apply.Kind { return fuzzKinds[int(b)%len(fuzzKinds)] }

func FuzzApply(f *testing.F) {
	// Patches recorded against a real kube-apiserver (writes/, errors/).
	for _, dir := range []string{"writes", "errors", "deletion"} {
		files, _ := filepath.Glob(filepath.Join("../testdata/reference", dir, "*.json"))
		if len(files) == 0 {
			f.Fatalf("no recorded cases in ../testdata/reference/%s", dir)
		}
		for _, file := range files {
			raw, err := os.ReadFile(file)
			if err != nil {
				continue
			}
			var c struct {
				Request struct {
					Method  string            `json:"method"`
					Headers map[string]string `json:"headers"`
					Body    json.RawMessage   `json:"body"`
				} `json:"request"`
			}
			if json.Unmarshal(raw, &c) != nil || c.Request.Method != "PATCH" || len(c.Request.Body) == 0 {
				continue
			}
			body := []byte(c.Request.Body)
			if body[0] == '"' {
				var s string
				if json.Unmarshal(body, &s) != nil {
					continue
				}
				body = []byte(s)
			} else {
				var buf bytes.Buffer
				if json.Compact(&buf, body) != nil {
					continue
				}
				body = buf.Bytes()
			}
			for i, k := range fuzzKinds {
				if string(k) == c.Request.Headers["Content-Type"] {
					f.Add(uint8(i), body)
				}
			}
		}
	}
	for _, s := range []string{
		`[]`, `[{}]`, `{}`, `null`, `""`, `[null]`, `1`,
		`[{"op":"add","path":"/data/new","value":"1"},{"op":"replace","path":"/data/key","value":"r"},{"op":"remove","path":"/data/other"},{"op":"test","path":"/data/key","value":"r"},{"op":"copy","from":"/data/new","path":"/data/copied"},{"op":"move","from":"/data/copied","path":"/data/moved"}]`,
		`[{"op":"add","path":"/metadata/finalizers/-","value":"x"}]`,
		`[{"op":"add","path":"/metadata/finalizers/-1","value":"x"}]`,
		`[{"op":"remove","path":"/metadata/finalizers/-2"}]`,
		`[{"op":"copy","from":"","path":"/data/self"}]`,
		`[{"op":"move","from":"/metadata","path":"/metadata/labels/x"}]`,
		`[{"op":"add","path":"/metadata/ownerReferences/0/uid","value":{"deep":[1,2,[3]]}}]`,
		`[{"op":"replace","path":"/data/~1~0","value":"x"}]`,
		`[{"op":"test","path":"/metadata/resourceVersion","value":"1"}]`,
		`[{"op":"unknown","path":"/x"}]`,
		`{"data":{"k":"first"},"data":{"k":"second"}}`,
		`{"metadata":{"labels":{"l":"v"}},"data":{"new":"x","other":null}}`,
		`{"metadata":{"finalizers":null,"ownerReferences":[]}}`,
		`{"data":{"$patch":"replace","only":"this"}}`,
		`{"data":{"$patch":"delete"}}`,
		`{"data":{"$patch":"explode"}}`,
		`{"$patch":"replace"}`,
		`{"metadata":{"$setElementOrder/finalizers":["a","b"],"finalizers":["b"]}}`,
		`{"metadata":{"$deleteFromPrimitiveList/finalizers":["example.com/f"]}}`,
		`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":"u1"}]}}`,
		`{"metadata":{"$retainKeys":["labels"],"labels":{"x":"y"}}}`,
		`{"$retainKeys":"notalist"}`,
		`{"metadata":{"finalizers":[{"$patch":"replace"}]}}`,
		// Inputs kube's json-patch v4 and strategic merge panic on.
		`[{"op":"replace","path":""}]`,
		`[{"op":"test","path":""}]`,
		`[{"op":"test","path":"/metadata/finalizers","value":[null]}]`,
		`[{"op":"add","path":"/metadata/x","value":null},{"op":"copy","from":"/metadata/x","path":"/metadata/y"},{"op":"add","path":"/metadata/y/z","value":1}]`,
		`{"metadata":{"$setElementOrder/finalizers":[{"a":1}]}}`,
	} {
		for i := range fuzzKinds {
			f.Add(uint8(i), []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, kind uint8, patch []byte) {
		k := kindFor(kind)
		out, err := apply.Apply(k, []byte(fuzzOriginal), patch, &corev1.ConfigMap{})
		if err != nil {
			var bad *apply.BadPatchError
			var inv *apply.InvalidPatchError
			if !errors.As(err, &bad) && !errors.As(err, &inv) {
				t.Fatalf("%s: Apply failed with %T (%v); want BadPatchError or InvalidPatchError", k, err, err)
			}
			if out != nil {
				t.Fatalf("%s: Apply returned output together with an error", k)
			}
			if strings.TrimSpace(err.Error()) == "" {
				t.Fatalf("%s: empty error message", k)
			}
			return
		}
		var doc interface{}
		if err := json.Unmarshal(out, &doc); err != nil {
			t.Fatalf("%s: patched document is not JSON: %v\n%s", k, err, out)
		}
		if k != apply.MergePatch && k != apply.JSONPatch {
			// A strategic merge patch is always a map merged into the object.
			if _, ok := doc.(map[string]interface{}); !ok {
				t.Fatalf("%s: patched document is %T, want an object\n%s", k, doc, out)
			}
		}
	})
}
