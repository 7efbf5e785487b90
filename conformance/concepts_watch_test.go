package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// Section "Efficient detection of changes", with its parts "Watch
// bookmarks" and "Streaming lists".

const (
	secChanges   = "Efficient detection of changes"
	secBookmarks = "Watch bookmarks"
	secStreaming = "Streaming lists"
)

// watchStream is an open raw watch; events arrive decoded on events.
type watchStream struct {
	code   int
	hdr    http.Header
	events chan obj
	done   chan struct{} // closed when the server ends the stream
	err    error         // why the stream ended, read after done
	cancel context.CancelFunc
}

// watch opens a watch and fails t unless the server answers 200.
func (e *conceptEnv) watch(t *testing.T, path string, headers ...string) *watchStream {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*waitDeadline)
	r, err := http.NewRequestWithContext(ctx, "GET", e.base+path, nil)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	r.Header.Set("Accept", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		r.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := e.hc.Do(r)
	if err != nil {
		cancel()
		t.Fatalf("watch %s: %v", path, err)
	}
	w := &watchStream{code: resp.StatusCode, hdr: resp.Header, events: make(chan obj, 1000), done: make(chan struct{}), cancel: cancel}
	t.Cleanup(cancel)
	if resp.StatusCode != http.StatusOK {
		var body [600]byte
		n, _ := resp.Body.Read(body[:])
		resp.Body.Close()
		t.Fatalf("watch %s: status %d: %s", path, resp.StatusCode, body[:n])
	}
	go func() {
		defer close(w.done)
		defer resp.Body.Close()
		dec := json.NewDecoder(resp.Body)
		for {
			var ev obj
			if err := dec.Decode(&ev); err != nil {
				w.err = err
				return
			}
			w.events <- ev
		}
	}()
	return w
}

// next returns the next event, failing t if none comes in time.
func (w *watchStream) next(t *testing.T) obj {
	t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case <-time.After(waitDeadline):
		t.Fatalf("no watch event within %v", waitDeadline)
	}
	return nil
}

// nextOrEnd returns the next event, or nil once the server has ended the
// stream and every event has been read.
func (w *watchStream) nextOrEnd(t *testing.T) obj {
	t.Helper()
	select {
	case ev := <-w.events:
		return ev
	case <-w.done:
		select {
		case ev := <-w.events:
			return ev
		default:
			return nil
		}
	case <-time.After(waitDeadline):
		t.Fatalf("no watch event and no end of stream within %v", waitDeadline)
	}
	return nil
}

// describe prints an event as "TYPE name" for messages.
func describe(ev obj) string {
	if ev == nil {
		return "<end of stream>"
	}
	return ev.str("type") + " " + ev.str("object.metadata.name")
}

// expectEvent fails t unless ev has the type and object name.
func expectEvent(t *testing.T, ev obj, typ, name string) {
	t.Helper()
	if ev.str("type") != typ || ev.str("object.metadata.name") != name {
		t.Fatalf("event %s, want %s %s", describe(ev), typ, name)
	}
}

