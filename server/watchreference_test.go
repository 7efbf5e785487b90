package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// refWatchGaps lists the recorded watch cases where Tabula still differs
// from kube-apiserver, with the reason.
var refWatchGaps = map[string]string{
	// The recorder compacted etcd at its newest revision; kube-apiserver's
	// watch cache still held the ConfigMaps' recent history and answered
	// from it. Tabula has no cache apart from its database: history is
	// what compaction keeps (--compaction-window, 5 min), and a revision
	// compacted away is 410 Expired, which clients answer by listing.
	"watch-compacted-rv-within-cache":      "history compacted away is gone: 410 (kube's watch cache kept it past etcd's compaction)",
	"watch-compacted-rv-2-configmaps":      "history compacted away is gone: 410 (kube's watch cache kept it past etcd's compaction)",
	"list-compacted-rv-2-configmaps-exact": "history compacted away is gone: 410 (kube's watch cache answered an exact list at a compacted revision)",
}

// TestWatchReference replays testdata/reference/watch: the recorder's
// changes in ref-watch are made again in its order, and each watch (or
// list) is sent at the point of that order where it was recorded, from
// the same place in the history. A stream the recorder hung up on is
// ended by a timeout instead; its events are compared one by one (type,
// object as the other replays compare objects, Status of an ERROR,
// bookmark annotations, Table columns).
func TestWatchReference(t *testing.T) {
	h := refNewHarness(t)
	h.createNamespace("ref-watch", nil)
	const cms = "/api/v1/namespaces/ref-watch/configmaps"
	rvOf := func(obj map[string]any) string { return refDig(obj, "metadata", "resourceVersion").(string) }
	var results []refResult
	replay := func(file string, vars map[string]string) {
		t.Helper()
		var problems []string
		t.Run(file, func(t *testing.T) {
			h.t = t
			problems = refReplayWatch(h, "watch/"+file, vars)
			gap, known := refWatchGaps[file]
			switch {
			case len(problems) > 0 && !known:
				t.Errorf("differs from kube-apiserver:\n  %s", strings.Join(problems, "\n  "))
			case len(problems) == 0 && known:
				t.Errorf("matches kube-apiserver now; remove it from refWatchGaps (%s)", gap)
			case known:
				t.Logf("known gap (%s):\n  %s", gap, strings.Join(problems, "\n  "))
			}
		})
		results = append(results, refResult{file: file, problems: problems})
		h.t = t
	}
	patch := func(name, body string) map[string]any {
		t.Helper()
		return h.mustDo("PATCH", cms+"/"+name, "application/merge-patch+json", body, http.StatusOK)
	}

	// w1 is made, changed and deleted after the list the first watch
	// starts from.
	listRV := h.listRV(cms)
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"w1"},"data":{"v":"1"}}`, http.StatusCreated)
	patch("w1", `{"data":{"v":"2"}}`)
	h.mustDo("DELETE", cms+"/w1", "", "", http.StatusOK)
	replay("watch-from-list-rv", map[string]string{"<rv>": listRV})

	afterW1 := h.listRV(cms)
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"w-a","labels":{"grp":"one"}},"data":{"v":"1"}}`, http.StatusCreated)
	wb := h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"w-b","labels":{"grp":"two"}},"data":{"v":"1"}}`, http.StatusCreated)
	now := map[string]string{"<rv>": rvOf(wb)}
	for _, file := range []string{"watch-rv-unset", "watch-rv-0", "watch-sendinitialevents", "watch-sendinitialevents-no-bookmarks",
		"watch-sendinitialevents-rv0", "watch-sendinitialevents-no-rvm", "watch-sendinitialevents-rvm-exact", "watch-rvm-without-sendinitialevents",
		"watch-bookmarks-timeout-1s", "watch-timeout-no-bookmarks"} {
		replay(file, now)
	}
	replay("watch-sendinitialevents-rv-value", now)
	replay("watch-sendinitialevents-false-with-rvm", map[string]string{"<rv>": afterW1})
	current, _ := strconv.ParseInt(rvOf(wb), 10, 64)
	replay("watch-future-rv", map[string]string{"<current-rv+100000>": strconv.FormatInt(current+100000, 10)})

	// sel-1 enters, leaves and enters the watched label, w-a changes, and
	// sel-1 goes.
	beforeSel := h.listRV(cms)
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"sel-1","labels":{"watched":"yes"}},"data":{"v":"1"}}`, http.StatusCreated)
	patch("sel-1", `{"metadata":{"labels":{"watched":"no"}}}`)
	patch("sel-1", `{"metadata":{"labels":{"watched":"yes"}}}`)
	patch("w-a", `{"data":{"v":"9"}}`)
	h.mustDo("DELETE", cms+"/sel-1", "", "", http.StatusOK)
	from := map[string]string{"<rv>": beforeSel}
	for _, file := range []string{"watch-labelselector-transitions", "watch-legacy-watch-path", "watch-partialobjectmetadata",
		"watch-table", "watch-fieldselector-single-object", "watch-legacy-watch-path-single"} {
		replay(file, from)
	}

	// A CRD made after listRV, one Tick, then the history compacted up to
	// now: kube-apiserver's watch cache kept the ConfigMaps' history
	// that etcd no longer had; the Ticks' cache began after listRV.
	h.mustDo("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "application/json", `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
		"metadata":{"name":"ticks.watch.example.com"},"spec":{"group":"watch.example.com","scope":"Namespaced",
		"names":{"plural":"ticks","singular":"tick","kind":"Tick","listKind":"TickList"},
		"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, http.StatusCreated)
	h.waitFor("ticks Established", func() bool { return crdCondition(h, "ticks.watch.example.com", "Established") == "True" })
	tick := h.mustDo("POST", "/apis/watch.example.com/v1/namespaces/ref-watch/ticks", "application/json", `{"apiVersion":"watch.example.com/v1","kind":"Tick","metadata":{"name":"t1"}}`, http.StatusCreated)
	rev, _ := strconv.ParseInt(rvOf(tick), 10, 64)
	if err := h.store.Compact(context.Background(), rev); err != nil {
		t.Fatal(err)
	}
	old := map[string]string{"<rv>": listRV}
	for _, file := range []string{"watch-compacted-rv-within-cache", "watch-compacted-rv-2-configmaps", "list-compacted-rv-2-configmaps-exact",
		"watch-compacted-rv-too-old", "watch-compacted-rv-too-old-bookmarks", "list-compacted-rv-too-old-exact", "list-compacted-rv-too-old-notolderthan"} {
		replay(file, old)
	}

	for name := range refWatchGaps {
		found := false
		for _, r := range results {
			found = found || r.file == name
		}
		if !found {
			t.Errorf("refWatchGaps names %s, which is not replayed", name)
		}
	}
	var b strings.Builder
	pass := 0
	for _, r := range results {
		verdict := "pass"
		if len(r.problems) > 0 {
			verdict = r.problems[0]
		} else {
			pass++
		}
		fmt.Fprintf(&b, "%-48s %s\n", r.file, verdict)
	}
	t.Logf("\n%s%d of %d cases pass", b.String(), pass, len(results))
}

// refTooOld is the number pair of a 410's message.
var refTooOld = regexp.MustCompile(`too old resource version: \d+ \(\d+\)`)

// refReplayWatch sends one recorded watch (or list) case and returns how
// the answer differs from the recording.
func refReplayWatch(h *refHarness, file string, vars map[string]string) []string {
	h.t.Helper()
	c := refLoad(h.t, file)
	h.vars, h.headers = vars, map[string]string{}
	path := h.substitute(c.Request.Path)
	watching := strings.Contains(path, "watch=") || strings.Contains(path, "/watch/")
	if watching && !strings.Contains(path, "timeoutSeconds=") {
		// The recorder hung up after a while: end the stream instead.
		sep := "?"
		if strings.Contains(path, "?") {
			sep = "&"
		}
		path += sep + "timeoutSeconds=1"
	}
	rec := h.do(c.Request.Method, path, c.Request.Headers, nil)
	if !watching || c.Response.Status != http.StatusOK {
		return h.compare(refCase{file: file}, c, rec)
	}
	var p []string
	add := func(format string, args ...any) { p = append(p, fmt.Sprintf(format, args...)) }
	if rec.Code != c.Response.Status {
		return []string{fmt.Sprintf("status %d, want %d: %.300s", rec.Code, c.Response.Status, rec.Body)}
	}
	if ct, want := rec.Header().Get("Content-Type"), c.header("Content-Type"); ct != want {
		add("Content-Type %q, want %q", ct, want)
	}
	var want []map[string]any
	if err := json.Unmarshal(c.Response.Body, &want); err != nil {
		h.t.Fatalf("%s: recorded events: %v", file, err)
	}
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(rec.Body.String()), "\n") {
		if line == "" {
			continue
		}
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return append(p, fmt.Sprintf("event %.200q: %v", line, err))
		}
		got = append(got, ev)
	}
	types := func(evs []map[string]any) []string {
		var out []string
		for _, ev := range evs {
			name, _ := refDig(ev, "object", "metadata", "name").(string)
			out = append(out, fmt.Sprint(ev["type"], " ", name))
		}
		return out
	}
	if !reflect.DeepEqual(types(got), types(want)) {
		return append(p, fmt.Sprintf("events %q, want %q", types(got), types(want)))
	}
	for i := range want {
		w, _ := want[i]["object"].(map[string]any)
		g, _ := got[i]["object"].(map[string]any)
		at := func(s string) string { return fmt.Sprintf("event %d (%s): %s", i, want[i]["type"], s) }
		switch {
		case want[i]["type"] == "ERROR":
			if m, ok := g["message"].(string); ok {
				g["message"] = refTooOld.ReplaceAllString(m, "too old resource version: <rv> (<rv>)")
			}
			wb, _ := json.Marshal(w)
			gb, _ := json.Marshal(g)
			for _, d := range refCompareJSON(c, wb, gb, h.state) {
				add("%s", at(d))
			}
		case want[i]["type"] == "BOOKMARK":
			for _, k := range []string{"kind", "apiVersion"} {
				if g[k] != w[k] {
					add("%s", at(fmt.Sprintf("%s %v, want %v", k, g[k], w[k])))
				}
			}
			if ga, wa := refDig(g, "metadata", "annotations"), refDig(w, "metadata", "annotations"); !reflect.DeepEqual(ga, wa) {
				add("%s", at(fmt.Sprintf("annotations %v, want %v", ga, wa)))
			}
			if rv, _ := refDig(g, "metadata", "resourceVersion").(string); rv == "" {
				add("%s", at("a bookmark without its resourceVersion"))
			}
		case w["kind"] == "Table":
			if gd, wd := g["columnDefinitions"] != nil, w["columnDefinitions"] != nil; gd != wd {
				add("%s", at(fmt.Sprintf("columnDefinitions present=%v, want %v", gd, wd)))
			}
			// Only the first event's Table names its columns; the rows
			// of the others are read by them.
			cols := refDig(want[0], "object", "columnDefinitions")
			w, g := maps.Clone(w), maps.Clone(g)
			w["columnDefinitions"], g["columnDefinitions"] = cols, cols
			for _, d := range refCompareTable(w, g) {
				add("%s", at(d))
			}
		default:
			if refDig(w, "metadata", "name") == "kube-root-ca.crt" {
				// Each server has a CA of its own.
				delete(w["data"].(map[string]any), "ca.crt")
				if d, ok := g["data"].(map[string]any); ok {
					delete(d, "ca.crt")
				}
			}
			for _, d := range refCompareObject(w, g) {
				add("%s", at(d))
			}
		}
	}
	return p
}
