package conformance

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// authzRecording holds what kube-apiserver v1.35 answered to the
// requests of TestAuthorization (its 403 texts and kubectl auth can-i
// --list tables), the namespace written as NS. Recorded by running the
// test against kube-apiserver (Node,RBAC, anonymous requests on) with
// kube-controller-manager's clusterrole-aggregation controller beside it:
//
//	TABULA_CONFORMANCE_KUBECONFIG=<admin kubeconfig> TABULA_RECORD_AUTHZ=conformance/testdata/authz/kube-v1.35.json \
//	  go test ./conformance -run TestAuthorization
const authzRecording = "testdata/authz/kube-v1.35.json"

// recordAuthzEnv, when set, names the file the answers are written to
// instead of compared.
const recordAuthzEnv = "TABULA_RECORD_AUTHZ"

// answers collects the answers compared with kube's.
type answers struct {
	ns  string
	got map[string]string
}

func (a *answers) add(name, answer string) {
	a.got[name] = strings.ReplaceAll(strings.TrimRight(answer, "\n"), a.ns, "NS")
}

// TestAuthorization: requests are decided as kube-apiserver decides them
// under Node,RBAC with its bootstrap policy — a namespace admin, a
// ServiceAccount bound to view, RBAC's escalation rules, impersonation,
// bound service-account tokens, anonymous requests — and every 403 and
// rules listing reads as kube-apiserver's does for the same objects.
func TestAuthorization(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "rbac", func(t *testing.T) { authorizationScenario(t, tg) })
	})
}

func authorizationScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	admin := newKubectl(t, tg)
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	ans := &answers{ns: ns, got: map[string]string{}}

	// A ServiceAccount bound to view reads but does not write.
	admin.ok(t, "create", "serviceaccount", "viewer", "-n", ns)
	admin.ok(t, "create", "rolebinding", "viewer-view", "--clusterrole=view", "--serviceaccount="+ns+":viewer", "-n", ns)
	viewerToken := strings.TrimSpace(admin.ok(t, "create", "token", "viewer", "-n", ns, "--duration=20m"))
	viewer := tokenKubectl(t, tg, viewerToken)
	admin.ok(t, "create", "configmap", "seen", "-n", ns, "--from-literal=a=b")
	if out := viewer.ok(t, "get", "configmap", "seen", "-n", ns, "-o", "jsonpath={.data.a}"); out != "b" {
		t.Errorf("the viewer reads the configmap: %q", out)
	}
	ans.add("viewer creates a configmap", viewer.fails(t, runOpts{}, "create", "configmap", "mine", "-n", ns).stderr)
	ans.add("viewer deletes a configmap", viewer.fails(t, runOpts{}, "delete", "configmap", "seen", "-n", ns).stderr)
	ans.add("viewer lists nodes", viewer.fails(t, runOpts{}, "get", "nodes").stderr)
	ans.add("viewer's rules", viewer.ok(t, "auth", "can-i", "--list", "-n", ns))
	ans.add("viewer impersonates", viewer.fails(t, runOpts{}, "get", "pods", "-n", ns, "--as", "alice").stderr)

	// A user bound to admin in the namespace: everything there, nothing
	// cluster-wide; what they grant must be what they hold.
	admin.ok(t, "create", "rolebinding", "alice-admin", "--clusterrole=admin", "--user=alice", "-n", ns)
	for _, check := range []struct{ args, want string }{
		{"create deployments", "yes"}, {"delete secrets", "yes"}, {"create rolebindings", "yes"},
		{"list nodes", "no"}, {"create namespaces", "no"},
	} {
		args := append([]string{"auth", "can-i"}, strings.Fields(check.args)...)
		r := admin.run(t, append(args, "-n", ns, "--as", "alice")...)
		if got := strings.TrimSpace(r.stdout); got != check.want {
			t.Errorf("can alice %s in her namespace: %q, want %q\n%s", check.args, got, check.want, r)
		}
	}
	ans.add("alice's rules", admin.ok(t, "auth", "can-i", "--list", "-n", ns, "--as", "alice"))
	ans.add("alice lists nodes", admin.fails(t, runOpts{}, "get", "nodes", "--as", "alice").stderr)
	ans.add("alice reads another namespace", admin.fails(t, runOpts{}, "get", "configmaps", "-n", "default", "--as", "alice").stderr)
	admin.ok(t, "create", "role", "cm-reader", "--verb=get,list", "--resource=configmaps", "-n", ns, "--as", "alice")
	admin.ok(t, "create", "rolebinding", "bob-reads", "--role=cm-reader", "--user=bob", "-n", ns, "--as", "alice")
	ans.add("alice grants what she lacks", admin.fails(t, runOpts{}, "create", "role", "node-reader", "--verb=list", "--resource=nodes", "-n", ns, "--as", "alice").stderr)
	ans.add("alice binds cluster-admin", admin.fails(t, runOpts{}, "create", "rolebinding", "bob-root", "--clusterrole=cluster-admin", "--user=bob", "-n", ns, "--as", "alice").stderr)
	ans.add("bob's rules", admin.ok(t, "auth", "can-i", "--list", "-n", ns, "--as", "bob"))
	ans.add("bob deletes", admin.fails(t, runOpts{}, "delete", "configmap", "seen", "-n", ns, "--as", "bob").stderr)

	// Anonymous requests reach the public information and nothing else.
	for path, want := range map[string]int{"/version": 200, "/healthz": 200, "/readyz": 200, "/livez": 200, "/api/v1/namespaces": 403, "/apis": 403} {
		code, body := anonymousGet(t, tg, path)
		if code != want {
			t.Errorf("anonymous GET %s: %d %s; want %d", path, code, body, want)
		}
		if code == http.StatusForbidden {
			ans.add("anonymous GET "+path, body)
		}
	}

	// Tokens: an audience the API server is not is refused by it; a token
	// bound to a Pod stops working with the Pod.
	other := strings.TrimSpace(admin.ok(t, "create", "token", "viewer", "-n", ns, "--audience=https://vault.example.com"))
	ans.add("token for another audience", lastLine(tokenKubectl(t, tg, other).fails(t, runOpts{}, "get", "configmaps", "-n", ns).stderr))
	review, err := cs.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{
		Token: other, Audiences: []string{"https://vault.example.com"}}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:"+ns+":viewer" ||
		!slices.Equal(review.Status.Audiences, []string{"https://vault.example.com"}) {
		t.Errorf("review of the other audience's token: %+v %v", review, err)
	}
	if exp := tokenExpiry(t, viewerToken); exp < 19*time.Minute || exp > 20*time.Minute+time.Minute {
		t.Errorf("a --duration=20m token expires in %v", exp)
	}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "holder"}, Spec: corev1.PodSpec{
		ServiceAccountName: "viewer", Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bound := tokenKubectl(t, tg, strings.TrimSpace(admin.ok(t, "create", "token", "viewer", "-n", ns, "--bound-object-kind=Pod", "--bound-object-name=holder")))
	bound.ok(t, "get", "configmap", "seen", "-n", ns)
	zero := int64(0)
	if err := cs.CoreV1().Pods(ns).Delete(ctx, "holder", metav1.DeleteOptions{GracePeriodSeconds: &zero}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Pod gone", time.Minute, func() (bool, string) {
		_, err := cs.CoreV1().Pods(ns).Get(ctx, "holder", metav1.GetOptions{})
		return err != nil, "still there"
	})
	// kube-apiserver remembers a token's success for 10 s
	// (--authentication-token-cache-ttl... its TokenSuccessCacheTTL), so
	// the refusal may come that much later there.
	var refused result
	waitFor(t, "the deleted Pod's token refused", 30*time.Second, func() (bool, string) {
		refused = bound.run(t, "get", "configmap", "seen", "-n", ns)
		return refused.code != 0, refused.String()
	})
	ans.add("token of a deleted Pod", refused.stderr)

	compareAuthz(t, ans)
	if tg.Proc != nil {
		checkAuditLog(t, tg, ns)
	}
}

