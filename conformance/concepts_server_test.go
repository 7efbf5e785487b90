package conformance

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// Sections outside the concepts page's own headings that the API needs
// from any server: request timeouts, the per-namespace defaults that
// kube-controller-manager provides, and the health endpoints.

const (
	secTimeouts   = "Request timeouts"
	secNSDefaults = "Namespace defaults"
	secHealth     = "Health endpoints"
	secSystemNS   = "System namespaces"
)

func serverChecks() []conceptCheck {
	return []conceptCheck{
		{section: secTimeouts, name: "an unparsable timeout is 400; 0s and too long mean the maximum", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "GET", cmPath(ns)+"?timeout=soon", nil).expectStatus(t, http.StatusBadRequest, "BadRequest", "invalid timeout")
			for _, q := range []string{"0s", "87600h", "30s"} {
				e.req(t, "GET", cmPath(ns)+"?timeout="+q, nil).expect(t, http.StatusOK)
			}
		}},
		{section: secTimeouts, name: "a write out of time answers 504 and leaves nothing behind", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			e.req(t, "POST", cmPath(ns)+"?timeout=1ns", cm("a", nil)).expectStatus(t, http.StatusGatewayTimeout, "Timeout")
			e.req(t, "GET", cmPath(ns, "a"), nil).expectStatus(t, http.StatusNotFound, "NotFound")
		}},
		{section: secTimeouts, name: "watches end at timeoutSeconds, not timeout", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			listRV := rv(e.req(t, "GET", cmPath(ns), nil).expect(t, http.StatusOK))
			start := time.Now()
			w := e.watch(t, cmPath(ns)+"?watch=true&timeout=1ns&timeoutSeconds=1&resourceVersion="+listRV)
			if ev := w.nextOrEnd(t); ev != nil {
				t.Errorf("got %s on an idle watch", describe(ev))
			}
			if took := time.Since(start); took < time.Second {
				t.Errorf("watch ended after %v, before its timeoutSeconds=1", took)
			}
		}},
		{section: secNSDefaults, name: "default ServiceAccount and kube-root-ca.crt with the CA bundle", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			waitFor(t, "the default ServiceAccount", waitDeadline, func() (bool, string) {
				r := e.req(t, "GET", "/api/v1/namespaces/"+ns+"/serviceaccounts/default", nil)
				return r.code == http.StatusOK, fmt.Sprintf("status %d", r.code)
			})
			ca := e.waitRootCA(t, ns, "")
			// The key has a dot, so no path accessor.
			data, _ := ca.get("data").(map[string]any)
			bundle, _ := data["ca.crt"].(string)
			if want := e.tg.restConfig().CAData; len(want) > 0 && !bytes.Contains([]byte(bundle), bytes.TrimSpace(want)) {
				t.Errorf("kube-root-ca.crt ca.crt does not hold the CA the kubeconfig trusts:\n%s", bundle)
			}
		}},
		{section: secNSDefaults, name: "re-created when deleted", run: func(t *testing.T, e *conceptEnv) {
			ns := e.namespace(t)
			first := e.waitRootCA(t, ns, "")
			e.req(t, "DELETE", cmPath(ns, "kube-root-ca.crt"), nil).expect(t, http.StatusOK)
			e.waitRootCA(t, ns, first.str("metadata.uid"))
			saPath := "/api/v1/namespaces/" + ns + "/serviceaccounts/default"
			var uid string
			waitFor(t, "the default ServiceAccount", waitDeadline, func() (bool, string) {
				r := e.req(t, "GET", saPath, nil)
				if r.code == http.StatusOK {
					uid = r.obj(t).str("metadata.uid")
				}
				return r.code == http.StatusOK, fmt.Sprintf("status %d", r.code)
			})
			e.req(t, "DELETE", saPath, nil).expect(t, http.StatusOK)
			waitFor(t, "the default ServiceAccount to come back", waitDeadline, func() (bool, string) {
				r := e.req(t, "GET", saPath, nil)
				return r.code == http.StatusOK && r.obj(t).str("metadata.uid") != uid, fmt.Sprintf("status %d", r.code)
			})
		}},
		{section: secSystemNS, name: "default, kube-system and kube-public may not be deleted: 403, and they stay", run: func(t *testing.T, e *conceptEnv) {
			for _, name := range []string{"default", "kube-system", "kube-public"} {
				path := "/api/v1/namespaces/" + name
				for _, q := range []string{"", "?dryRun=All"} {
					st := e.req(t, "DELETE", path+q, nil).expectStatus(t, http.StatusForbidden, "Forbidden",
						fmt.Sprintf(`namespaces %q is forbidden: this namespace may not be deleted`, name))
					if got := st.str("details.name") + "/" + st.str("details.kind"); got != name+"/namespaces" {
						t.Errorf("DELETE %s: details %s; want %s/namespaces", path, got, name)
					}
				}
				got := e.req(t, "GET", path, nil).expect(t, http.StatusOK)
				if ts := got.str("metadata.deletionTimestamp"); ts != "" || got.str("status.phase") != "Active" {
					t.Errorf("%s after the refused delete: deletionTimestamp %q, phase %q; want untouched and Active", name, ts, got.str("status.phase"))
				}
			}
		}},
		{section: secSystemNS, name: "kube-node-lease may be deleted and comes back", run: func(t *testing.T, e *conceptEnv) {
			path := "/api/v1/namespaces/kube-node-lease"
			uid := e.req(t, "GET", path, nil).expect(t, http.StatusOK).str("metadata.uid")
			e.req(t, "DELETE", path, nil).expect(t, http.StatusOK)
			waitFor(t, "kube-node-lease to be recreated", 2*waitDeadline, func() (bool, string) {
				r := e.req(t, "GET", path, nil)
				if r.code != http.StatusOK {
					return false, fmt.Sprintf("status %d", r.code)
				}
				o := r.obj(t)
				return o.str("metadata.uid") != uid && o.str("status.phase") == "Active", "uid " + o.str("metadata.uid") + ", phase " + o.str("status.phase")
			})
		}},
		{section: secHealth, name: "livez and readyz: named checks, verbose, exclude, single checks", run: func(t *testing.T, e *conceptEnv) {
			for _, path := range []string{"/livez", "/readyz"} {
				if r := e.req(t, "GET", path, nil); r.code != http.StatusOK || string(r.body) != "ok" {
					t.Errorf("%s: %d %q, want 200 ok", path, r.code, r.body)
				}
				r := e.req(t, "GET", path+"?verbose", nil)
				name := strings.TrimPrefix(path, "/")
				wantLines := []string{"[+]ping ok", "[+]log ok", name + " check passed"}
				if e.tg.Proc != nil {
					wantLines = append(wantLines, "[+]database ok")
				}
				for _, want := range wantLines {
					if r.code != http.StatusOK || !strings.Contains(string(r.body), want+"\n") {
						t.Errorf("%s?verbose: %d %q, want a line %q", path, r.code, r.body, want)
					}
				}
				if r := e.req(t, "GET", path+"?verbose&exclude=ping", nil); !strings.Contains(string(r.body), "[+]ping excluded: ok\n") {
					t.Errorf("%s?exclude=ping: %q, want ping reported as excluded", path, r.body)
				}
				if r := e.req(t, "GET", path+"/ping", nil); r.code != http.StatusOK || string(r.body) != "ok" {
					t.Errorf("%s/ping: %d %q", path, r.code, r.body)
				}
				if r := e.req(t, "GET", path+"/no-such-check", nil); r.code != http.StatusNotFound {
					t.Errorf("%s/no-such-check: %d, want 404", path, r.code)
				}
			}
			if r := e.req(t, "GET", "/readyz/controllers", nil); e.tg.Proc != nil && (r.code != http.StatusOK || string(r.body) != "ok") {
				t.Errorf("/readyz/controllers: %d %q", r.code, r.body)
			}
			if r := e.req(t, "GET", "/healthz", nil); r.code != http.StatusOK || string(r.body) != "ok" {
				t.Errorf("/healthz: %d %q", r.code, r.body)
			}
		}},
		{section: secHealth, name: "readyz fails during the shutdown delay, before the listener closes", ownServer: true, run: testShutdownReadiness},
	}
}

