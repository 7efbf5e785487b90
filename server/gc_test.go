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
