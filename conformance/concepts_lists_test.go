package conformance

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Sections "Resource versions" (semantics for get and list) and
// "Retrieving large results sets in chunks".

const (
	secRV     = "Resource versions"
	secChunks = "Retrieving large results sets in chunks"
)

func resourceVersionChecks() []conceptCheck {
	return []conceptCheck{
		{section: secRV, name: "get unset is the most recent", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			c := e.createCM(t, ns, "a")
			c["data"] = map[string]any{"k": "new"}
			updated := e.req(t, "PUT", cmPath(ns, "a"), c).expect(t, http.StatusOK)
			got := e.req(t, "GET", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			if rv(got) != rv(updated) || got.str("data.k") != "new" {
				t.Errorf("get returned rv %s data %v, want the update (rv %s)", rv(got), got.get("data"), rv(updated))
			}
		}},
		{section: secRV, name: "get 0 is any, a value is not older than", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			c := e.createCM(t, ns, "a")
			for _, q := range []string{"0", rv(c)} {
				got := e.req(t, "GET", cmPath(ns, "a")+"?resourceVersion="+q, nil).expect(t, http.StatusOK)
				if revision(t, rv(got)) < revision(t, rv(c)) {
					t.Errorf("resourceVersion=%s: got rv %s, older than the object's %s", q, rv(got), rv(c))
				}
			}
		}},
		{section: secRV, name: "get and list of a future revision wait, then 504", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			c := e.createCM(t, ns, "a")
			future := strconv.FormatInt(revision(t, rv(c))+100000, 10)
			for _, path := range []string{
				cmPath(ns, "a") + "?resourceVersion=" + future,
				cmPath(ns) + "?resourceVersion=" + future,
				cmPath(ns) + "?resourceVersionMatch=Exact&resourceVersion=" + future,
			} {
				r := e.req(t, "GET", path, nil)
				st := r.expectStatus(t, http.StatusGatewayTimeout, "Timeout", "Too large resource version")
				if r.hdr.Get("Retry-After") != "1" {
					t.Errorf("%s: Retry-After %q, want 1", path, r.hdr.Get("Retry-After"))
				}
				causes := st.list("details.causes")
				if len(causes) == 0 || obj(causes[0].(map[string]any)).str("reason") != "ResourceVersionTooLarge" {
					t.Errorf("%s: causes %v, want reason ResourceVersionTooLarge", path, causes)
				}
			}
		}},
		{section: secRV, name: "list resourceVersion × resourceVersionMatch × limit table", run: testListRVTable},
		{section: secRV, name: "list Exact at a compacted revision is 410", ownServer: true, run: func(t *testing.T, e *conceptEnv) {
			own := e.ownServer(t)
			ns := newNamespace(t, own.tg)
			c := own.createCM(t, ns, "a")
			old := rv(c)
			own.createCM(t, ns, "b") // history moves on past old
			path := cmPath(ns) + "?resourceVersionMatch=Exact&resourceVersion=" + old
			waitFor(t, "revision "+old+" to be compacted", waitDeadline, func() (bool, string) {
				r := own.req(t, "GET", path, nil)
				return r.code == http.StatusGone, fmt.Sprintf("status %d", r.code)
			})
			own.req(t, "GET", path, nil).expectStatus(t, http.StatusGone, "Expired", "too old")
		}},
	}
}

