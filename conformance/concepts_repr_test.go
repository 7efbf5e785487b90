package conformance

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
)

// Sections "Receiving resources as Tables", the metadata-only
// representation (PartialObjectMetadata), and "Response compression".

const (
	secTables      = "Receiving resources as Tables"
	secMetadata    = "Metadata-only representation"
	secCompression = "Response compression"
)

const (
	acceptTable    = "Accept: application/json;as=Table;g=meta.k8s.io;v=v1"
	acceptMetadata = "Accept: application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"
)

// columnNames lists a Table's column names.
func columnNames(table obj) []string {
	var out []string
	for _, c := range table.list("columnDefinitions") {
		out = append(out, obj(c.(map[string]any)).str("name"))
	}
	return out
}

// rows returns a Table's rows as objs.
func rows(table obj) []obj {
	var out []obj
	for _, r := range table.list("rows") {
		out = append(out, obj(r.(map[string]any)))
	}
	return out
}

func representationChecks() []conceptCheck {
	return []conceptCheck{
		{section: secTables, name: "list and get as Table, object as PartialObjectMetadata by default", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			for _, path := range []string{cmPath(ns) + "?fieldSelector=metadata.name%3Da", cmPath(ns, "a")} {
				table := e.req(t, "GET", path, nil, acceptTable).expect(t, http.StatusOK)
				if table.str("kind") != "Table" || table.str("apiVersion") != "meta.k8s.io/v1" {
					t.Fatalf("%s: got %s %s, want meta.k8s.io/v1 Table", path, table.str("apiVersion"), table.str("kind"))
				}
				if got := columnNames(table); !slices.Equal(got, []string{"Name", "Data", "Age"}) {
					t.Errorf("%s: columns %v, want [Name Data Age]", path, got)
				}
				rs := rows(table)
				if len(rs) != 1 {
					t.Fatalf("%s: %d rows, want 1", path, len(rs))
				}
				cells := rs[0].list("cells")
				if len(cells) != 3 || cells[0] != "a" || cells[1] != float64(1) {
					t.Errorf("%s: cells %v, want [a 1 <age>]", path, cells)
				}
				if k := rs[0].str("object.kind"); k != "PartialObjectMetadata" || rs[0].has("object.data") {
					t.Errorf("%s: row object is %s, want PartialObjectMetadata without data", path, k)
				}
			}
		}},
		{section: secTables, name: "includeObject None, Object and Metadata", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			for include, check := range map[string]func(row obj) bool{
				"None":   func(row obj) bool { return !row.has("object") },
				"Object": func(row obj) bool { return row.str("object.kind") == "ConfigMap" && row.str("object.data.k") == "v" },
				"Metadata": func(row obj) bool {
					return row.str("object.kind") == "PartialObjectMetadata" && row.str("object.metadata.name") == "a"
				},
			} {
				table := e.req(t, "GET", cmPath(ns, "a")+"?includeObject="+include, nil, acceptTable).expect(t, http.StatusOK)
				if rs := rows(table); len(rs) != 1 || !check(rs[0]) {
					t.Errorf("includeObject=%s: rows %v", include, table.get("rows"))
				}
			}
			e.req(t, "GET", cmPath(ns, "a")+"?includeObject=Bogus", nil, acceptTable).expectStatus(t, http.StatusBadRequest, "BadRequest")
		}},
		{section: secTables, name: "meta.k8s.io/v1beta1 Tables for old clients", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			table := e.req(t, "GET", cmPath(ns, "a"), nil, "Accept: application/json;as=Table;g=meta.k8s.io;v=v1beta1").expect(t, http.StatusOK)
			if table.str("kind") != "Table" || table.str("apiVersion") != "meta.k8s.io/v1beta1" {
				t.Errorf("got %s %s, want meta.k8s.io/v1beta1 Table", table.str("apiVersion"), table.str("kind"))
			}
		}},
		{section: secTables, name: "watch of Tables", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			start := rv(e.createCM(t, ns, "a"))
			w := e.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+start, acceptTable)
			e.createCM(t, ns, "b")
			e.createCM(t, ns, "c")
			for i, name := range []string{"b", "c"} {
				ev := w.next(t)
				table := obj(ev["object"].(map[string]any))
				if ev.str("type") != "ADDED" || table.str("kind") != "Table" {
					t.Fatalf("event %d: %s of a %s, want ADDED Table", i, ev.str("type"), table.str("kind"))
				}
				if rs := rows(table); len(rs) != 1 || rs[0].list("cells")[0] != name {
					t.Errorf("event %d: rows %v, want %s's", i, table.get("rows"), name)
				}
				// Column definitions come with the first event only.
				if hasCols := len(table.list("columnDefinitions")) > 0; hasCols != (i == 0) {
					t.Errorf("event %d: columnDefinitions present %v", i, hasCols)
				}
			}
		}},
		{section: secMetadata, name: "get, list and watch as PartialObjectMetadata", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			a := e.createCM(t, ns, "a", "app=x")
			got := e.req(t, "GET", cmPath(ns, "a"), nil, acceptMetadata).expect(t, http.StatusOK)
			if got.str("kind") != "PartialObjectMetadata" || got.str("apiVersion") != "meta.k8s.io/v1" || got.has("data") ||
				got.str("metadata.labels.app") != "x" || got.str("metadata.uid") != a.str("metadata.uid") {
				t.Errorf("get: %s", truncate(mustJSON(got), 400))
			}
			// Lists are asked for as the list kind; PartialObjectMetadata
			// alone gets 406 for a list, as from kube-apiserver.
			e.req(t, "GET", cmPath(ns), nil, acceptMetadata).expectStatus(t, http.StatusNotAcceptable, "NotAcceptable")
			l := e.req(t, "GET", cmPath(ns)+"?labelSelector=app%3Dx", nil, "Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1").expect(t, http.StatusOK)
			if l.str("kind") != "PartialObjectMetadataList" || len(l.items()) != 1 || l.items()[0].has("data") {
				t.Errorf("list: %s", truncate(mustJSON(l), 400))
			}
			w := e.watch(t, cmPath(ns)+"?watch=true&resourceVersion="+rv(a), acceptMetadata)
			if ct := w.hdr.Get("Content-Type"); ct != "application/json" {
				t.Errorf("watch Content-Type %q, want application/json", ct)
			}
			e.createCM(t, ns, "b")
			ev := w.next(t)
			if ev.str("type") != "ADDED" || ev.str("object.kind") != "PartialObjectMetadata" || ev.has("object.data") {
				t.Errorf("watch event: %v", ev)
			}
		}},
		{section: secMetadata, name: "client-go's metadata client lists and watches", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			mc, err := metadata.NewForConfig(e.tg.restConfig())
			if err != nil {
				t.Fatal(err)
			}
			api := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns)
			ctx := testContext(t, waitDeadline)
			l, err := api.List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("metadata list: %v", err)
			}
			w, err := api.Watch(ctx, metav1.ListOptions{ResourceVersion: l.ResourceVersion})
			if err != nil {
				t.Fatalf("metadata watch: %v", err)
			}
			defer w.Stop()
			e.createCM(t, ns, "a", "app=x")
			select {
			case ev := <-w.ResultChan():
				m, ok := ev.Object.(*metav1.PartialObjectMetadata)
				if ev.Type != watch.Added || !ok || m.Name != "a" || m.Labels["app"] != "x" {
					t.Errorf("watch event %s %#v, want ADDED PartialObjectMetadata a", ev.Type, ev.Object)
				}
			case <-ctx.Done():
				t.Fatal("no watch event")
			}
		}},
		{section: secMetadata, name: "406 without an acceptable fallback; q-values respected", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.createCM(t, ns, "a")
			bogus := "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v9"
			e.req(t, "GET", cmPath(ns, "a"), nil, "Accept: "+bogus).expectStatus(t, http.StatusNotAcceptable, "NotAcceptable")
			if got := e.req(t, "GET", cmPath(ns, "a"), nil, "Accept: "+bogus+", application/json").expect(t, http.StatusOK); got.str("kind") != "ConfigMap" {
				t.Errorf("with a JSON fallback got %s, want ConfigMap", got.str("kind"))
			}
			for accept, want := range map[string]string{
				"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.5, application/json;q=0.9": "ConfigMap",
				"application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1;q=0.9, application/json;q=0.5": "PartialObjectMetadata",
			} {
				if got := e.req(t, "GET", cmPath(ns, "a"), nil, "Accept: "+accept).expect(t, http.StatusOK); got.str("kind") != want {
					t.Errorf("Accept %q: got %s, want %s", accept, got.str("kind"), want)
				}
			}
		}},
		{section: secCompression, name: "gzip above 128 KiB when asked, identity otherwise", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			big := strings.Repeat("x", 60<<10)
			for _, n := range []string{"a", "b", "c"} {
				e.req(t, "POST", cmPath(ns), cm(n, map[string]string{"k": big})).expect(t, http.StatusCreated)
			}
			r := e.req(t, "GET", cmPath(ns), nil, "Accept-Encoding: gzip")
			if r.code != http.StatusOK || r.hdr.Get("Content-Encoding") != "gzip" {
				t.Fatalf("180 KiB list: status %d Content-Encoding %q, want gzip", r.code, r.hdr.Get("Content-Encoding"))
			}
			zr, err := gzip.NewReader(bytes.NewReader(r.body))
			if err != nil {
				t.Fatal(err)
			}
			raw, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			var l obj
			if err := json.Unmarshal(raw, &l); err != nil || len(l.items()) < 3 {
				t.Errorf("decompressed list: %v, %d items", err, len(l.items()))
			}
			if r := e.req(t, "GET", cmPath(ns, "a"), nil, "Accept-Encoding: gzip"); r.hdr.Get("Content-Encoding") != "" {
				t.Errorf("60 KiB object compressed (%q), want identity below 128 KiB", r.hdr.Get("Content-Encoding"))
			}
			if r := e.req(t, "GET", cmPath(ns), nil, "Accept-Encoding: identity"); r.hdr.Get("Content-Encoding") != "" {
				t.Errorf("compressed (%q) without gzip in Accept-Encoding", r.hdr.Get("Content-Encoding"))
			}
		}},
	}
}
