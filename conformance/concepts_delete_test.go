package conformance

import (
	"fmt"
	"net/http"
	"testing"
)

// Section "Resource deletion": finalizers, delete options, garbage
// collection of ownerReferences, deletecollection and namespaces.

const (
	secDeletion = "Resource deletion"
	secGC       = "Garbage collection"
)

// ownedCM is a ConfigMap body owned by owner (a stored ConfigMap).
func ownedCM(name string, owner obj, block bool) map[string]any {
	c := cm(name, nil)
	c["metadata"].(map[string]any)["ownerReferences"] = []any{map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap", "name": owner.str("metadata.name"),
		"uid": owner.str("metadata.uid"), "blockOwnerDeletion": block,
	}}
	return c
}

// waitGone waits until GET path answers 404.
func (e *conceptEnv) waitGone(t *testing.T, path string) {
	t.Helper()
	waitFor(t, path+" to be gone", waitDeadline, func() (bool, string) {
		r := e.req(t, "GET", path, nil)
		return r.code == http.StatusNotFound, fmt.Sprintf("status %d", r.code)
	})
}

func finalizers(o obj) []any { return o.list("metadata.finalizers") }

func deletionChecks() []conceptCheck {
	return []conceptCheck{
		{section: secDeletion, name: "finalizers keep the object with deletionTimestamp until removed", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			c := cm("a", nil)
			c["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
			e.req(t, "POST", cmPath(ns), c).expect(t, http.StatusCreated)
			del := e.req(t, "DELETE", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			if del.str("kind") != "ConfigMap" || !del.has("metadata.deletionTimestamp") || del.get("metadata.deletionGracePeriodSeconds") != float64(0) {
				t.Errorf("DELETE answered %v, want the ConfigMap with deletionTimestamp and deletionGracePeriodSeconds 0", del.get("metadata"))
			}
			if got := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK); !got.has("metadata.deletionTimestamp") {
				t.Errorf("pending object has no deletionTimestamp")
			}
			e.req(t, "PATCH", cmPath(ns, "a"), `{"metadata":{"finalizers":["example.com/hold","example.com/more"]}}`, "Content-Type: application/merge-patch+json").
				expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "no new finalizers can be added if the object is being deleted")
			e.req(t, "PATCH", cmPath(ns, "a"), `{"metadata":{"finalizers":null}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
			e.req(t, "GET", cmPath(ns, "a"), nil).expectStatus(t, http.StatusNotFound, "NotFound")
		}},
		{section: secDeletion, name: "preconditions on uid and resourceVersion", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			e.req(t, "DELETE", cmPath(ns, "a"), map[string]any{"preconditions": map[string]any{"uid": "00000000-0000-0000-0000-000000000000"}}).
				expectStatus(t, http.StatusConflict, "Conflict", "the UID in the precondition")
			e.req(t, "DELETE", cmPath(ns, "a"), map[string]any{"preconditions": map[string]any{"resourceVersion": "1"}}).
				expectStatus(t, http.StatusConflict, "Conflict", "the ResourceVersion in the precondition")
			e.req(t, "DELETE", cmPath(ns, "a"), map[string]any{"preconditions": map[string]any{"uid": a.str("metadata.uid"), "resourceVersion": rv(a)}}).
				expect(t, http.StatusOK)
			e.req(t, "GET", cmPath(ns, "a"), nil).expectStatus(t, http.StatusNotFound, "NotFound")
		}},
		{section: secDeletion, name: "DELETE answers a Status or the object as kube-apiserver does", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			st := e.req(t, "DELETE", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			if st.str("kind") != "Status" || st.str("status") != "Success" || st.str("details.name") != "a" ||
				st.str("details.kind") != "configmaps" || st.str("details.uid") != a.str("metadata.uid") {
				t.Errorf("configmap DELETE answered %s, want Status Success with details", truncate(mustJSON(st), 300))
			}
			sa := map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot"}}
			saPath := "/api/v1/namespaces/" + ns + "/serviceaccounts"
			e.req(t, "POST", saPath, sa).expect(t, http.StatusCreated)
			if got := e.req(t, "DELETE", saPath+"/robot", nil).expect(t, http.StatusOK); got.str("kind") != "ServiceAccount" {
				t.Errorf("serviceaccount DELETE answered a %s, want the ServiceAccount", got.str("kind"))
			}
		}},
		{section: secDeletion, name: "propagationPolicy and orphanDependents validation", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			e.req(t, "DELETE", cmPath(ns, "a")+"?propagationPolicy=Bogus", nil).expectStatus(t, http.StatusUnprocessableEntity, "Invalid", "Unsupported value")
			e.req(t, "DELETE", cmPath(ns, "a")+"?propagationPolicy=Foreground&orphanDependents=true", nil).expectStatus(t, http.StatusUnprocessableEntity, "Invalid")
			e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
		}},
		{section: secDeletion, name: "deletecollection with label and field selectors", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a", "app=x")
			e.createCM(t, ns, "b", "app=x")
			e.createCM(t, ns, "c", "app=y")
			e.req(t, "DELETE", cmPath(ns)+"?labelSelector=app%3Dx&fieldSelector=metadata.name%21%3Db", nil).expect(t, http.StatusOK)
			left := names(e.req(t, "GET", cmPath(ns), nil).expect(t, http.StatusOK).items())
			if fmt.Sprint(left) != "[b c kube-root-ca.crt]" {
				t.Errorf("left %v, want [b c kube-root-ca.crt]", left)
			}
		}},
		{section: secGC, name: "Background: dependents deleted after the owner", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			owner := e.createCM(t, ns, "owner")
			e.req(t, "POST", cmPath(ns), ownedCM("dep", owner, false)).expect(t, http.StatusCreated)
			st := e.req(t, "DELETE", cmPath(ns, "owner")+"?propagationPolicy=Background", nil).expect(t, http.StatusOK)
			if st.str("kind") != "Status" {
				t.Errorf("Background DELETE answered a %s, want Status", st.str("kind"))
			}
			e.waitGone(t, cmPath(ns, "owner"))
			e.waitGone(t, cmPath(ns, "dep"))
		}},
		{section: secGC, name: "Foreground: the owner waits for blocking dependents", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			owner := e.createCM(t, ns, "owner")
			dep := ownedCM("dep", owner, true)
			dep["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
			e.req(t, "POST", cmPath(ns), dep).expect(t, http.StatusCreated)
			got := e.req(t, "DELETE", cmPath(ns, "owner")+"?propagationPolicy=Foreground", nil).expect(t, http.StatusOK)
			if fmt.Sprint(finalizers(got)) != "[foregroundDeletion]" || !got.has("metadata.deletionTimestamp") {
				t.Errorf("Foreground DELETE answered %v, want the owner with the foregroundDeletion finalizer", got.get("metadata"))
			}
			waitFor(t, "the dependent to be deleting", waitDeadline, func() (bool, string) {
				d := e.req(t, "GET", cmPath(ns, "dep"), nil).expect(t, http.StatusOK)
				return d.has("metadata.deletionTimestamp"), "no deletionTimestamp"
			})
			if o := e.req(t, "GET", cmPath(ns, "owner"), nil).expect(t, http.StatusOK); fmt.Sprint(finalizers(o)) != "[foregroundDeletion]" {
				t.Errorf("owner while the dependent is held: finalizers %v", finalizers(o))
			}
			e.req(t, "PATCH", cmPath(ns, "dep"), `{"metadata":{"finalizers":null}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
			e.waitGone(t, cmPath(ns, "owner"))
		}},
		{section: secGC, name: "Orphan and orphanDependents: dependents kept, ownerReferences removed", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			for _, q := range []string{"propagationPolicy=Orphan", "orphanDependents=true"} {
				owner := e.createCM(t, ns, "owner")
				e.req(t, "POST", cmPath(ns), ownedCM("dep", owner, true)).expect(t, http.StatusCreated)
				got := e.req(t, "DELETE", cmPath(ns, "owner")+"?"+q, nil).expect(t, http.StatusOK)
				if fmt.Sprint(finalizers(got)) != "[orphan]" {
					t.Errorf("%s: DELETE answered finalizers %v, want [orphan]", q, finalizers(got))
				}
				e.waitGone(t, cmPath(ns, "owner"))
				if d := e.req(t, "GET", cmPath(ns, "dep"), nil).expect(t, http.StatusOK); d.has("metadata.ownerReferences") {
					t.Errorf("%s: dependent still has ownerReferences %v", q, d.get("metadata.ownerReferences"))
				}
				e.req(t, "DELETE", cmPath(ns, "dep"), nil).expect(t, http.StatusOK)
			}
		}},
		{section: secDeletion, name: "namespace deletion: Terminating, conditions, then gone", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			c := cm("held", nil)
			c["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
			e.req(t, "POST", cmPath(ns), c).expect(t, http.StatusCreated)
			e.createCM(t, ns, "plain")
			nsPath := "/api/v1/namespaces/" + ns
			del := e.req(t, "DELETE", nsPath, nil).expect(t, http.StatusOK)
			if del.str("kind") != "Namespace" || del.str("status.phase") != "Terminating" || fmt.Sprint(del.list("spec.finalizers")) != "[kubernetes]" {
				t.Errorf("namespace DELETE answered %s phase %s spec.finalizers %v", del.str("kind"), del.str("status.phase"), del.get("spec.finalizers"))
			}
			e.req(t, "POST", cmPath(ns), cm("new", nil)).expectStatus(t, http.StatusForbidden, "Forbidden", "being terminated")
			e.waitGone(t, cmPath(ns, "plain"))
			waitFor(t, "a condition naming the finalizer that holds content", waitDeadline, func() (bool, string) {
				n := e.req(t, "GET", nsPath, nil).expect(t, http.StatusOK)
				for _, c := range n.list("status.conditions") {
					cond := obj(c.(map[string]any))
					if cond.str("type") == "NamespaceFinalizersRemaining" && cond.str("status") == "True" {
						return true, ""
					}
				}
				return false, fmt.Sprint(n.get("status.conditions"))
			})
			e.req(t, "DELETE", nsPath, nil).expect(t, http.StatusOK) // again: 200, not 409
			e.req(t, "PATCH", cmPath(ns, "held"), `{"metadata":{"finalizers":null}}`, "Content-Type: application/merge-patch+json").expect(t, http.StatusOK)
			e.waitGone(t, nsPath)
		}},
	}
}