// testListRVTable checks each cell of the seed's table (as kube-apiserver
// v1.35 answers it, see testdata/reference/RECORDING.md): RV_A is a list
// revision taken before the last of 7 ConfigMaps was created.
func testListRVTable(t *testing.T, e *conceptEnv) {
	ns := e.namespace(t)
	for i := 0; i < 5; i++ {
		e.createCM(t, ns, fmt.Sprintf("cm-%02d", i))
	}
	rvA := rv(e.req(t, "GET", cmPath(ns), nil).expect(t, http.StatusOK))
	e.createCM(t, ns, "cm-06")
	first := e.req(t, "GET", cmPath(ns)+"?limit=2", nil).expect(t, http.StatusOK)
	token := first.str("metadata.continue")
	if token == "" {
		t.Fatal("limit=2 over 7 items returned no continue token")
	}

	// want: code, items, and how the list RV relates to RV_A ("=" or ">"),
	// and whether a continue token comes back.
	type want struct {
		code     int
		items    int
		relation string
		more     bool
	}
	ok := func(items int, rel string, more bool) want { return want{http.StatusOK, items, rel, more} }
	invalid := want{code: http.StatusUnprocessableEntity}
	bad := want{code: http.StatusBadRequest}
	rows := []struct {
		rv, match          string
		noLimit, lim, cont want
	}{
		{"", "", ok(7, ">", false), ok(2, ">", true), ok(2, ">", true)},
		{"", "Exact", invalid, invalid, invalid},
		{"", "NotOlderThan", invalid, invalid, invalid},
		{"0", "", ok(7, ">", false), ok(7, ">", false), ok(5, ">", false)},
		{"0", "Exact", invalid, invalid, invalid},
		{"0", "NotOlderThan", ok(7, ">", false), ok(7, ">", false), invalid},
		{rvA, "", ok(7, ">", false), ok(2, "=", true), bad},
		{rvA, "Exact", ok(6, "=", false), ok(2, "=", true), invalid},
		{rvA, "NotOlderThan", ok(7, ">", false), ok(2, ">", true), invalid},
	}
	a := revision(t, rvA)
	for _, row := range rows {
		for _, col := range []struct {
			name string
			q    url.Values
			want want
		}{
			{"no limit", url.Values{}, row.noLimit},
			{"limit=2", url.Values{"limit": {"2"}}, row.lim},
			{"limit=2+continue", url.Values{"limit": {"2"}, "continue": {token}}, row.cont},
		} {
			q := col.q
			if row.rv != "" {
				q.Set("resourceVersion", row.rv)
			}
			if row.match != "" {
				q.Set("resourceVersionMatch", row.match)
			}
			label := fmt.Sprintf("rv=%q match=%q %s", cond(row.rv == rvA, "RV_A", row.rv), row.match, col.name)
			r := e.req(t, "GET", cmPath(ns)+"?"+q.Encode(), nil)
			if r.code != col.want.code {
				t.Errorf("%s: status %d, want %d: %s", label, r.code, col.want.code, truncate(r.body, 300))
				continue
			}
			if r.code != http.StatusOK {
				reason := map[int]string{http.StatusUnprocessableEntity: "Invalid", http.StatusBadRequest: "BadRequest"}[r.code]
				if got := r.obj(t).str("reason"); got != reason {
					t.Errorf("%s: reason %q, want %q", label, got, reason)
				}
				continue
			}
			l := r.obj(t)
			if n := len(l.items()); n != col.want.items {
				t.Errorf("%s: %d items %v, want %d", label, n, names(l.items()), col.want.items)
			}
			listRV := revision(t, rv(l))
			if rel := cond(listRV == a, "=", cond(listRV > a, ">", "<")); rel != col.want.relation {
				t.Errorf("%s: list rv %d %s RV_A %d, want %s", label, listRV, rel, a, col.want.relation)
			}
			if more := l.str("metadata.continue") != ""; more != col.want.more {
				t.Errorf("%s: continue present %v, want %v", label, more, col.want.more)
			}
		}
	}
}

