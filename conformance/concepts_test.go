package conformance

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestConcepts checks the API concepts page (../shared/seeds/000_*, with
// the newer sections of 001_*) section by section. Each check is named
// "<seed section>/<behaviour>"; the run prints a section × target matrix
// besides the scenario matrix.
//
// Most checks speak raw HTTP, because the behaviour is in headers, query
// parameters and Status bodies that no client exposes; the rest use
// client-go where a client's handling is what matters.
func TestConcepts(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		env := newConceptEnv(t, tg)
		for _, c := range conceptChecks() {
			row := "Concepts/" + c.section + "/" + c.name
			if c.ownServer && tg.Proc == nil {
				results.set(row, tg.Name, resultNA)
				sections.record(c.section, tg.Name, resultNA)
				continue
			}
			t.Run(c.section+"/"+c.name, func(t *testing.T) {
				t.Cleanup(func() {
					outcome := resultPass
					if t.Failed() {
						outcome = resultFail
					}
					results.set(row, tg.Name, outcome)
					sections.record(c.section, tg.Name, outcome)
				})
				c.run(t, env)
			})
		}
	})
}

// conceptCheck is one behaviour of one seed section.
type conceptCheck struct {
	section, name string
	// ownServer marks checks that need a server of the suite's own (fast
	// compaction, a shutdown); against an external server they are n/a.
	ownServer bool
	run       func(t *testing.T, e *conceptEnv)
}

// conceptChecks lists the checks in the order of the seed's sections.
func conceptChecks() []conceptCheck {
	var all []conceptCheck
	for _, group := range [][]conceptCheck{
		resourceVersionChecks(),
		changeDetectionChecks(),
		chunkingChecks(),
		representationChecks(),
		writeChecks(),
		applyChecks(),
		deletionChecks(),
		serverChecks(),
	} {
		all = append(all, group...)
	}
	return all
}

// sectionTable counts check outcomes per seed section and target.
type sectionTable struct {
	mu     sync.Mutex
	order  []string
	counts map[[2]string]map[string]int
}

var sections = &sectionTable{counts: map[[2]string]map[string]int{}}

func (s *sectionTable) record(section, target, outcome string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !contains(s.order, section) {
		s.order = append(s.order, section)
	}
	k := [2]string{section, target}
	if s.counts[k] == nil {
		s.counts[k] = map[string]int{}
	}
	s.counts[k][outcome]++
}

// fill writes one cell per section and target into tb: "7/7 pass", or the
// failures and n/a counts when there are any.
func (s *sectionTable) fill(tb *table) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sec := range s.order {
		for _, tg := range targetNames() {
			n := s.counts[[2]string{sec, tg}]
			total := n[resultPass] + n[resultFail] + n[resultNA]
			if total == 0 {
				continue
			}
			cell := fmt.Sprintf("%d/%d pass", n[resultPass], total)
			if n[resultFail] > 0 {
				cell += fmt.Sprintf(", %d FAIL", n[resultFail])
			}
			if n[resultNA] > 0 {
				cell += fmt.Sprintf(", %d n/a", n[resultNA])
			}
			tb.set(sec, tg, cell)
		}
	}
}

// conceptEnv is what a check works with: the target, a raw HTTP client
// authenticated like the kubeconfig, and a clientset.
type conceptEnv struct {
	tg   *target
	hc   *http.Client
	base string
	cs   *kubernetes.Clientset

	// own is a server of the suite's own on the target's database kind,
	// started on first use with a short compaction window.
	ownOnce sync.Once
	own     *conceptEnv
	ownErr  error
	backend backend
}

func newConceptEnv(t *testing.T, tg *target) *conceptEnv {
	t.Helper()
	cfg := tg.restConfig()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e := &conceptEnv{tg: tg, hc: hc, base: strings.TrimSuffix(cfg.Host, "/"), cs: tg.clientset(t)}
	for _, b := range backends {
		if b.name == tg.Name {
			e.backend = b
		}
	}
	return e
}

// Compaction settings of the suite's own server: history older than a
// second goes within a quarter second more.
const (
	ownCompactionWindow   = time.Second
	ownCompactionInterval = 250 * time.Millisecond
)

// ownServer returns the env of a server of the suite's own, on a fresh
// database of the target's kind, that compacts history quickly. It lives
// until the target's test ends.
func (e *conceptEnv) ownServer(t *testing.T) *conceptEnv {
	t.Helper()
	e.ownOnce.Do(func() {
		dir, err := suiteDir()
		if err != nil {
			e.ownErr = err
			return
		}
		dir = filepath.Join(dir, "concepts-"+e.tg.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			e.ownErr = err
			return
		}
		db, err := binaryDatabase(t, e.backend, dir)
		if err != nil {
			e.ownErr = err
			return
		}
		proc, err := startTabula(t, serveOptions{DB: db, DataDir: filepath.Join(dir, "data"), Args: []string{
			"--compaction-window", ownCompactionWindow.String(),
			"--compaction-interval", ownCompactionInterval.String(),
		}})
		if err != nil {
			e.ownErr = err
			return
		}
		running.add(proc)
		tg, err := loadTarget(e.tg.Name+"-compacting", proc.Kubeconfig, proc)
		if err != nil {
			e.ownErr = err
			return
		}
		e.own = newConceptEnv(t, tg)
	})
	if e.ownErr != nil {
		t.Fatalf("starting a compacting server: %v", e.ownErr)
	}
	return e.own
}