// checkAuditLog reads the shared server's audit log for what the scenario
// did in ns: who did what, as whom, with which decision and outcome.
func checkAuditLog(t *testing.T, tg *target, ns string) {
	t.Helper()
	events := auditEvents(t, tg, ns)
	has := func(what string, match func(e auditv1.Event) bool) {
		t.Helper()
		if !slices.ContainsFunc(events, match) {
			t.Errorf("the audit log of %s lacks %s (%d events in the namespace)", tg.Name, what, len(events))
		}
	}
	viewer := "system:serviceaccount:" + ns + ":viewer"
	has("the viewer's refused create", func(e auditv1.Event) bool {
		return e.User.Username == viewer && e.Verb == "create" && e.ObjectRef.Resource == "configmaps" && e.ResponseStatus != nil &&
			e.ResponseStatus.Code == 403 && e.Annotations["authorization.k8s.io/decision"] == "forbid" && e.Stage == auditv1.StageResponseComplete
	})
	has("the admin acting as alice", func(e auditv1.Event) bool {
		return e.ImpersonatedUser != nil && e.ImpersonatedUser.Username == "alice" && e.Verb == "create" && e.ObjectRef.Resource == "roles" &&
			e.ResponseStatus != nil && e.ResponseStatus.Code == 201 && e.Level == auditv1.LevelRequestResponse && e.RequestObject != nil
	})
	has("the refused escalation", func(e auditv1.Event) bool {
		return e.ObjectRef.Name == "node-reader" && e.ResponseStatus != nil && e.ResponseStatus.Code == 403 &&
			strings.Contains(e.ResponseStatus.Message, "attempting to grant RBAC permissions not currently held")
	})
	has("the configmap write with its body", func(e auditv1.Event) bool {
		return e.Verb == "create" && e.ObjectRef.Resource == "configmaps" && e.ObjectRef.Name == "seen" && e.RequestObject != nil &&
			strings.Contains(string(e.RequestObject.Raw), `"a":"b"`) && e.ResponseObject != nil
	})
}

// startReplicas starts n Tabula replicas on one new database of backend
// b, stopped when the test ends.
// forEachSharedDatabase runs fn as a subtest per backend that several
// replicas can share (not SQLite: one process per file), recorded in the
// matrix, when the suite starts its own servers.
func forEachSharedDatabase(t *testing.T, fn func(t *testing.T, b backend)) {
	t.Helper()
	if !ownServerOnly(t, "the replicas are servers the suite starts") {
		return
	}
	for _, b := range backends {
		if b.name == "sqlite" {
			continue // one process per SQLite file
		}
		t.Run(b.name, func(t *testing.T) {
			recordOutcome(t, scenarioRow(t, ""), b.name)
			fn(t, b)
		})
	}
}

func startReplicas(t *testing.T, b backend, n int, args ...string) []*target {
	t.Helper()
	dir := t.TempDir()
	db := b.database(t, dir)
	var tgs []*target
	for i := range n {
		p, err := startTabula(t, serveOptions{DB: db, DataDir: filepath.Join(dir, "tabula-"+string(rune('a'+i))), Args: args})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(stopDeadline) })
		tg, err := loadTarget(b.name+"-"+string(rune('a'+i)), p.Kubeconfig, p)
		if err != nil {
			t.Fatal(err)
		}
		tgs = append(tgs, tg)
	}
	return tgs
}

// auditEvents are the events of the shared server's audit log about
// objects in ns.
func auditEvents(t *testing.T, tg *target, ns string) []auditv1.Event {
	t.Helper()
	log := filepath.Join(filepath.Dir(tg.Proc.Options.DataDir), "audit.log")
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var events []auditv1.Event
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e auditv1.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit log line %q: %v", line, err)
		}
		if e.ObjectRef != nil && e.ObjectRef.Namespace == ns {
			events = append(events, e)
		}
	}
	return events
}

// compareAuthz compares the answers with kube-apiserver's recording, or
// records them.
func compareAuthz(t *testing.T, ans *answers) {
	if path := os.Getenv(recordAuthzEnv); path != "" {
		b, err := json.MarshalIndent(ans.got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("recorded %d answers in %s", len(ans.got), path)
		return
	}
	b, err := os.ReadFile(authzRecording)
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(b, &want); err != nil {
		t.Fatal(err)
	}
	for name, w := range want {
		if g, ok := ans.got[name]; !ok {
			t.Errorf("%s: not asked", name)
		} else if g != w {
			t.Errorf("%s:\n got: %s\nwant: %s (kube-apiserver v1.35)", name, g, w)
		}
	}
	for name := range ans.got {
		if _, ok := want[name]; !ok {
			t.Errorf("%s: no answer of kube-apiserver recorded", name)
		}
	}
}

// lastLine is kubectl's final message, without the log lines before it
// (they carry times and process ids).
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}

