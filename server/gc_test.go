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
