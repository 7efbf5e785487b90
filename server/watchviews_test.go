package server_test

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
)

// TestWatchViewBookmarks: a watch in a view sends its bookmarks in that
// view, as kube-apiserver does: client-go's metadata client (what
// kube-controller-manager's garbage collector and quota informers use, in
// Protobuf) gets PartialObjectMetadata bookmarks, the initial-events-end
// one included, where the watched kind itself would fail its decoding;
// and a Table watch (the e2e suite's WatchList-in-Table spec) gets a
// one-row Table whose row carries the bookmark's metadata, every event's
// Table carrying its object's resourceVersion.
func TestWatchViewBookmarks(t *testing.T) {
	h := refNewHarness(t)
	const secrets = "/api/v1/namespaces/default/secrets"
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", secrets, ct, []byte(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s1","labels":{"watchlist":"true"}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	hs := httptest.NewServer(h.h)
	defer hs.Close()

	mc, err := metadata.NewForConfig(&rest.Config{Host: hs.URL})
	if err != nil {
		t.Fatal(err)
	}
	sendInitial, timeout := true, int64(20)
	w, err := mc.Resource(schema.GroupVersionResource{Version: "v1", Resource: "secrets"}).Namespace("default").Watch(context.Background(), metav1.ListOptions{
		SendInitialEvents: &sendInitial, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true, TimeoutSeconds: &timeout})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		m, ok := ev.Object.(*metav1.PartialObjectMetadata)
		if !ok {
			t.Fatalf("%s event of %T: %v", ev.Type, ev.Object, ev.Object)
		}
		got = append(got, string(ev.Type)+" "+m.Name)
		if ev.Type == watch.Bookmark {
			if m.Annotations[metav1.InitialEventsAnnotationKey] != "true" || m.ResourceVersion == "" {
				t.Fatalf("bookmark %+v: want the initial-events-end annotation and a resourceVersion", m.ObjectMeta)
			}
			break
		}
	}
	if len(got) != 2 || got[0] != "ADDED s1" || got[1] != "BOOKMARK " {
		t.Fatalf("metadata watch-list: %v; want ADDED s1, then the bookmark", got)
	}

	req, _ := http.NewRequest("GET", hs.URL+secrets+"?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=20", nil)
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	for i, want := range []string{"ADDED", "BOOKMARK"} {
		line, err := rd.ReadBytes('\n')
		if err != nil {
			t.Fatal(err)
		}
		var ev struct {
			Type   string
			Object metav1.Table
		}
		if err := json.Unmarshal(line, &ev); err != nil || ev.Type != want || ev.Object.Kind != "Table" || len(ev.Object.Rows) != 1 || ev.Object.ResourceVersion == "" {
			t.Fatalf("Table watch event %d: %s (%v); want %s as a Table of one row with a resourceVersion", i, line, err, want)
		}
		var row metav1.PartialObjectMetadata
		if err := json.Unmarshal(ev.Object.Rows[0].Object.Raw, &row); err != nil {
			t.Fatal(err)
		}
		if (i == 0) != (ev.Object.ColumnDefinitions != nil) {
			t.Errorf("event %d: columns %v; want them with the first event only", i, ev.Object.ColumnDefinitions)
		}
		if row.ResourceVersion != ev.Object.ResourceVersion {
			t.Errorf("event %d: the Table's resourceVersion %q, its row's %q", i, ev.Object.ResourceVersion, row.ResourceVersion)
		}
		if want == "BOOKMARK" && row.Annotations[metav1.InitialEventsAnnotationKey] != "true" {
			t.Errorf("Table bookmark's row %s: want the initial-events-end annotation", ev.Object.Rows[0].Object.Raw)
		}
	}
}

// TestWatchRefusesYAML: YAML has no stream form, so a watch asking only
// for it is refused (406) naming the forms a watch streams in, as
// kube-apiserver's watch negotiation does; a get or list in YAML is
// served.
func TestWatchRefusesYAML(t *testing.T) {
	h := refNewHarness(t)
	yaml := map[string]string{"Accept": "application/yaml"}
	r := h.do("GET", "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1", yaml, nil)
	// The Status comes in YAML, as the client asked (kube folds the line).
	if r.Code != http.StatusNotAcceptable || !strings.Contains(r.Body.String(), "reason: NotAcceptable") ||
		!strings.Contains(r.Body.String(), "only the following media types are accepted: application/json;stream=watch,") ||
		!strings.Contains(r.Body.String(), "application/vnd.kubernetes.protobuf;stream=watch") {
		t.Errorf("watch in YAML: %d %s; want 406 naming the stream forms", r.Code, r.Body)
	}
	if r := h.do("GET", "/api/v1/namespaces/default/configmaps", yaml, nil); r.Code != http.StatusOK || !strings.Contains(r.Body.String(), "kind: ConfigMapList") {
		t.Errorf("list in YAML: %d %s", r.Code, r.Body)
	}
}