// tokenKubectl is kubectl with a kubeconfig that holds only a bearer
// token (a client certificate would be tried first).
func tokenKubectl(t *testing.T, tg *target, token string) *kubectl {
	t.Helper()
	k := newKubectl(t, tg)
	cfg := tg.restConfig()
	c := clientcmdapi.NewConfig()
	c.Clusters["c"] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData,
		CertificateAuthority: cfg.CAFile, InsecureSkipTLSVerify: cfg.Insecure}
	c.AuthInfos["u"] = &clientcmdapi.AuthInfo{Token: token}
	c.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	c.CurrentContext = "c"
	k.kubeconfig = filepath.Join(t.TempDir(), "token.kubeconfig")
	if err := clientcmd.WriteToFile(*c, k.kubeconfig); err != nil {
		t.Fatal(err)
	}
	return k
}

// anonymousGet requests path without credentials.
func anonymousGet(t *testing.T, tg *target, path string) (int, string) {
	t.Helper()
	cfg := tg.restConfig()
	anon := rest.AnonymousClientConfig(cfg)
	hc, err := rest.HTTPClientFor(anon)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Get(strings.TrimRight(cfg.Host, "/") + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

var jwtPayload = regexp.MustCompile(`^[^.]+\.([^.]+)\.[^.]+$`)

// tokenExpiry is how long a JWT has left, from its exp claim.
func tokenExpiry(t *testing.T, token string) time.Duration {
	t.Helper()
	m := jwtPayload.FindStringSubmatch(token)
	if m == nil {
		t.Fatalf("not a JWT: %q", token)
	}
	raw, err := base64.RawURLEncoding.DecodeString(m[1])
	if err != nil {
		t.Fatal(err)
	}
	var claims struct {
		Exp int64 `json:"exp"`
	}
	if err := json.Unmarshal(raw, &claims); err != nil {
		t.Fatal(err)
	}
	return time.Until(time.Unix(claims.Exp, 0))
}

// TestAuthorizationAcrossReplicas: a RoleBinding written through one
// replica authorizes on another replica of the same database once that
// replica's watch delivers it, and its deletion takes the access away
// there too.
func TestAuthorizationAcrossReplicas(t *testing.T) {
	forEachSharedDatabase(t, func(t *testing.T, b backend) {
		tgs := startReplicas(t, b, 2, "--token", "replicas-test-token")
		a, other := newKubectl(t, tgs[0]), tgs[1]
		ns := newNamespace(t, tgs[0])
		a.ok(t, "create", "serviceaccount", "reader", "-n", ns)
		reader := tokenKubectl(t, other, strings.TrimSpace(a.ok(t, "create", "token", "reader", "-n", ns)))
		if r := reader.run(t, "get", "configmaps", "-n", ns); r.code == 0 || !strings.Contains(r.stderr, "Forbidden") {
			t.Fatalf("before the binding:\n%s", r)
		}
		a.ok(t, "create", "rolebinding", "reader-view", "--clusterrole=view", "--serviceaccount="+ns+":reader", "-n", ns)
		began := time.Now()
		waitFor(t, "the binding authorizing on the other replica", 30*time.Second, func() (bool, string) {
			r := reader.run(t, "get", "configmaps", "-n", ns)
			return r.code == 0, r.String()
		})
		t.Logf("%s: a binding written on one replica authorized on the other %v later (one kubectl run included)", b.name, time.Since(began).Round(time.Millisecond))
		a.ok(t, "delete", "rolebinding", "reader-view", "-n", ns)
		waitFor(t, "the deleted binding refused on the other replica", 30*time.Second, func() (bool, string) {
			r := reader.run(t, "get", "configmaps", "-n", ns)
			return r.code != 0 && strings.Contains(r.stderr, "Forbidden"), r.String()
		})
	})
}