func chunkingChecks() []conceptCheck {
	return []conceptCheck{
		{section: secChunks, name: "pages share the first page's resourceVersion", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			for i := 0; i < 5; i++ {
				e.createCM(t, ns, fmt.Sprintf("cm-%02d", i))
			}
			page := e.req(t, "GET", cmPath(ns)+"?limit=2", nil).expect(t, http.StatusOK)
			listRV := rv(page)
			seen := names(page.items())
			e.createCM(t, ns, "cm-99") // after the snapshot: must not show up
			remaining := []int64{page.num("metadata.remainingItemCount")}
			for page.str("metadata.continue") != "" {
				page = e.req(t, "GET", cmPath(ns)+"?limit=2&continue="+url.QueryEscape(page.str("metadata.continue")), nil).expect(t, http.StatusOK)
				if rv(page) != listRV {
					t.Errorf("page rv %s, want the first page's %s", rv(page), listRV)
				}
				seen = append(seen, names(page.items())...)
				if page.has("metadata.remainingItemCount") {
					remaining = append(remaining, page.num("metadata.remainingItemCount"))
				} else if page.str("metadata.continue") != "" {
					t.Errorf("a page with more to come has no remainingItemCount")
				}
			}
			// 6 objects: kube-root-ca.crt and cm-00..04.
			if len(seen) != 6 || slices.Contains(seen, "cm-99") {
				t.Errorf("pages returned %v, want the 6 objects of the snapshot", seen)
			}
			if !slices.Equal(remaining, []int64{4, 2}) {
				t.Errorf("remainingItemCount per page %v, want [4 2] and none on the last page", remaining)
			}
		}},
		{section: secChunks, name: "no remainingItemCount with selectors", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			for i := 0; i < 4; i++ {
				e.createCM(t, ns, fmt.Sprintf("cm-%02d", i), "app=x")
			}
			for _, q := range []string{"labelSelector=app%3Dx", "fieldSelector=metadata.name%21%3Dnone"} {
				page := e.req(t, "GET", cmPath(ns)+"?limit=2&"+q, nil).expect(t, http.StatusOK)
				if page.str("metadata.continue") == "" {
					t.Errorf("%s: no continue token", q)
				}
				if page.has("metadata.remainingItemCount") {
					t.Errorf("%s: remainingItemCount %d sent with a selector", q, page.num("metadata.remainingItemCount"))
				}
			}
		}},
		{section: secChunks, name: "forged or corrupt continue token is 400", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			for _, tok := range []string{"not-base64!", "eyJ2IjoibWV0YS5rOHMuaW8vdjAiLCJydiI6MSwic3RhcnQiOiIvYSJ9"} {
				e.req(t, "GET", cmPath(ns)+"?limit=2&continue="+url.QueryEscape(tok), nil).expectStatus(t, http.StatusBadRequest, "BadRequest")
			}
		}},
		{section: secChunks, name: "expired continue token is 410 with a fresh token", ownServer: true, run: func(t *testing.T, e *conceptEnv) {
			own := e.ownServer(t)
			ns := own.namespace(t)
			for i := 0; i < 3; i++ {
				own.createCM(t, ns, fmt.Sprintf("cm-%02d", i))
			}
			page := own.req(t, "GET", cmPath(ns)+"?limit=2", nil).expect(t, http.StatusOK)
			path := cmPath(ns) + "?limit=2&continue=" + url.QueryEscape(page.str("metadata.continue"))
			own.createCM(t, ns, "later") // history moves on past the snapshot
			waitFor(t, "the token's revision to be compacted", waitDeadline, func() (bool, string) {
				r := own.req(t, "GET", path, nil)
				return r.code == http.StatusGone, fmt.Sprintf("status %d", r.code)
			})
			st := own.req(t, "GET", path, nil).expectStatus(t, http.StatusGone, "Expired", "The provided continue parameter is too old")
			fresh := st.str("metadata.continue")
			if fresh == "" {
				t.Fatal("410 Status has no fresh continue token in metadata.continue")
			}
			// The fresh token continues, inconsistently, after the last key,
			// at the latest revision whenever it is used (kube's revision
			// -1: it never expires), so later writes show too.
			if raw, err := base64.RawURLEncoding.DecodeString(fresh); err != nil || !strings.Contains(string(raw), `"rv":-1`) {
				t.Errorf("fresh token %s (%v); want kube's, at resourceVersion -1", raw, err)
			}
			own.createCM(t, ns, "zlater")
			next := own.req(t, "GET", cmPath(ns)+"?limit=10&continue="+url.QueryEscape(fresh), nil).expect(t, http.StatusOK)
			if got := names(next.items()); !slices.Equal(got, []string{"cm-02", "kube-root-ca.crt", "later", "zlater"}) {
				t.Errorf("continuing with the fresh token listed %v, want [cm-02 kube-root-ca.crt later zlater]", got)
			}
		}},
	}
}

// revision parses a resourceVersion; Tabula's are decimal row ids, and
// kube-apiserver's (etcd revisions) too.
func revision(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number: %v", rv, err)
	}
	return n
}

func cond[T any](c bool, a, b T) T {
	if c {
		return a
	}
	return b
}
