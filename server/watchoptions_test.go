package server_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
)

// TestWatchOptionsAsKube: a watch's parameters are defaulted and checked
// by kube's own ListOptions code with WatchList on, as kube-apiserver 1.35
// does: a watch from "" opens with the state and ends it with the
// initial-events-end bookmark; continue is ignored; initial events at a
// revision not reached are refused in the stream, and without initial
// events a future revision is simply where the stream starts.
func TestWatchOptionsAsKube(t *testing.T) {
	h := refNewHarness(t)
	const cms = "/api/v1/namespaces/default/configmaps"
	h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"a"}}`, http.StatusCreated)
	events := func(body string) []map[string]any {
		var out []map[string]any
		for _, line := range strings.Split(strings.TrimSpace(body), "\n") {
			if line == "" {
				continue
			}
			var ev map[string]any
			if err := json.Unmarshal([]byte(line), &ev); err != nil {
				t.Fatalf("event %q: %v", line, err)
			}
			out = append(out, ev)
		}
		return out
	}
	get := func(path string) (int, string) {
		r := h.do("GET", path, map[string]string{"Accept": "application/json"}, nil)
		return r.Code, r.Body.String()
	}

	// A plain watch from "" (and "0"): the state, then the bookmark.
	for _, rv := range []string{"", "0"} {
		code, body := get(cms + "?watch=true&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion=" + rv)
		var types []string
		for _, ev := range events(body) {
			types = append(types, ev["type"].(string))
		}
		// The namespace's two ConfigMaps (a and kube-root-ca.crt) and
		// the end of the state; no bookmark before a timeout of 1 s.
		if code != http.StatusOK || strings.Join(types, " ") != "ADDED ADDED BOOKMARK" ||
			strings.Count(body, `"k8s.io/initial-events-end":"true"`) != 1 {
			t.Errorf("watch from %q with bookmarks: %d %s; want the state, then the initial-events-end bookmark", rv, code, body)
		}
	}
	// Without bookmarks allowed, none.
	if code, body := get(cms + "?watch=true&timeoutSeconds=1"); code != http.StatusOK || strings.Contains(body, "BOOKMARK") || !strings.Contains(body, `"type":"ADDED"`) {
		t.Errorf("watch from \"\" without bookmarks: %d %s", code, body)
	}
	// continue means nothing to a watch from a revision (from "", it is
	// defaulted into the NotOlderThan that continue forbids, below).
	rv := h.mustDo("POST", cms, "application/json", `{"metadata":{"name":"b"}}`, http.StatusCreated)["metadata"].(map[string]any)["resourceVersion"].(string)
	h.mustDo("DELETE", cms+"/b", "", "", http.StatusOK)
	if code, body := get(cms + "?watch=true&timeoutSeconds=1&continue=abc&resourceVersion=" + rv); code != http.StatusOK || !strings.Contains(body, `"type":"DELETED"`) {
		t.Errorf("watch with continue: %d %s; want the watch", code, body)
	}
	// Initial events at a revision not reached: 200, then the 504 as an
	// ERROR event; without initial events the stream starts there.
	code, body := get(cms + "?watch=true&timeoutSeconds=5&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&resourceVersion=99999999")
	if evs := events(body); code != http.StatusOK || len(evs) != 1 || evs[0]["type"] != "ERROR" ||
		!strings.Contains(body, `"code":504`) || !strings.Contains(body, "Too large resource version: 99999999") {
		t.Errorf("initial events at a future revision: %d %s; want an ERROR event of 504", code, body)
	}
	if code, body := get(cms + "?watch=true&timeoutSeconds=1&sendInitialEvents=false&resourceVersionMatch=NotOlderThan&resourceVersion=99999999"); code != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Errorf("no initial events from a future revision: %d %s; want an empty stream", code, body)
	}
	// A negative timeout ends the stream at once.
	if code, body := get(cms + "?watch=true&timeoutSeconds=-1&resourceVersion=99999999"); code != http.StatusOK || strings.TrimSpace(body) != "" {
		t.Errorf("negative timeout: %d %s", code, body)
	}

	// Any value but 0 and false is true, as kube's parameter codec reads
	// it: a list asking for initial events is refused as such.
	if code, body := get(cms + "?sendInitialEvents=xyz"); code != http.StatusUnprocessableEntity || !strings.Contains(body, "sendInitialEvents is forbidden for list") {
		t.Errorf("list with sendInitialEvents=xyz: %d %s", code, body)
	}

	// kube's causes, in its order.
	for _, c := range []struct{ query, causes string }{
		{"?watch=true&resourceVersionMatch=Foo",
			`[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided","field":"resourceVersionMatch"},{"reason":"FieldValueNotSupported","message":"Unsupported value: \"Foo\": supported values: \"NotOlderThan\"","field":"resourceVersionMatch"}]`},
		{"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&continue=abc",
			`[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden when continue is provided","field":"resourceVersionMatch"}]`},
		{"?watch=true&continue=abc",
			`[{"reason":"FieldValueForbidden","message":"Forbidden: resourceVersionMatch is forbidden when continue is provided","field":"resourceVersionMatch"}]`},
		// The legacy /watch/ path is checked as a list, as on kube.
		{"", ""},
	} {
		if c.query == "" {
			code, body := get("/api/v1/watch/namespaces/default/configmaps?sendInitialEvents=true&resourceVersionMatch=NotOlderThan")
			if code != http.StatusUnprocessableEntity || !strings.Contains(body, "sendInitialEvents is forbidden for list") {
				t.Errorf("/watch/ path with sendInitialEvents: %d %s", code, body)
			}
			continue
		}
		code, body := get(cms + c.query)
		var st struct {
			Details struct{ Causes json.RawMessage }
		}
		_ = json.Unmarshal([]byte(body), &st)
		if code != http.StatusUnprocessableEntity || string(st.Details.Causes) != c.causes {
			t.Errorf("%s: %d %s\nwant causes %s", c.query, code, body, c.causes)
		}
	}
}