func changeDetectionChecks() []conceptCheck {
	return []conceptCheck{
		{section: secChanges, name: "watch from a revision replays history, then follows", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a")
			a["data"] = map[string]any{"k": "2"}
			updated := e.req(t, "PUT", cmPath(ns, "a"), a).expect(t, http.StatusOK)
			e.req(t, "DELETE", cmPath(ns, "a"), nil).expect(t, http.StatusOK)
			w := e.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+rv(a))
			ev := w.next(t)
			expectEvent(t, ev, "MODIFIED", "a")
			if rv(obj(ev["object"].(map[string]any))) != rv(updated) {
				t.Errorf("replayed MODIFIED has rv %v, want %s", ev.get("object.metadata.resourceVersion"), rv(updated))
			}
			expectEvent(t, w.next(t), "DELETED", "a")
			e.createCM(t, ns, "b")
			expectEvent(t, w.next(t), "ADDED", "b")
		}},
		{section: secChanges, name: "watch from a compacted revision gets a 410 ERROR event", ownServer: true, run: func(t *testing.T, e *conceptEnv) {
			own := e.ownServer(t)
			ns := newNamespace(t, own.tg)
			old := rv(own.createCM(t, ns, "a"))
			own.createCM(t, ns, "b")
			waitFor(t, "revision "+old+" to be compacted", waitDeadline, func() (bool, string) {
				r := own.req(t, "GET", cmPath(ns)+"?resourceVersionMatch=Exact&resourceVersion="+old, nil)
				return r.code == http.StatusGone, fmt.Sprintf("list at it: status %d", r.code)
			})
			w := own.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+old)
			ev := w.next(t)
			if ev.str("type") != "ERROR" || ev.num("object.code") != 410 || ev.str("object.reason") != "Expired" ||
				!strings.Contains(ev.str("object.message"), "too old resource version") {
				t.Fatalf("first event %v, want ERROR with a 410 Expired Status", ev)
			}
			if after := w.nextOrEnd(t); after != nil {
				t.Errorf("after the ERROR event got %s, want the end of the stream", describe(after))
			}
		}},
		{section: secBookmarks, name: "BOOKMARK with only resourceVersion before the timeout", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			start := rv(e.createCM(t, ns, "a"))
			w := e.watch(t, cmPath(ns)+"?watch=true&allowWatchBookmarks=true&timeoutSeconds=3&resourceVersion="+start)
			// Writes elsewhere move the server's revision past the
			// watcher's, which is when kube-apiserver has a bookmark to send.
			elsewhere := newNamespace(t, e.tg)
			for i := 0; i < 3; i++ {
				e.createCM(t, elsewhere, fmt.Sprintf("cm-%d", i))
			}
			var bookmarks []obj
			for ev := w.nextOrEnd(t); ev != nil; ev = w.nextOrEnd(t) {
				if ev.str("type") != "BOOKMARK" {
					t.Errorf("unexpected event %s", describe(ev))
					continue
				}
				bookmarks = append(bookmarks, ev)
			}
			if len(bookmarks) == 0 {
				t.Fatal("the watch ended at its timeout without a BOOKMARK")
			}
			b := obj(bookmarks[len(bookmarks)-1]["object"].(map[string]any))
			if b.str("kind") != "ConfigMap" || b.str("apiVersion") != "v1" {
				t.Errorf("bookmark object is %s %s, want v1 ConfigMap", b.str("apiVersion"), b.str("kind"))
			}
			meta, _ := b["metadata"].(map[string]any)
			if len(meta) != 1 || revision(t, rv(b)) < revision(t, start) {
				t.Errorf("bookmark metadata %v, want only a resourceVersion not older than %s", meta, start)
			}
		}},
		{section: secBookmarks, name: "no BOOKMARK unless asked", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			start := rv(e.createCM(t, ns, "a"))
			w := e.watch(t, cmPath(ns)+"?watch=true&timeoutSeconds=1&resourceVersion="+start)
			if ev := w.nextOrEnd(t); ev != nil {
				t.Errorf("got %s on a watch without allowWatchBookmarks, want the end of the stream", describe(ev))
			}
		}},
		{section: secStreaming, name: "ADDED events, the initial-events-end BOOKMARK, then live events", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			e.createCM(t, ns, "b")
			w := e.watch(t, cmPath(ns)+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true")
			var initial []string
			var end obj
			for end == nil {
				ev := w.next(t)
				switch ev.str("type") {
				case "ADDED":
					initial = append(initial, ev.str("object.metadata.name"))
				case "BOOKMARK":
					// The annotation key has dots, so no path accessor.
					ann, _ := ev.get("object.metadata.annotations").(map[string]any)
					if ann["k8s.io/initial-events-end"] == "true" {
						end = ev
					}
				default:
					t.Fatalf("unexpected %s before the initial-events-end bookmark", describe(ev))
				}
			}
			if strings.Join(initial, ",") != "a,b,kube-root-ca.crt" {
				t.Errorf("initial ADDED events %v, want a, b, kube-root-ca.crt", initial)
			}
			e.createCM(t, ns, "c")
			expectEvent(t, w.next(t), "ADDED", "c")
		}},
		{section: secStreaming, name: "parameter validation", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			for _, q := range []string{
				"watch=true&sendInitialEvents=true",
				"watch=true&sendInitialEvents=true&resourceVersionMatch=Exact&resourceVersion=1",
				"watch=true&resourceVersionMatch=NotOlderThan",
			} {
				r := e.req(t, "GET", cmPath(ns)+"?"+q, nil)
				if r.code != http.StatusUnprocessableEntity || r.obj(t).str("reason") != "Invalid" {
					t.Errorf("%s: status %d %s, want 422 Invalid", q, r.code, truncate(r.body, 200))
				}
			}
			// Accepted without bookmarks; then no end bookmark is sent.
			e.createCM(t, ns, "a")
			w := e.watch(t, cmPath(ns)+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&timeoutSeconds=1")
			for ev := w.nextOrEnd(t); ev != nil; ev = w.nextOrEnd(t) {
				if ev.str("type") != "ADDED" {
					t.Errorf("got %s without allowWatchBookmarks, want only ADDED events", describe(ev))
				}
			}
		}},
		{section: secStreaming, name: "client-go informer syncs through a watch-list", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			report := runInformerCheck(e.tg.restConfig(), ns)
			checkInformerReport(t, ns, report, true)
		}},
	}
}
