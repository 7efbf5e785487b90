package conformance

import (
	"net/http"
	"testing"
)

// Section "Server-Side Apply" (001_*), through raw HTTP: the seed's
// example bodies and requests, and the Status answers clients read.

const secApply = "Server-Side Apply"

// applyCT is the header an apply sends.
const applyCT = "Content-Type: application/apply-patch+yaml"

// managers lists an object's managedFields as "manager/operation".
func managers(o obj) []string {
	var out []string
	for _, e := range o.list("metadata.managedFields") {
		m, _ := e.(map[string]any)
		out = append(out, obj(m).str("manager")+"/"+obj(m).str("operation"))
	}
	return out
}

func applyChecks() []conceptCheck {
	return []conceptCheck{
		{section: secApply, name: "the seed's apiVersion-and-kind body changes nothing and notifies no watcher", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			created := e.req(t, "PATCH", cmPath(ns, "test-cm")+"?fieldManager=kubectl",
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: test-cm\n  labels:\n    test-label: test\ndata:\n  key: some value\n", applyCT).
				expect(t, http.StatusCreated)
			if got := managers(created); len(got) != 1 || got[0] != "kubectl/Apply" {
				t.Errorf("managedFields %v, want one kubectl Apply entry", got)
			}
			w := e.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+rv(created))
			same := e.req(t, "PATCH", cmPath(ns, "test-cm")+"?fieldManager=someone", `{"apiVersion":"v1","kind":"ConfigMap"}`, applyCT).expect(t, http.StatusOK)
			if rv(same) != rv(created) || same.str("data.key") != "some value" || len(managers(same)) != 1 {
				t.Errorf("after the no-change body: rv %s (was %s), data %v, managedFields %v", rv(same), rv(created), same.get("data"), managers(same))
			}
			e.createCM(t, ns, "marker")
			expectEvent(t, w.next(t), "ADDED", "marker") // nothing before it
		}},
		{section: secApply, name: "a conflict is a 409 Status with one cause per field and manager", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "PATCH", cmPath(ns, "c")+"?fieldManager=mgr-a", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {owner: a}\ndata: {key: a}\n", applyCT).
				expect(t, http.StatusCreated)
			st := e.req(t, "PATCH", cmPath(ns, "c")+"?fieldManager=mgr-b", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  labels: {owner: b}\ndata: {key: b}\n", applyCT).
				expectStatus(t, http.StatusConflict, "Conflict", "Apply failed with 2 conflicts: conflicts with \"mgr-a\":\n- .data.key\n- .metadata.labels.owner")
			causes := st.list("details.causes")
			if len(causes) != 2 {
				t.Fatalf("causes %v, want two", causes)
			}
			for i, field := range []string{".data.key", ".metadata.labels.owner"} {
				c := obj(causes[i].(map[string]any))
				if c.str("reason") != "FieldManagerConflict" || c.str("field") != field || c.str("message") != `conflict with "mgr-a"` {
					t.Errorf("cause %d: %v", i, c)
				}
			}
			forced := e.req(t, "PATCH", cmPath(ns, "c")+"?fieldManager=mgr-b&force=true", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata: {key: b}\n", applyCT).
				expect(t, http.StatusOK)
			if forced.str("data.key") != "b" || forced.str("metadata.labels.owner") != "a" {
				t.Errorf("forced apply: data %v labels %v", forced.get("data"), forced.get("metadata.labels"))
			}
		}},
		{section: secApply, name: "fieldManager is required for apply and derived from the User-Agent for updates", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "PATCH", cmPath(ns, "m"), "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: m\n", applyCT).
				expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "fieldManager: Required value: is required for apply patch")
			e.req(t, "PATCH", cmPath(ns, "m")+"?fieldManager=x&force=true", `{"data":{"a":"1"}}`, "Content-Type: application/merge-patch+json").
				expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "force: Forbidden: may not be specified for non-apply patch")
			created := e.req(t, "POST", cmPath(ns), cm("m", map[string]string{"a": "1"}), "User-Agent: my-controller/1.2 (linux/amd64)").expect(t, http.StatusCreated)
			if got := managers(created); len(got) != 1 || got[0] != "my-controller/Update" {
				t.Errorf("create without fieldManager recorded %v, want my-controller/Update", got)
			}
		}},
		{section: secApply, name: "the seed's two requests that clear managedFields", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			applied := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: example-cm\ndata: {k: v}\n"
			e.req(t, "PATCH", cmPath(ns, "example-cm")+"?fieldManager=mgr", applied, applyCT).expect(t, http.StatusCreated)
			cleared := e.req(t, "PATCH", cmPath(ns, "example-cm"), `{"metadata":{"managedFields":[{}]}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
			if cleared.has("metadata.managedFields") {
				t.Errorf("merge patch [{}] left managedFields %v", cleared.get("metadata.managedFields"))
			}
			again := e.req(t, "PATCH", cmPath(ns, "example-cm")+"?fieldManager=mgr", applied, applyCT).expect(t, http.StatusOK)
			if len(managers(again)) == 0 {
				t.Fatalf("apply after the reset recorded nothing")
			}
			cleared = e.req(t, "PATCH", cmPath(ns, "example-cm"), `[{"op": "replace", "path": "/metadata/managedFields", "value": [{}]}]`,
				"Content-Type: application/json-patch+json", "If-Match: 1234567890123456789").expect(t, http.StatusOK)
			if cleared.has("metadata.managedFields") {
				t.Errorf("JSON patch [{}] left managedFields %v", cleared.get("metadata.managedFields"))
			}
		}},
	}
}
