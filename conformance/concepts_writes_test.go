package conformance

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Sections "Dry-run", "Field validation", "Updates to existing resources"
// (with subresources), and, from the deprecation policy (001_*), the
// warnings for deprecated APIs.

const (
	secDryRun      = "Dry-run"
	secFieldValid  = "Field validation"
	secUpdates     = "Updates to existing resources"
	secDeprecation = "Deprecated API warnings"
)

// warnings returns the texts of a response's Warning headers.
func (r *response) warnings() []string {
	var out []string
	for _, h := range r.hdr.Values("Warning") {
		text, ok := strings.CutPrefix(h, `299 - "`)
		if !ok {
			out = append(out, "malformed: "+h)
			continue
		}
		out = append(out, strings.ReplaceAll(strings.TrimSuffix(text, `"`), `\"`, `"`))
	}
	return out
}

func writeChecks() []conceptCheck {
	return []conceptCheck{
		{section: secDryRun, name: "create, update, patch and delete persist nothing and notify no watcher", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			w := e.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+rv(a))

			created := e.req(t, "POST", cmPath(ns)+"?dryRun=All", cm("b", map[string]string{"k": "v"})).expect(t, http.StatusCreated)
			if created.str("metadata.name") != "b" || created.str("metadata.uid") == "" {
				t.Errorf("dry-run create answered %v, want the object that would be stored", created.get("metadata"))
			}
			e.req(t, "GET", cmPath(ns, "b"), nil).expectStatus(t, http.StatusNotFound, "NotFound")

			changed := obj(cm("a", map[string]string{"k": "dry"}))
			if got := e.req(t, "PUT", cmPath(ns, "a")+"?dryRun=All", changed).expect(t, http.StatusOK); got.str("data.k") != "dry" {
				t.Errorf("dry-run update answered data %v, want the updated object", got.get("data"))
			}
			patched := e.req(t, "PATCH", cmPath(ns, "a")+"?dryRun=All", `{"data":{"k":"patched"}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
			if patched.str("data.k") != "patched" {
				t.Errorf("dry-run patch answered data %v, want the patched object", patched.get("data"))
			}
			e.req(t, "DELETE", cmPath(ns, "a")+"?dryRun=All", nil).expect(t, http.StatusOK)

			got := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			if rv(got) != rv(a) || got.str("data.k") != "v" {
				t.Errorf("after dry runs the object is rv %s data %v, want it unchanged (rv %s)", rv(got), got.get("data"), rv(a))
			}
			e.createCM(t, ns, "marker")
			expectEvent(t, w.next(t), "ADDED", "marker") // nothing before it
		}},
		{section: secDryRun, name: "validation and conflicts still apply", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			e.req(t, "POST", cmPath(ns)+"?dryRun=All", cm("bad", map[string]string{"not a key": "v"})).expectStatus(t, http.StatusUnprocessableEntity, "Invalid")
			e.req(t, "POST", cmPath(ns)+"?dryRun=All", cm("a", nil)).expectStatus(t, http.StatusConflict, "AlreadyExists")
			stale := cm("a", map[string]string{"k": "x"})
			stale["metadata"].(map[string]any)["resourceVersion"] = "1"
			e.req(t, "PUT", cmPath(ns, "a")+"?dryRun=All", stale).expectStatus(t, http.StatusConflict, "Conflict")
			if got := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK); rv(got) != rv(a) {
				t.Errorf("object changed to rv %s", rv(got))
			}
		}},
		{section: secDryRun, name: "an unsupported dryRun value is 422", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "POST", cmPath(ns)+"?dryRun=Bogus", cm("a", nil)).expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "Unsupported value", `"Bogus"`)
			e.req(t, "GET", cmPath(ns, "a"), nil).expectStatus(t, http.StatusNotFound, "NotFound")
		}},
		{section: secFieldValid, name: "Warn by default: one Warning per problem, unknown fields pruned", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"1"},"data":{"k":"2"},"spec":{"x":1},"foo":true}`
			r := e.req(t, "POST", cmPath(ns), body)
			r.expect(t, http.StatusCreated)
			want := []string{`duplicate field "data"`, `unknown field "foo"`, `unknown field "spec"`}
			if got := r.warnings(); !sameSet(got, want) {
				t.Errorf("warnings %q, want %q", got, want)
			}
			stored := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			if stored.has("spec") || stored.has("foo") || stored.str("data.k") != "2" {
				t.Errorf("stored %s, want unknown fields pruned and the last duplicate kept", truncate(mustJSON(stored), 300))
			}
		}},
		{section: secFieldValid, name: "Strict is 400 listing every problem (422 for patches)", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{},"data":{},"spec":{},"foo":true}`
			e.req(t, "POST", cmPath(ns)+"?fieldValidation=Strict", body).expectStatus(t, http.StatusBadRequest, "BadRequest",
				`duplicate field "data"`, `unknown field "foo"`, `unknown field "spec"`)
			e.req(t, "GET", cmPath(ns, "a"), nil).expectStatus(t, http.StatusNotFound, "NotFound")
			e.createCM(t, ns, "a")
			e.req(t, "PATCH", cmPath(ns, "a")+"?fieldValidation=Strict", `{"foo":1}`, "Content-Type: application/merge-patch+json").
				expectStatus(t, http.StatusUnprocessableEntity, "Invalid", `unknown field "foo"`)
		}},
		{section: secFieldValid, name: "Ignore is silent", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			r := e.req(t, "POST", cmPath(ns)+"?fieldValidation=Ignore", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"foo":1}`)
			r.expect(t, http.StatusCreated)
			if w := r.warnings(); len(w) != 0 {
				t.Errorf("warnings %q with Ignore", w)
			}
		}},
		{section: secFieldValid, name: "YAML bodies: duplicate and unknown fields", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\ndata:\n  k: \"1\"\ndata:\n  k: \"2\"\nfoo: 1\n"
			r := e.req(t, "POST", cmPath(ns), body, "Content-Type: application/yaml")
			r.expect(t, http.StatusCreated)
			want := []string{`line 8: key "data" already set in map`, `unknown field "foo"`}
			if got := r.warnings(); !sameSet(got, want) {
				t.Errorf("warnings %q, want %q", got, want)
			}
			e.req(t, "POST", cmPath(ns)+"?fieldValidation=Strict", strings.Replace(body, "name: a", "name: b", 1), "Content-Type: application/yaml").
				expectStatus(t, http.StatusBadRequest, "BadRequest", `key "data" already set in map`, `unknown field "foo"`)
		}},
		{section: secUpdates, name: "PUT without resourceVersion is unconditional, a stale one is 409", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			e.req(t, "PUT", cmPath(ns, "a"), cm("a", map[string]string{"k": "1"})).expect(t, http.StatusOK)
			stale := cm("a", map[string]string{"k": "2"})
			stale["metadata"].(map[string]any)["resourceVersion"] = rv(a)
			e.req(t, "PUT", cmPath(ns, "a"), stale).expectStatus(t, http.StatusConflict, "Conflict", "the object has been modified")
			if got := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK); got.str("data.k") != "1" {
				t.Errorf("data %v, want the unconditional update's", got.get("data"))
			}
		}},
		{section: secUpdates, name: "PUT creates a missing object only where the type allows it", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "PUT", cmPath(ns, "a"), cm("a", nil)).expectStatus(t, http.StatusNotFound, "NotFound")
			lease := map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "l"}}
			e.req(t, "PUT", "/apis/coordination.k8s.io/v1/namespaces/"+ns+"/leases/l", lease).expect(t, http.StatusCreated)
		}},
		{section: secUpdates, name: "PUT without resourceVersion is refused where the kind allows no unconditional update", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			path := "/apis/coordination.k8s.io/v1/namespaces/" + ns + "/leases/l"
			lease := map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": map[string]any{"name": "l"},
				"spec": map[string]any{"holderIdentity": "a"}}
			created := e.req(t, "PUT", path, lease).expect(t, http.StatusCreated)
			lease["spec"] = map[string]any{"holderIdentity": "b"}
			e.req(t, "PUT", path, lease).expectStatus(t, http.StatusUnprocessableEntity, "Invalid",
				`leases.coordination.k8s.io "l" is invalid: metadata.resourceVersion: Invalid value: 0: must be specified for an update`)
			if got := e.req(t, "GET", path, nil).expect(t, http.StatusOK); got.str("spec.holderIdentity") != "a" {
				t.Errorf("holder %q after the refused update, want a", got.str("spec.holderIdentity"))
			}
			// A patch that takes the resourceVersion out asks for the same.
			e.req(t, "PATCH", path, []any{map[string]any{"op": "remove", "path": "/metadata/resourceVersion"}}, "Content-Type: application/json-patch+json").
				expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "metadata.resourceVersion", "must be specified for an update")
			lease["metadata"].(map[string]any)["resourceVersion"] = rv(created)
			if got := e.req(t, "PUT", path, lease).expect(t, http.StatusOK); got.str("spec.holderIdentity") != "b" {
				t.Errorf("holder %q after the conditional update, want b", got.str("spec.holderIdentity"))
			}
		}},
		{section: secUpdates, name: "uid, creationTimestamp, deletionTimestamp and generation are not client-writable", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			meta := a["metadata"].(map[string]any)
			meta["creationTimestamp"] = "2001-01-01T00:00:00Z"
			meta["generation"] = 7
			got := e.req(t, "PUT", cmPath(ns, "a"), a).expect(t, http.StatusOK)
			if got.str("metadata.creationTimestamp") == "2001-01-01T00:00:00Z" || got.has("metadata.deletionTimestamp") || got.num("metadata.generation") == 7 {
				t.Errorf("client-sent server fields were stored: %v", got.get("metadata"))
			}
			// A deletionTimestamp is not ignored but refused: kube's update
			// keeps only one already set, and the metadata validation
			// finds the client's immutable.
			meta["resourceVersion"] = got.str("metadata.resourceVersion")
			meta["deletionTimestamp"] = "2001-01-01T00:00:00Z"
			e.req(t, "PUT", cmPath(ns, "a"), a).expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "metadata.deletionTimestamp", "field is immutable")
			// Another uid in a PUT's body is a precondition kube's store
			// checks before anything else: a conflict, not an invalid
			// field (registry/rest's defaultUpdatedObjectInfo).
			delete(meta, "deletionTimestamp")
			meta["uid"] = "00000000-0000-0000-0000-000000000000"
			delete(meta, "resourceVersion")
			e.req(t, "PUT", cmPath(ns, "a"), a).expectStatus(t, http.StatusConflict, "Conflict", "Precondition failed: UID in precondition: 00000000-0000-0000-0000-000000000000")
		}},
		{section: secUpdates, name: "the status subresource and the main resource each ignore the other's part", run: func(t *testing.T, e *conceptEnv) {
			name := newNamespace(t, e.tg)
			path := "/api/v1/namespaces/" + name
			ns := e.req(t, "GET", path, nil).expect(t, http.StatusOK)
			ns["metadata"].(map[string]any)["labels"] = map[string]any{"via": "main"}
			ns["status"] = map[string]any{"phase": "Active", "conditions": []any{map[string]any{"type": "Custom", "status": "True"}}}
			main := e.req(t, "PUT", path, ns).expect(t, http.StatusOK)
			if main.str("metadata.labels.via") != "main" || len(main.list("status.conditions")) != 0 {
				t.Errorf("main update: labels %v conditions %v, want the label and no conditions", main.get("metadata.labels"), main.get("status.conditions"))
			}
			// A Namespace's status strategy resets only the spec, as
			// kube-apiserver's: metadata written there is kept.
			main["metadata"].(map[string]any)["labels"] = map[string]any{"via": "status"}
			main["spec"] = map[string]any{"finalizers": []any{"example.com/never"}}
			main["status"] = ns["status"]
			st := e.req(t, "PUT", path+"/status", main).expect(t, http.StatusOK)
			if st.str("metadata.labels.via") != "status" || len(st.list("status.conditions")) != 1 ||
				!slices.Equal(st.list("spec.finalizers"), []any{"kubernetes"}) {
				t.Errorf("status update: labels %v conditions %v spec %v, want the new label, the condition and the old spec",
					st.get("metadata.labels"), st.get("status.conditions"), st.get("spec"))
			}
		}},
		{section: secDeprecation, name: "every request to a deprecated kind gets the Warning", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			const want = "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"
			path := "/api/v1/namespaces/" + ns + "/endpoints"
			ep := map[string]any{"apiVersion": "v1", "kind": "Endpoints", "metadata": map[string]any{"name": "svc"},
				"subsets": []any{map[string]any{"addresses": []any{map[string]any{"ip": "10.0.0.1"}}, "ports": []any{map[string]any{"port": 80}}}}}
			for _, r := range []*response{
				e.req(t, "POST", path, ep),
				e.req(t, "GET", path+"/svc", nil),
				e.req(t, "GET", path, nil),
				e.req(t, "GET", path+"/missing", nil),
			} {
				if got := r.warnings(); !slices.Equal(got, []string{want}) {
					t.Errorf("status %d: warnings %q, want [%q]", r.code, got, want)
				}
			}
			if r := e.req(t, "GET", cmPath(ns), nil); len(r.warnings()) != 0 {
				t.Errorf("a configmaps list got warnings %q", r.warnings())
			}
			// client-go hands the warning to its handler.
			var seen []string
			cfg := e.tg.restConfig()
			cfg.WarningHandler = warningFunc(func(msg string) { seen = append(seen, msg) })
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := cs.CoreV1().Endpoints(ns).Get(testContext(t, waitDeadline), "svc", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Subsets) != 1 || got.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
				t.Errorf("endpoints %+v, want one subset with the port defaulted to TCP", got.Subsets)
			}
			if !slices.Equal(seen, []string{want}) {
				t.Errorf("client-go warnings %q, want [%q]", seen, want)
			}
		}},
	}
}

type warningFunc func(string)

func (f warningFunc) HandleWarningHeader(code int, _ string, text string) {
	if code == 299 {
		f(text)
	}
}

var _ rest.WarningHandler = warningFunc(nil)

// sameSet reports whether a and b hold the same strings in any order.
func sameSet(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}