// response is an HTTP answer, read whole.
type response struct {
	code int
	hdr  http.Header
	body []byte
}

// req is one raw request: method, path (with query), body and headers as
// "Name: value" strings.
func (e *conceptEnv) req(t *testing.T, method, path string, body any, headers ...string) *response {
	t.Helper()
	var rd io.Reader
	contentType := "application/json"
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(raw)
	}
	ctx := testContext(t, waitDeadline)
	r, err := http.NewRequestWithContext(ctx, method, e.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if rd != nil {
		r.Header.Set("Content-Type", contentType)
	}
	r.Header.Set("Accept", "application/json")
	for _, h := range headers {
		k, v, _ := strings.Cut(h, ":")
		r.Header.Set(strings.TrimSpace(k), strings.TrimSpace(v))
	}
	resp, err := e.hc.Do(r)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, path, err)
	}
	return &response{code: resp.StatusCode, hdr: resp.Header, body: raw}
}

// expect fails t unless the answer has the code, returning the decoded body.
func (r *response) expect(t *testing.T, code int) obj {
	t.Helper()
	if r.code != code {
		t.Fatalf("status %d, want %d; body: %s", r.code, code, truncate(r.body, 600))
	}
	return r.obj(t)
}

// obj decodes a JSON body.
func (r *response) obj(t *testing.T) obj {
	t.Helper()
	var o obj
	if len(r.body) == 0 {
		return o
	}
	if err := json.Unmarshal(r.body, &o); err != nil {
		t.Fatalf("decoding %s: %v", truncate(r.body, 300), err)
	}
	return o
}

// expectStatus fails t unless the answer is a Status with the code and
// reason whose message contains each of msgs.
func (r *response) expectStatus(t *testing.T, code int, reason string, msgs ...string) obj {
	t.Helper()
	o := r.expect(t, code)
	if o.str("kind") != "Status" || o.str("status") != "Failure" {
		t.Fatalf("body is not a Failure Status: %s", truncate(r.body, 600))
	}
	if got := o.str("reason"); got != reason {
		t.Errorf("reason %q, want %q; message %q", got, reason, o.str("message"))
	}
	if got := o.num("code"); got != int64(code) {
		t.Errorf("Status code %d, want %d", got, code)
	}
	for _, m := range msgs {
		if !strings.Contains(o.str("message"), m) {
			t.Errorf("message %q does not contain %q", o.str("message"), m)
		}
	}
	return o
}

func truncate(b []byte, n int) string {
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// obj is a decoded JSON object with path accessors.
type obj map[string]any

// get follows a dotted path of object keys.
func (o obj) get(path string) any {
	var cur any = map[string]any(o)
	for _, k := range strings.Split(path, ".") {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[k]
	}
	return cur
}

func (o obj) str(path string) string {
	s, _ := o.get(path).(string)
	return s
}

func (o obj) num(path string) int64 {
	f, _ := o.get(path).(float64)
	return int64(f)
}

func (o obj) has(path string) bool { return o.get(path) != nil }

func (o obj) list(path string) []any {
	l, _ := o.get(path).([]any)
	return l
}

// items returns a list's items as objs.
func (o obj) items() []obj {
	var out []obj
	for _, it := range o.list("items") {
		m, _ := it.(map[string]any)
		out = append(out, obj(m))
	}
	return out
}

func names(items []obj) []string {
	var out []string
	for _, it := range items {
		out = append(out, it.str("metadata.name"))
	}
	return out
}

// cm is a ConfigMap body.
func cm(name string, data map[string]string, labels ...string) map[string]any {
	meta := map[string]any{"name": name}
	if len(labels) > 0 {
		l := map[string]any{}
		for _, kv := range labels {
			k, v, _ := strings.Cut(kv, "=")
			l[k] = v
		}
		meta["labels"] = l
	}
	return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data}
}

// cmPath is the collection or item path of ConfigMaps in ns.
func cmPath(ns string, name ...string) string {
	p := "/api/v1/namespaces/" + ns + "/configmaps"
	if len(name) > 0 {
		p += "/" + name[0]
	}
	return p
}

// createCM creates a ConfigMap and returns it as stored.
func (e *conceptEnv) createCM(t *testing.T, ns, name string, labels ...string) obj {
	t.Helper()
	return e.req(t, "POST", cmPath(ns), cm(name, map[string]string{"k": "v"}, labels...)).expect(t, http.StatusCreated)
}

// rv returns an object's resourceVersion.
func rv(o obj) string { return o.str("metadata.resourceVersion") }

// namespace creates a namespace for the check and waits, as test
// frameworks do, for its kube-root-ca.crt ConfigMap, so that lists of
// ConfigMaps in it are deterministic.
func (e *conceptEnv) namespace(t *testing.T) string {
	t.Helper()
	ns := newNamespace(t, e.tg)
	waitFor(t, "kube-root-ca.crt in "+ns, waitDeadline, func() (bool, string) {
		r := e.req(t, "GET", cmPath(ns, "kube-root-ca.crt"), nil)
		return r.code == http.StatusOK, fmt.Sprintf("status %d", r.code)
	})
	return ns
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		return []byte(err.Error())
	}
	return b
}