// TestWatchBookmarkCarriesProgress: as kube-apiserver's cacher, a watch
// that allows bookmarks gets one 2 s before its timeout at the store's
// newest revision, past writes it does not see (another resource, a
// selector that matches nothing), so the client resumes from there and
// not from a revision compaction may take; the stream then ends with no
// other bookmark.
func TestWatchBookmarkCarriesProgress(t *testing.T) {
	h := refNewHarness(t)
	start := h.listRV("/api/v1/namespaces/default/configmaps")
	h.mustDo("POST", "/api/v1/namespaces/default/configmaps", "application/json", `{"metadata":{"name":"unwatched","labels":{"a":"b"}}}`, http.StatusCreated)
	secret := h.mustDo("POST", "/api/v1/namespaces/default/secrets", "application/json", `{"metadata":{"name":"s"}}`, http.StatusCreated)
	seen := refDig(secret, "metadata", "resourceVersion").(string)
	r := h.do("GET", "/api/v1/namespaces/default/configmaps?watch=1&allowWatchBookmarks=true&timeoutSeconds=3&labelSelector=a%3Dnone&resourceVersion="+start, nil, nil)
	lines := strings.Split(strings.TrimSpace(r.Body.String()), "\n")
	if r.Code != http.StatusOK || len(lines) != 1 {
		t.Fatalf("watch: %d %s; want one bookmark", r.Code, r.Body)
	}
	var ev struct {
		Type   string
		Object struct {
			Kind     string
			Metadata map[string]any
		}
	}
	if err := json.Unmarshal([]byte(lines[0]), &ev); err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(fmt.Sprint(ev.Object.Metadata["resourceVersion"]), 10, 64)
	want, _ := strconv.ParseInt(seen, 10, 64)
	if ev.Type != "BOOKMARK" || ev.Object.Kind != "ConfigMap" || len(ev.Object.Metadata) != 1 || rv < want {
		t.Fatalf("event %s; want a ConfigMap bookmark with only a resourceVersion of at least %d (the Secret's)", lines[0], want)
	}
}