// waitRootCA waits for kube-root-ca.crt in ns with a uid other than notUID.
func (e *conceptEnv) waitRootCA(t *testing.T, ns, notUID string) obj {
	t.Helper()
	var got obj
	waitFor(t, "kube-root-ca.crt in "+ns, waitDeadline, func() (bool, string) {
		r := e.req(t, "GET", cmPath(ns, "kube-root-ca.crt"), nil)
		if r.code != http.StatusOK {
			return false, fmt.Sprintf("status %d", r.code)
		}
		got = r.obj(t)
		return got.str("metadata.uid") != notUID, "still the deleted one"
	})
	return got
}

// testShutdownReadiness starts a server with a shutdown delay, sends it
// SIGTERM, and expects /readyz to fail while /livez and the API still
// answer, then the process to exit.
func testShutdownReadiness(t *testing.T, e *conceptEnv) {
	dir := t.TempDir()
	db := e.backend.database(t, dir)
	proc, err := startTabula(t, serveOptions{DB: db, DataDir: filepath.Join(dir, "data"), Args: []string{"--shutdown-delay-duration", "3s"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		select {
		case <-proc.exited:
		default:
			proc.kill()
		}
	})
	tg, err := loadTarget(e.tg.Name+"-shutdown", proc.Kubeconfig, proc)
	if err != nil {
		t.Fatal(err)
	}
	own := newConceptEnv(t, tg)
	if err := proc.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "/readyz to fail after SIGTERM", waitDeadline, func() (bool, string) {
		r := own.req(t, "GET", "/readyz?verbose", nil)
		return r.code == http.StatusInternalServerError, fmt.Sprintf("%d %q", r.code, r.body)
	})
	if r := own.req(t, "GET", "/livez", nil); r.code != http.StatusOK {
		t.Errorf("/livez during the shutdown delay: %d, want 200", r.code)
	}
	own.req(t, "GET", "/api/v1/namespaces/default", nil).expect(t, http.StatusOK)
	select {
	case <-proc.exited:
		if proc.waitErr != nil {
			t.Errorf("exit after SIGTERM: %v", proc.waitErr)
		}
	case <-time.After(stopDeadline):
		t.Errorf("still running %v after SIGTERM", stopDeadline)
	}
}
