package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/version"

	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/server"
	"github.com/tabula-dev/tabula/server/servertest"
	"github.com/tabula-dev/tabula/sqlstore"
	"github.com/tabula-dev/tabula/sqlstore/storetest"
)

func TestMetrics(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(context.Background(), "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(sqlstore.Collectors()...)
	srv := servertest.Server(t, server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet, Metrics: reg})
	send := func(method, path, contentType, body string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		r := httptest.NewRequest(method, path, strings.NewReader(body))
		if contentType != "" {
			r.Header.Set("Content-Type", contentType)
		}
		srv.Handler().ServeHTTP(rec, r)
		return rec
	}
	get := func(path string) *httptest.ResponseRecorder { return send("GET", path, "", "") }
	cm := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`
	for _, r := range []struct {
		method, path, contentType, body string
		code                            int
	}{
		{"GET", "/api/v1/namespaces/default/configmaps/missing", "", "", http.StatusNotFound},
		{"POST", "/api/v1/namespaces/default/configmaps?dryRun=All", "application/json", cm, http.StatusCreated},
		{"POST", "/api/v1/namespaces/default/configmaps?dryRun=All&dryRun=All", "application/json", cm, http.StatusCreated},
		{"PATCH", "/api/v1/namespaces/default/configmaps/c?fieldManager=m", "application/apply-patch+yaml", cm, http.StatusCreated},
		{"PATCH", "/api/v1/namespaces/default/configmaps/c", "application/merge-patch+json", `{"data":{"a":"b"}}`, http.StatusOK},
		{"PUT", "/api/v1/namespaces/default/configmaps/c", "application/json", cm, http.StatusOK},
		{"GET", "/api/v1/namespaces/default/configmaps", "", "", http.StatusOK},
		{"GET", "/api/v1/configmaps", "", "", http.StatusOK},
		{"GET", "/api/v1/namespaces", "", "", http.StatusOK},
		{"GET", "/api/v1/namespaces/default", "", "", http.StatusOK},
		{"GET", "/apis/apps/v1/namespaces/default/deployments/none/scale", "", "", http.StatusNotFound},
		{"GET", "/api/v1/namespaces/default/pods/none/log", "", "", http.StatusNotFound},
		{"DELETE", "/api/v1/namespaces/default/configmaps", "", "", http.StatusOK},
	} {
		if rec := send(r.method, r.path, r.contentType, r.body); rec.Code != r.code {
			t.Fatalf("%s %s: %d %s; want %d", r.method, r.path, rec.Code, rec.Body, r.code)
		}
	}
	// The stored objects by resource, counted as the server starts (then
	// every minute): the four system namespaces, no Pods, and no line for
	// reviews, which store nothing.
	deadline := time.Now().Add(15 * time.Second)
	for !strings.Contains(get("/metrics").Body.String(), `apiserver_storage_objects{resource="namespaces"} 4`) && time.Now().Before(deadline) {
		<-time.After(20 * time.Millisecond) // polling with a deadline
	}
	m := get("/metrics")
	body := m.Body.String()
	if !strings.Contains(body, `apiserver_storage_objects{resource="namespaces"} 4`) || !strings.Contains(body, `apiserver_storage_objects{resource="pods"} 0`) ||
		strings.Contains(body, `apiserver_storage_objects{resource="tokenreviews.authentication.k8s.io"}`) {
		t.Errorf("apiserver_storage_objects: %q; want namespaces 4, pods 0, no reviews", regexp.MustCompile(`apiserver_storage_objects\{[^\n]*`).FindAllString(body, -1))
	}
	// kube-apiserver's labels and values: the verb from the method (LIST
	// for a collection's GET, APPLY, CONNECT for pods/log), the route's
	// scope, the version, the dryRun values.
	line := func(verb, dryRun, group, version, resource, subresource, scope, code string) string {
		return fmt.Sprintf(`apiserver_request_total{code=%q,component="apiserver",dry_run=%q,group=%q,resource=%q,scope=%q,subresource=%q,verb=%q,version=%q}`,
			code, dryRun, group, resource, scope, subresource, verb, version)
	}
	for _, want := range []string{
		line("GET", "", "", "v1", "configmaps", "", "resource", "404") + " 1",
		line("POST", "All", "", "v1", "configmaps", "", "resource", "201") + " 2",
		line("APPLY", "", "", "v1", "configmaps", "", "resource", "201") + " 1",
		line("PATCH", "", "", "v1", "configmaps", "", "resource", "200") + " 1",
		line("PUT", "", "", "v1", "configmaps", "", "resource", "200") + " 1",
		line("LIST", "", "", "v1", "configmaps", "", "namespace", "200") + " 1",
		line("LIST", "", "", "v1", "configmaps", "", "cluster", "200") + " 1",
		line("LIST", "", "", "v1", "namespaces", "", "cluster", "200") + " 1",
		line("GET", "", "", "v1", "namespaces", "", "resource", "200") + " 1",
		line("GET", "", "apps", "v1", "deployments", "scale", "resource", "404") + " 1",
		line("CONNECT", "", "", "v1", "pods", "log", "resource", "404") + " 1",
		line("DELETE", "", "", "v1", "configmaps", "", "namespace", "200") + " 1",
		`apiserver_request_duration_seconds_bucket{component="apiserver",dry_run="",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1",le="0.005"}`,
		`apiserver_response_sizes_count{component="apiserver",group="",resource="configmaps",scope="namespace",subresource="",verb="LIST",version="v1"} 1`,
		`tabula_sql_query_duration_seconds_count{dialect="sqlite",query="get"}`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestEncodingCacheMetrics: a Protobuf list makes its items' encodings,
// the same list again is answered from them, and nothing is dropped; the
// tabula_encoding_cache_* metrics say so.
func TestEncodingCacheMetrics(t *testing.T) {
	srv := cacheServer(t)
	before := encodingCache(t, srv)
	listAs(t, srv, "application/vnd.kubernetes.protobuf")
	cold := encodingCache(t, srv)
	listAs(t, srv, "application/vnd.kubernetes.protobuf")
	warm := encodingCache(t, srv)
	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	if cold[made]-before[made] < 3 || warm[made] != cold[made] || warm[hits]-cold[hits] < 3 ||
		warm["tabula_encoding_cache_bytes"] <= 0 || warm["tabula_encoding_cache_evictions_total"] != 0 {
		t.Errorf("encoding cache: before %v, after a list %v, after it again %v", before, cold, warm)
	}
}

// TestTableListKeepsProtobuf: a Table list of objects decoded from
// storage, of a kind whose rows are not kept (IPAddresses: their printer
// adds a cell no column names), keeps each one's Protobuf encoding, so
// the next Table (or a Protobuf list) is made from it, not from the
// stored JSON again.
func TestTableListKeepsProtobuf(t *testing.T) {
	srv := cacheServer(t)
	const ips = "/apis/networking.k8s.io/v1/ipaddresses"
	for _, name := range []string{"10.0.0.7", "10.0.0.8", "10.0.0.9"} {
		create(t, srv, ips, `{"metadata":{"name":"`+name+`"},"spec":{"parentRef":{"group":"","resource":"services","namespace":"default","name":"web"}}}`)
	}
	before := encodingCache(t, srv)
	tbl := listPath(t, srv, ips, "application/json;as=Table;v=v1;g=meta.k8s.io")
	if !strings.Contains(tbl, `"cells":["10.0.0.8",`) {
		t.Fatalf("Table list: %s", tbl)
	}
	afterTable := encodingCache(t, srv)
	listPath(t, srv, ips, "application/vnd.kubernetes.protobuf")
	after := encodingCache(t, srv)
	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	// Three row objects (metadata) and three Protobuf encodings at least.
	if afterTable[made]-before[made] < 6 || after[made] != afterTable[made] || after[hits]-afterTable[hits] < 3 {
		t.Errorf("encoding cache: before %v, after a Table list %v, after a Protobuf list %v", before, afterTable, after)
	}
}

// TestTableListKeepsRows: a Table list of a kind whose rows depend on the
// clock only through their ages (ConfigMaps) keeps each row, and only
// that; the next Table is made of the kept rows, and reads as the first,
// in either Table version.
func TestTableListKeepsRows(t *testing.T) {
	srv := cacheServer(t)
	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	for _, accept := range []string{"application/json;as=Table;v=v1;g=meta.k8s.io", "application/json;as=Table;v=v1beta1;g=meta.k8s.io"} {
		before := encodingCache(t, srv)
		first := listAs(t, srv, accept)
		afterFirst := encodingCache(t, srv)
		again := listAs(t, srv, accept)
		afterAgain := encodingCache(t, srv)
		// A row made for each ConfigMap (a, b, c and the namespace's
		// kube-root-ca.crt), nothing else (no Protobuf, no metadata);
		// none made again, and each found.
		rows := float64(strings.Count(first, `{"cells":[`))
		if rows != 4 || afterFirst[made]-before[made] != rows || afterAgain[made] != afterFirst[made] || afterAgain[hits]-afterFirst[hits] != rows {
			t.Errorf("%s: encoding cache before %v, after a Table list %v, after it again %v", accept, before, afterFirst, afterAgain)
		}
		// The ConfigMaps were made a moment ago: their ages are seconds,
		// as many or more in the second list.
		age := regexp.MustCompile(`"cells":\["([a-z.-]+)",([01]),"([0-9]+)s"\],"object":\{"kind":"PartialObjectMetadata"`)
		a, b := age.FindAllStringSubmatch(first, -1), age.FindAllStringSubmatch(again, -1)
		if len(a) != 4 || len(b) != 4 {
			t.Fatalf("%s: rows\n%s\nthen\n%s", accept, first, again)
		}
		for i := range a {
			was, _ := strconv.Atoi(a[i][3])
			is, _ := strconv.Atoi(b[i][3])
			if a[i][1] != b[i][1] || is < was {
				t.Errorf("%s: %s was %ds old, then %s %ds", accept, a[i][1], was, b[i][1], is)
			}
		}
		first, again = sameListRevisions(t, first, again)
		if age.ReplaceAllString(first, "$1$2") != age.ReplaceAllString(again, "$1$2") {
			t.Errorf("%s: the lists differ beyond their ages:\n%s\n%s", accept, first, again)
		}
		rowsAsGets(t, srv, accept, first)
	}
}

// TestTableRowsFromProtobuf: a Table list of ConfigMaps whose Protobuf
// encodings a Protobuf list left makes its rows from those, not from the
// stored JSON, and they read as the rows of each object's own Table.
func TestTableRowsFromProtobuf(t *testing.T) {
	srv := cacheServer(t)
	listAs(t, srv, "application/vnd.kubernetes.protobuf")
	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	before := encodingCache(t, srv)
	const accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	tbl := listAs(t, srv, accept)
	after := encodingCache(t, srv)
	// Each of the four rows made, from its Protobuf encoding (a hit).
	if after[made]-before[made] != 4 || after[hits]-before[hits] != 4 {
		t.Errorf("encoding cache before a Table list %v, after it %v", before, after)
	}
	rowsAsGets(t, srv, accept, tbl)
}

// TestTableListKeepsPrintedRows: kinds kube's printers print (Deployments,
// Services, Pods) keep their Table rows by revision too: a second Table
// list makes none, and each of its rows is the row of the object's own
// Table (printed by kube's printer), its age aside.
func TestTableListKeepsPrintedRows(t *testing.T) {
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://"+filepath.Join(t.TempDir(), "state.db")), Metrics: prometheus.NewRegistry()})
	const accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
	made, hits := "tabula_encoding_cache_made_total", "tabula_encoding_cache_hits_total"
	create(t, srv, "/api/v1/namespaces", `{"metadata":{"name":"apps"}}`)
	for _, name := range []string{"web", "api"} {
		create(t, srv, "/apis/apps/v1/namespaces/apps/deployments", `{"metadata":{"name":"`+name+`"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"`+name+
			`"}},"template":{"metadata":{"labels":{"app":"`+name+`"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}}}`)
		create(t, srv, "/api/v1/namespaces/apps/services", `{"metadata":{"name":"`+name+`"},"spec":{"selector":{"app":"`+name+`"},"ports":[{"port":80}]}}`)
		create(t, srv, "/api/v1/namespaces/apps/pods", `{"metadata":{"name":"`+name+`"},"spec":{"containers":[{"name":"c","image":"nginx:1.27"}]}}`)
	}
	// An age in seconds, the Age column's cell in these rows.
	age := regexp.MustCompile(`"[0-9]+s"`)
	for _, c := range []struct {
		path string
		made float64 // encodings the first list makes, the second finds
	}{
		{"/apis/apps/v1/namespaces/apps/deployments", 2},
		{"/api/v1/namespaces/apps/services", 2},
		{"/api/v1/namespaces/apps/pods", 2},
	} {
		before := encodingCache(t, srv)
		first := listPath(t, srv, c.path, accept)
		afterFirst := encodingCache(t, srv)
		again := listPath(t, srv, c.path, accept)
		afterAgain := encodingCache(t, srv)
		if n := strings.Count(first, `{"cells":[`); n != 2 {
			t.Fatalf("%s: %d rows\n%s", c.path, n, first)
		}
		if afterFirst[made]-before[made] != c.made || afterAgain[made] != afterFirst[made] || afterAgain[hits]-afterFirst[hits] != c.made {
			t.Errorf("%s: encoding cache before %v, after a Table list %v, after it again %v", c.path, before, afterFirst, afterAgain)
		}
		first, again = sameListRevisions(t, first, again)
		if age.ReplaceAllString(first, "AGE") != age.ReplaceAllString(again, "AGE") {
			t.Errorf("%s: the lists differ beyond their ages:\n%s\n%s", c.path, first, again)
		}
		// Each row is the one the object's own Table has.
		var list struct{ Rows []json.RawMessage }
		if err := json.Unmarshal([]byte(again), &list); err != nil {
			t.Fatal(err)
		}
		for _, row := range list.Rows {
			var r struct {
				Object struct{ Metadata struct{ Name string } }
			}
			if err := json.Unmarshal(row, &r); err != nil {
				t.Fatal(err)
			}
			var one struct{ Rows []json.RawMessage }
			if err := json.Unmarshal([]byte(listPath(t, srv, c.path+"/"+r.Object.Metadata.Name, accept)), &one); err != nil || len(one.Rows) != 1 {
				t.Fatalf("%s/%s: Table of one: %v", c.path, r.Object.Metadata.Name, err)
			}
			if got, want := age.ReplaceAll(row, []byte("AGE")), age.ReplaceAll(one.Rows[0], []byte("AGE")); !bytes.Equal(got, want) {
				t.Errorf("%s: listed row\n%s\nthe object's own\n%s", c.path, got, want)
			}
		}
	}
}

// rowsAsGets checks that each row of a Table list of namespace default's
// ConfigMaps (as accept) is the row of that ConfigMap's own Table, which a
// Table of one object makes from the object (schema.Type.Row), its age
// aside.
func rowsAsGets(t *testing.T, srv *server.Server, accept, list string) {
	t.Helper()
	type table struct {
		Rows []json.RawMessage `json:"rows"`
	}
	var l table
	if err := json.Unmarshal([]byte(list), &l); err != nil || len(l.Rows) == 0 {
		t.Fatalf("Table list: %v\n%s", err, list)
	}
	age := regexp.MustCompile(`^(\{"cells":\["[^"]*",[0-9]+,)"[0-9]+s"\]`)
	for _, row := range l.Rows {
		var r struct {
			Object struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"object"`
		}
		if err := json.Unmarshal(row, &r); err != nil {
			t.Fatal(err)
		}
		var one table
		body := listPath(t, srv, "/api/v1/namespaces/default/configmaps/"+r.Object.Metadata.Name, accept)
		if err := json.Unmarshal([]byte(body), &one); err != nil || len(one.Rows) != 1 {
			t.Fatalf("Table of %s: %v\n%s", r.Object.Metadata.Name, err, body)
		}
		got, want := age.ReplaceAll(row, []byte("${1}AGE]")), age.ReplaceAll(one.Rows[0], []byte("${1}AGE]"))
		if !bytes.Contains(got, []byte("AGE]")) || !bytes.Equal(got, want) {
			t.Errorf("%s: list's row\n%s\nthe object's Table's row\n%s", accept, row, one.Rows[0])
		}
	}
}

// cacheServer is a server on SQLite holding ConfigMaps a, b and c in
// namespace default, created in JSON (so no encoding of them is kept).
func cacheServer(t *testing.T) *server.Server {
	t.Helper()
	srv := servertest.Server(t, server.Config{Store: storetest.Open(t, "sqlite://"+filepath.Join(t.TempDir(), "state.db")), Metrics: prometheus.NewRegistry()})
	for _, name := range []string{"a", "b", "c"} {
		create(t, srv, "/api/v1/namespaces/default/configmaps", `{"metadata":{"name":"`+name+`"}}`)
	}
	return srv
}

// listRevision is a Table list's own resourceVersion.
var listRevision = regexp.MustCompile(`^\{"kind":"Table","apiVersion":"[^"]+","metadata":\{"resourceVersion":"([0-9]+)"\}`)

// sameListRevisions checks the second Table list's resourceVersion is
// not below the first's, and returns both lists with it set to the
// first's. It is the store's revision, which the server's controllers may
// move between two lists by writing elsewhere.
func sameListRevisions(t *testing.T, first, again string) (string, string) {
	t.Helper()
	a, b := listRevision.FindStringSubmatch(first), listRevision.FindStringSubmatch(again)
	if a == nil || b == nil {
		t.Fatalf("no list resourceVersion in\n%s\nor\n%s", first, again)
	}
	was, _ := strconv.Atoi(a[1])
	is, _ := strconv.Atoi(b[1])
	if is < was {
		t.Errorf("the list's resourceVersion went back, %d then %d", was, is)
	}
	return first, a[0] + again[len(b[0]):]
}

// create posts body, JSON, to the collection at path.
func create(t *testing.T, srv *server.Server, path, body string) {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		t.Fatalf("create in %s: %d %s", path, rec.Code, rec.Body)
	}
}

// encodingCache reads the tabula_encoding_cache_* metrics.
func encodingCache(t *testing.T, srv *server.Server) map[string]float64 {
	t.Helper()
	return metricsNamed(t, srv, "tabula_encoding_cache_")
}

// metricsNamed are srv's metrics whose names start with prefix.
func metricsNamed(t *testing.T, srv *server.Server, prefix string) map[string]float64 {
	t.Helper()
	got := map[string]float64{}
	for _, line := range strings.Split(listPath(t, srv, "/metrics", ""), "\n") {
		if name, v, ok := strings.Cut(line, " "); ok && strings.HasPrefix(name, prefix) {
			f, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			got[name] = f
		}
	}
	return got
}

// listAs lists namespace default's ConfigMaps as accept.
func listAs(t *testing.T, srv *server.Server, accept string) string {
	t.Helper()
	return listPath(t, srv, "/api/v1/namespaces/default/configmaps", accept)
}

func listPath(t *testing.T, srv *server.Server, path, accept string) string {
	t.Helper()
	rec := httptest.NewRecorder()
	req := httptest.NewRequest("GET", path, nil)
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	srv.Handler().ServeHTTP(rec, req)
	if rec.Code != http.StatusOK {
		t.Fatalf("GET %s as %q: %d %s", path, accept, rec.Code, rec.Body)
	}
	return rec.Body.String()
}

// TestProfiling: with Profiling set, Go's profiles are served under
// /debug/pprof/ as on kube-apiserver; without it the paths do not exist.
func TestProfiling(t *testing.T) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	st, err := sqlstore.Open(context.Background(), "sqlite://:memory:", sqlstore.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	for _, on := range []bool{true, false} {
		srv, err := server.New(server.Config{Store: st, Registry: schema.NewBuiltin(), Version: version.Info{GitVersion: "v1.35.0"}, Logger: quiet, Profiling: on})
		if err != nil {
			t.Fatal(err)
		}
		for path, want := range map[string]string{"/debug/pprof/": "goroutine", "/debug/pprof/heap?debug=1": "heap profile", "/debug/pprof/goroutine?debug=1": "goroutine profile"} {
			rec := httptest.NewRecorder()
			srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
			switch {
			case on && (rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), want)):
				t.Errorf("profiling on: GET %s = %d %.200s; want 200 with %q", path, rec.Code, rec.Body, want)
			case !on && rec.Code != http.StatusNotFound:
				t.Errorf("profiling off: GET %s = %d; want 404", path, rec.Code)
			}
		}
	}
}

// TestKubeMetricsServed: the metrics kube's own code keeps in this
// process (Pod Security's evaluations, admission's) are on /metrics.
func TestKubeMetricsServed(t *testing.T) {
	h := refNewHarnessConfig(t, func(cfg *server.Config) { cfg.Metrics = prometheus.NewRegistry() })
	h.mustDo("POST", "/api/v1/namespaces/default/pods", "application/json", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, http.StatusCreated)
	body := h.do("GET", "/metrics", nil, nil).Body.String()
	for _, want := range []string{"pod_security_evaluations_total{", "apiserver_flowcontrol_"} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}
