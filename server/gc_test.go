package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

type gcHarness struct {
	*refHarness
	t *testing.T
}

const cmPath = "/api/v1/namespaces/default/configmaps"

func (h gcHarness) create(name, body string) string {
	r := h.do("POST", cmPath, map[string]string{"Content-Type": "application/json"}, []byte(body))
	if r.Code != http.StatusCreated {
		h.t.Fatalf("create %s: %d %s", name, r.Code, r.Body)
	}
	var o struct{ Metadata struct{ UID string } }
	_ = json.Unmarshal(r.Body.Bytes(), &o)
	return o.Metadata.UID
}

// eventually polls cond with a deadline; the collector works asynchronously.
func (h gcHarness) eventually(what string, cond func() bool) {
	h.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			h.t.Fatalf("%s: not within 20s", what)
		}
		<-time.After(20 * time.Millisecond)
	}
}

func (h gcHarness) exists(name string) bool {
	return h.do("GET", cmPath+"/"+name, nil, nil).Code == http.StatusOK
}

func (h gcHarness) owned(name, owner, uid string, block bool) {
	h.create(name, fmt.Sprintf(`{"metadata":{"name":%q,"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"blockOwnerDeletion":%v}]}}`, name, owner, uid, block))
}

func TestGarbageCollection(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	del := func(name, policy string) *http.Response {
		r := h.do("DELETE", cmPath+"/"+name, map[string]string{"Content-Type": "application/json"},
			[]byte(fmt.Sprintf(`{"propagationPolicy":%q}`, policy)))
		return r.Result()
	}

	t.Run("background", func(t *testing.T) {
		uid := h.create("owner-bg", `{"metadata":{"name":"owner-bg"}}`)
		h.owned("dep-bg", "owner-bg", uid, false)
		if r := del("owner-bg", "Background"); r.StatusCode != http.StatusOK {
			t.Fatalf("delete: %d", r.StatusCode)
		}
		if h.exists("owner-bg") {
			t.Fatal("background delete kept the owner")
		}
		h.eventually("dependent deleted after its owner", func() bool { return !h.exists("dep-bg") })
	})

	t.Run("orphan", func(t *testing.T) {
		uid := h.create("owner-or", `{"metadata":{"name":"owner-or"}}`)
		h.owned("dep-or", "owner-or", uid, true)
		r := h.do("DELETE", cmPath+"/owner-or?propagationPolicy=Orphan", nil, nil)
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"orphan"`) {
			t.Fatalf("orphan delete: %d %s; want 200 with the orphan finalizer", r.Code, r.Body)
		}
		h.eventually("owner gone after orphaning", func() bool { return !h.exists("owner-or") })
		dep := h.do("GET", cmPath+"/dep-or", nil, nil)
		if dep.Code != http.StatusOK || strings.Contains(dep.Body.String(), "ownerReferences") {
			t.Fatalf("orphaned dependent: %d %s; want it kept without ownerReferences", dep.Code, dep.Body)
		}
	})

	t.Run("foreground", func(t *testing.T) {
		uid := h.create("owner-fg", `{"metadata":{"name":"owner-fg"}}`)
		h.create("dep-fg", fmt.Sprintf(`{"metadata":{"name":"dep-fg","finalizers":["example.com/hold"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"owner-fg","uid":%q,"blockOwnerDeletion":true}]}}`, uid))
		r := h.do("DELETE", cmPath+"/owner-fg", map[string]string{"Content-Type": "application/json"}, []byte(`{"propagationPolicy":"Foreground"}`))
		if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "foregroundDeletion") {
			t.Fatalf("foreground delete: %d %s; want 200 with the foregroundDeletion finalizer", r.Code, r.Body)
		}
		h.eventually("dependent marked for deletion", func() bool {
			return strings.Contains(h.do("GET", cmPath+"/dep-fg", nil, nil).Body.String(), "deletionTimestamp")
		})
		if !h.exists("owner-fg") {
			t.Fatal("owner went away while a blocking dependent still exists")
		}
		if r := h.do("PATCH", cmPath+"/dep-fg", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
			t.Fatalf("release dependent: %d %s", r.Code, r.Body)
		}
		h.eventually("owner gone after its blocking dependent", func() bool { return !h.exists("owner-fg") })
	})

	t.Run("dangling owners", func(t *testing.T) {
		// Every owner gone: the dependent is garbage.
		h.owned("dep-dangling", "never-existed", "00000000-0000-0000-0000-00000000dead", false)
		h.eventually("dependent of a missing owner deleted", func() bool { return !h.exists("dep-dangling") })

		// One owner left: only the dangling reference goes.
		uid := h.create("owner-live", `{"metadata":{"name":"owner-live"}}`)
		h.create("dep-mixed", fmt.Sprintf(`{"metadata":{"name":"dep-mixed","ownerReferences":[
			{"apiVersion":"v1","kind":"ConfigMap","name":"owner-live","uid":%q},
			{"apiVersion":"v1","kind":"ConfigMap","name":"gone","uid":"00000000-0000-0000-0000-00000000beef"}]}}`, uid))
		h.eventually("dangling reference dropped", func() bool {
			body := h.do("GET", cmPath+"/dep-mixed", nil, nil).Body.String()
			return strings.Contains(body, "owner-live") && !strings.Contains(body, "beef")
		})

		// An owner of a kind Tabula does not serve cannot be checked: kept.
		h.create("dep-foreign", `{"metadata":{"name":"dep-foreign","ownerReferences":[{"apiVersion":"example.com/v1","kind":"Widget","name":"web","uid":"00000000-0000-0000-0000-0000000000a1"}]}}`)
		// A later dangling object is collected after it; by then the
		// collector has looked at dep-foreign (one queue, in order).
		h.owned("dep-marker", "never-existed", "00000000-0000-0000-0000-00000000dea1", false)
		h.eventually("marker collected", func() bool { return !h.exists("dep-marker") })
		if !h.exists("dep-foreign") {
			t.Fatal("a dependent of an unserved kind's object was deleted")
		}
	})
}

// TestOrphanByDefault: a delete of a v1 ReplicationController or Job
// that names no propagation orphans their pods, as kube-apiserver keeps
// for those two kinds (the e2e garbage collector spec "should orphan pods
// created by rc if deleteOptions.OrphanDependents is nil"); a Job's such
// delete warns, one with a policy does not; other kinds delete in the
// background.
func TestOrphanByDefault(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	const ns = "/api/v1/namespaces/default"
	ct := map[string]string{"Content-Type": "application/json"}
	create := func(path, body string) string {
		t.Helper()
		r := h.do("POST", path, ct, []byte(body))
		if r.Code != http.StatusCreated {
			t.Fatalf("POST %s: %d %s", path, r.Code, r.Body)
		}
		var o struct{ Metadata struct{ UID string } }
		_ = json.Unmarshal(r.Body.Bytes(), &o)
		return o.Metadata.UID
	}
	const template = `"template":{"metadata":{"labels":{"app":"x"}},"spec":{"restartPolicy":"%s","containers":[{"name":"c","image":"busybox"}]}}`
	pod := func(name, kind, apiVersion, owner, uid string) {
		create(ns+"/pods", fmt.Sprintf(`{"metadata":{"name":%q,"labels":{"app":"x"},"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true}]},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
			name, apiVersion, kind, owner, uid))
	}
	podOwners := func(name string) (int, string) {
		r := h.do("GET", ns+"/pods/"+name, nil, nil)
		var o struct {
			Metadata struct{ OwnerReferences []interface{} }
		}
		_ = json.Unmarshal(r.Body.Bytes(), &o)
		return r.Code, fmt.Sprint(len(o.Metadata.OwnerReferences))
	}

	rcUID := create(ns+"/replicationcontrollers", `{"metadata":{"name":"rc"},"spec":{"replicas":1,"selector":{"app":"x"},`+fmt.Sprintf(template, "Always")+`}}`)
	pod("rc-pod", "ReplicationController", "v1", "rc", rcUID)
	r := h.do("DELETE", ns+"/replicationcontrollers/rc", nil, nil)
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"orphan"`) || r.Header().Get("Warning") != "" {
		t.Fatalf("delete rc without options: %d %s %q; want 200 with the orphan finalizer, no warning", r.Code, r.Body, r.Header().Get("Warning"))
	}
	h.eventually("rc gone", func() bool { return h.do("GET", ns+"/replicationcontrollers/rc", nil, nil).Code == http.StatusNotFound })
	h.eventually("rc's pod orphaned", func() bool { code, owners := podOwners("rc-pod"); return code == http.StatusOK && owners == "0" })

	const jobs = "/apis/batch/v1/namespaces/default/jobs"
	jobUID := create(jobs, `{"metadata":{"name":"job"},"spec":{`+fmt.Sprintf(template, "Never")+`}}`)
	pod("job-pod", "Job", "batch/v1", "job", jobUID)
	r = h.do("DELETE", jobs+"/job", nil, nil)
	if w := r.Header().Get("Warning"); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"orphan"`) ||
		w != `299 - "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning"` {
		t.Fatalf("delete job without options: %d %s %q; want 200, the orphan finalizer and kube's warning", r.Code, r.Body, w)
	}
	h.eventually("job's pod orphaned", func() bool { code, owners := podOwners("job-pod"); return code == http.StatusOK && owners == "0" })

	jobUID = create(jobs, `{"metadata":{"name":"job2"},"spec":{`+fmt.Sprintf(template, "Never")+`}}`)
	pod("job2-pod", "Job", "batch/v1", "job2", jobUID)
	r = h.do("DELETE", jobs+"/job2?propagationPolicy=Background", nil, nil)
	if r.Code != http.StatusOK || strings.Contains(r.Body.String(), `"orphan"`) || r.Header().Get("Warning") != "" {
		t.Fatalf("delete job in the background: %d %s %q; want 200, no orphan finalizer, no warning", r.Code, r.Body, r.Header().Get("Warning"))
	}
	h.eventually("job2's pod deleted", func() bool { code, _ := podOwners("job2-pod"); return code == http.StatusNotFound })

	// A deletecollection of Jobs without a policy warns even when it
	// matches none, as kube's Job storage does.
	r = h.do("DELETE", jobs+"?labelSelector=none%3Dmatch", nil, nil)
	if w := r.Header().Get("Warning"); r.Code != http.StatusOK || !strings.Contains(w, "child pods are preserved by default when jobs are deleted") {
		t.Errorf("deletecollection of no jobs: %d %q; want kube's warning", r.Code, w)
	}
}

// TestGarbageCollectionCycle: three objects owning each other in a circle
// with blockOwnerDeletion, one deleted in the foreground: the collector
// unblocks the references that close the circle, as kube's does, and all
// three go (the e2e spec "should not be blocked by dependency circle").
func TestGarbageCollectionCycle(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	uids := map[string]string{}
	for _, name := range []string{"c1", "c2", "c3"} {
		uids[name] = h.create(name, fmt.Sprintf(`{"metadata":{"name":%q}}`, name))
	}
	for dep, owner := range map[string]string{"c1": "c3", "c2": "c1", "c3": "c2"} {
		patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}]}}`, owner, uids[owner])
		if r := h.do("PATCH", cmPath+"/"+dep, map[string]string{"Content-Type": "application/strategic-merge-patch+json"}, []byte(patch)); r.Code != http.StatusOK {
			t.Fatalf("patch %s: %d %s", dep, r.Code, r.Body)
		}
	}
	if r := h.do("DELETE", cmPath+"/c1", map[string]string{"Content-Type": "application/json"}, []byte(`{"propagationPolicy":"Foreground"}`)); r.Code != http.StatusOK {
		t.Fatalf("delete c1: %d %s", r.Code, r.Body)
	}
	h.eventually("the circle deleted", func() bool { return !h.exists("c1") && !h.exists("c2") && !h.exists("c3") })
}

// TestGarbageCollectionJudgesOwnersAsKube: the collector sorts a
// dependent's owners as kube-controller-manager's does
// (attemptToDeleteItem): any live owner keeps it, even one being deleted
// under another finalizer; an owner it cannot look up keeps it; a
// cluster-scoped object naming a namespaced owner is left alone; a
// dependent that goes is deleted as its own finalizers say, and one with
// no dependents of its own is not made to wait for them.
func TestGarbageCollectionJudgesOwnersAsKube(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	ref := func(name, uid string) string {
		return fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","name":%q,"uid":%q}`, name, uid)
	}
	get := func(path string) (int, map[string]any) {
		r := h.do("GET", path, nil, nil)
		var o struct{ Metadata map[string]any }
		_ = json.Unmarshal(r.Body.Bytes(), &o)
		return r.Code, o.Metadata
	}
	// barrier waits for the collector to reach a marker queued now: it
	// works its queue in order, so what was queued before is done.
	marks := 0
	barrier := func() {
		t.Helper()
		marks++
		name := fmt.Sprintf("marker-%d", marks)
		h.owned(name, "never-existed", fmt.Sprintf("00000000-0000-0000-0000-%012d", marks), false)
		h.eventually(name+" collected", func() bool { return !h.exists(name) })
	}

	t.Run("cluster-scoped dependent of a namespaced owner", func(t *testing.T) {
		uid := h.create("ns-owner", `{"metadata":{"name":"ns-owner"}}`)
		const roles = "/apis/rbac.authorization.k8s.io/v1/clusterroles"
		if r := h.do("POST", roles, ct, []byte(`{"metadata":{"name":"owned-role","ownerReferences":[`+ref("ns-owner", uid)+`]}}`)); r.Code != http.StatusCreated {
			t.Fatalf("create: %d %s", r.Code, r.Body)
		}
		barrier()
		if code, _ := get(roles + "/owned-role"); code != http.StatusOK {
			t.Fatalf("cluster-scoped dependent of a namespaced owner: %d; want it kept", code)
		}
	})

	t.Run("owner deleted under another finalizer is solid", func(t *testing.T) {
		p := h.create("mo-p", `{"metadata":{"name":"mo-p"}}`)
		q := h.create("mo-q", `{"metadata":{"name":"mo-q","finalizers":["example.com/hold"]}}`)
		h.create("mo-d", `{"metadata":{"name":"mo-d","ownerReferences":[`+ref("mo-p", p)+`,`+ref("mo-q", q)+`]}}`)
		if r := h.do("DELETE", cmPath+"/mo-q", nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete mo-q: %d %s", r.Code, r.Body)
		}
		if r := h.do("DELETE", cmPath+"/mo-p", nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete mo-p: %d %s", r.Code, r.Body)
		}
		h.eventually("reference to the deleted owner dropped", func() bool {
			code, m := get(cmPath + "/mo-d")
			refs, _ := m["ownerReferences"].([]any)
			return code == http.StatusOK && len(refs) == 1 && strings.Contains(fmt.Sprint(refs), q)
		})
	})

	t.Run("owner of an unserved kind keeps its dependent", func(t *testing.T) {
		p := h.create("uk-p", `{"metadata":{"name":"uk-p"}}`)
		h.create("uk-d", `{"metadata":{"name":"uk-d","ownerReferences":[`+ref("uk-p", p)+`,{"apiVersion":"example.com/v1","kind":"Thing","name":"t","uid":"00000000-0000-0000-0000-0000000000b2"}]}}`)
		if r := h.do("DELETE", cmPath+"/uk-p", nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete uk-p: %d %s", r.Code, r.Body)
		}
		barrier()
		if !h.exists("uk-d") {
			t.Fatal("a dependent with an owner that cannot be looked up was deleted")
		}
	})

	t.Run("a dependent's orphan finalizer is honoured", func(t *testing.T) {
		a := h.create("ch-a", `{"metadata":{"name":"ch-a"}}`)
		b := h.create("ch-b", `{"metadata":{"name":"ch-b","finalizers":["orphan"],"ownerReferences":[`+ref("ch-a", a)+`]}}`)
		h.create("ch-c", `{"metadata":{"name":"ch-c","ownerReferences":[`+ref("ch-b", b)+`]}}`)
		if r := h.do("DELETE", cmPath+"/ch-a", nil, nil); r.Code != http.StatusOK {
			t.Fatalf("delete ch-a: %d %s", r.Code, r.Body)
		}
		h.eventually("ch-b gone", func() bool { return !h.exists("ch-b") })
		h.eventually("ch-c orphaned", func() bool {
			code, m := get(cmPath + "/ch-c")
			return code == http.StatusOK && m["ownerReferences"] == nil
		})
	})

	t.Run("foreground owner's dependent without dependents goes in the background", func(t *testing.T) {
		uid := h.create("fo-owner", `{"metadata":{"name":"fo-owner"}}`)
		h.create("fo-dep", `{"metadata":{"name":"fo-dep","finalizers":["example.com/hold"],"ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"fo-owner","uid":"`+uid+`","blockOwnerDeletion":true}]}}`)
		from := h.objectRV(cmPath + "/fo-dep")
		if r := h.do("DELETE", cmPath+"/fo-owner", ct, []byte(`{"propagationPolicy":"Foreground"}`)); r.Code != http.StatusOK {
			t.Fatalf("delete: %d %s", r.Code, r.Body)
		}
		var m map[string]any
		h.eventually("dependent being deleted", func() bool {
			_, m = get(cmPath + "/fo-dep")
			return m["deletionTimestamp"] != nil
		})
		if f := fmt.Sprint(m["finalizers"]); f != "[example.com/hold]" {
			t.Fatalf("dependent's finalizers: %s; want only its own (no foregroundDeletion)", f)
		}
		if r := h.do("PATCH", cmPath+"/fo-dep", map[string]string{"Content-Type": "application/merge-patch+json"}, []byte(`{"metadata":{"finalizers":null}}`)); r.Code != http.StatusOK {
			t.Fatalf("release: %d %s", r.Code, r.Body)
		}
		h.eventually("owner gone after its dependent", func() bool { return !h.exists("fo-owner") })
		// Its watchers never saw it wait for dependents it does not have.
		events := h.do("GET", cmPath+"?watch=1&timeoutSeconds=1&fieldSelector=metadata.name%3Dfo-dep&resourceVersion="+from, nil, nil).Body.String()
		if !strings.Contains(events, `"DELETED"`) || strings.Contains(events, "foregroundDeletion") {
			t.Fatalf("dependent's events: %s; want none with foregroundDeletion, ending DELETED", events)
		}
	})
}
