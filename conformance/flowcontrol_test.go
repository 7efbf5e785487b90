package conformance

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	flowcontrolv1typed "k8s.io/client-go/kubernetes/typed/flowcontrol/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// TestPriorityAndFairness: kube's API Priority and Fairness as clients
// see it. The answers name their FlowSchema and priority level
// (X-Kubernetes-PF-*): system:masters in exempt, a health probe in
// probes (exempt level), anonymous and ordinary users in global-default;
// kube 1.35's mandatory (exempt, catch-all) and suggested objects exist. A FlowSchema and a PriorityLevelConfiguration made by the test
// take effect (status written, requests classified into them), and while
// one user floods its tiny level and is refused with 429 and Retry-After,
// another user's requests are all served; their latency is printed.
func TestPriorityAndFairness(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "classification, custom level, flood", func(t *testing.T) { flowControlScenario(t, tg) })
	})
}

func flowControlScenario(t *testing.T, tg *target) {
	cs := tg.clientset(t)
	ctx := testContext(t, 2*time.Minute)
	ns := newNamespace(t, tg)
	fc := cs.FlowcontrolV1()
	// kube 1.35's mandatory objects (exempt, catch-all) and some of its
	// suggested ones, kept up to date by the server.
	for _, name := range []string{"exempt", "probes", "catch-all", "global-default", "system-leader-election", "kube-controller-manager", "service-accounts"} {
		fs, err := fc.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("FlowSchema %s: %v", name, err)
		} else if fs.Annotations[flowcontrolv1.AutoUpdateAnnotationKey] != "true" {
			t.Errorf("FlowSchema %s is not kept up to date: annotations %v", name, fs.Annotations)
		}
	}
	for _, name := range []string{"exempt", "catch-all", "global-default", "leader-election", "workload-high", "workload-low"} {
		if _, err := fc.PriorityLevelConfigurations().Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("PriorityLevelConfiguration %s: %v", name, err)
		}
	}
	uids := map[string]string{}
	fss, err := fc.FlowSchemas().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range fss.Items {
		uids[string(fs.UID)] = "fs/" + fs.Name
	}
	pls, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range pls.Items {
		uids[string(pl.UID)] = "pl/" + pl.Name
	}
	classified := func(resp *http.Response) string {
		return uids[resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID")] + " " + uids[resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")]
	}

	// Two users with read access to the namespace, reached by impersonation.
	// (A Role of its own: the aggregated view role is filled by
	// kube-controller-manager, which a bare kube-apiserver lacks.)
	if _, err := cs.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{
		ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		Rules:      []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"configmaps"}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "readers"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "Role", Name: "readers"},
		Subjects: []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "flooder"},
			{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "calm"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%03d", i)},
			Data: map[string]string{"k": fmt.Sprintf("%01000d", i)}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	as := func(user string) (*http.Client, string) {
		cfg := tg.restConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		return hc, cfg.Host
	}
	get := func(hc *http.Client, url string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	admin, host := as("")
	anonymous := anonymousClient(t, tg)
	calm, _ := as("calm")
	flooder, _ := as("flooder")
	list := host + "/api/v1/namespaces/" + ns + "/configmaps"
	for _, c := range []struct {
		who  string
		hc   *http.Client
		url  string
		want string
	}{
		{"system:masters", admin, list, "fs/exempt pl/exempt"},
		{"a health probe", anonymous, host + "/readyz", "fs/probes pl/exempt"},
		// global-default takes unauthenticated requests too, before
		// catch-all.
		{"an anonymous request", anonymous, host + "/api/v1/namespaces/" + ns + "/configmaps", "fs/global-default pl/global-default"},
		{"an ordinary user", calm, list, "fs/global-default pl/global-default"},
	} {
		if got := classified(get(c.hc, c.url)); got != c.want {
			t.Errorf("%s was classified as %q, want %q", c.who, got, c.want)
		}
	}

	// A tiny priority level that rejects what it cannot serve, and a
	// FlowSchema sending the flooder's configmap requests to it.
	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "conformance-tiny-" + ns},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](1), LendablePercent: ptr.To[int32](0),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.PriorityLevelConfigurations().Delete(context.Background(), pl.Name, metav1.DeleteOptions{})
	fs, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "conformance-flooder-" + ns},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: pl.Name},
			MatchingPrecedence: 500, DistinguisherMethod: &flowcontrolv1.FlowDistinguisherMethod{Type: flowcontrolv1.FlowDistinguisherMethodByUserType},
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "flooder"}}},
				ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{""}, Resources: []string{"configmaps"}, Namespaces: []string{ns}}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer fc.FlowSchemas().Delete(context.Background(), fs.Name, metav1.DeleteOptions{})
	want := "fs/" + fs.Name + " pl/" + pl.Name
	uids[string(fs.UID)], uids[string(pl.UID)] = "fs/"+fs.Name, "pl/"+pl.Name
	waitFor(t, "the flooder classified into the new level", waitDeadline, func() (bool, string) {
		got := classified(get(flooder, list))
		return got == want, got
	})
	waitFor(t, "the new FlowSchema's status", waitDeadline, func() (bool, string) {
		cur, err := fc.FlowSchemas().Get(ctx, fs.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		for _, c := range cur.Status.Conditions {
			if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
				return c.Status == flowcontrolv1.ConditionFalse && c.Reason == "Found", fmt.Sprint(c)
			}
		}
		return false, fmt.Sprint(cur.Status.Conditions)
	})

	// The flood: 48 clients listing as fast as they can for 4 s; the calm
	// user reads one list after another meanwhile.
	var rejected, served, retryAfter atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := 0; i < 48; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				req, _ := http.NewRequestWithContext(ctx, http.MethodGet, list, nil)
				resp, err := flooder.Do(req)
				if err != nil {
					continue
				}
				resp.Body.Close()
				switch resp.StatusCode {
				case http.StatusTooManyRequests:
					rejected.Add(1)
					if resp.Header.Get("Retry-After") != "" {
						retryAfter.Add(1)
					}
				case http.StatusOK:
					served.Add(1)
				}
			}
		}()
	}
	var latencies []time.Duration
	var calmFailures []string
	end := time.Now().Add(4 * time.Second)
	for time.Now().Before(end) {
		start := time.Now()
		resp := get(calm, list)
		latencies = append(latencies, time.Since(start))
		if resp.StatusCode != http.StatusOK {
			calmFailures = append(calmFailures, resp.Status)
		}
	}
	close(stop)
	wg.Wait()
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	p := func(q float64) time.Duration { return latencies[min(len(latencies)-1, int(float64(len(latencies))*q))] }
	t.Logf("during the flood: the calm user's %d lists p50 %v p99 %v; the flooder served %d, refused %d",
		len(latencies), p(0.5), p(0.99), served.Load(), rejected.Load())
	if len(calmFailures) > 0 {
		t.Errorf("the calm user was refused during the flood: %v", calmFailures)
	}
	if rejected.Load() == 0 {
		t.Errorf("the flooder's level (one share, reject) refused nothing of %d requests", served.Load())
	} else if retryAfter.Load() != rejected.Load() {
		t.Errorf("%d of %d refusals carried Retry-After", retryAfter.Load(), rejected.Load())
	}
}

// anonymousClient trusts the target's CA and presents no credentials.
func anonymousClient(t *testing.T, tg *target) *http.Client {
	t.Helper()
	cfg := rest.AnonymousClientConfig(tg.restConfig())
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return hc
}

// TestPriorityAndFairnessReplicas: two replicas on one PostgreSQL or
// MariaDB share one flow-control configuration. Both keep kube's objects
// in place without fighting over them, a FlowSchema made on one replica
// classifies requests on the other, and its status is kept by both as
// one: Dangling while its priority level is missing, Found once it is
// made, with one status manager.
func TestPriorityAndFairnessReplicas(t *testing.T) {
	forEachSharedDatabase(t, func(t *testing.T, b backend) {
		flowControlReplicasScenario(t, startReplicas(t, b, 2))
	})
}

func flowControlReplicasScenario(t *testing.T, tgs []*target) {
	ctx := testContext(t, 2*time.Minute)
	one, two := tgs[0].clientset(t).FlowcontrolV1(), tgs[1].clientset(t).FlowcontrolV1()
	name := "conformance-replicas"
	fs, err := one.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: name},
			MatchingPrecedence: 600,
			Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
				Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "replica-user"}}},
				NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}},
			}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dangling := func(c flowcontrolv1client, want flowcontrolv1.ConditionStatus, reason string) {
		t.Helper()
		waitFor(t, "FlowSchema Dangling="+string(want), waitDeadline, func() (bool, string) {
			cur, err := c.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			for _, cond := range cur.Status.Conditions {
				if cond.Type == flowcontrolv1.FlowSchemaConditionDangling {
					return cond.Status == want && cond.Reason == reason, fmt.Sprint(cond)
				}
			}
			return false, fmt.Sprint(cur.Status.Conditions)
		})
	}
	dangling(two, flowcontrolv1.ConditionTrue, "NotFound")
	pl, err := two.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited,
			Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{NominalConcurrencyShares: ptr.To[int32](5),
				LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeReject}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dangling(one, flowcontrolv1.ConditionFalse, "Found")
	// Both replicas classify the user's requests into the new schema.
	for i, tg := range tgs {
		cfg := tg.restConfig()
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "replica-user"}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		waitFor(t, fmt.Sprintf("replica %d classifying into the new schema", i), waitDeadline, func() (bool, string) {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Host+"/version", nil)
			resp, err := hc.Do(req)
			if err != nil {
				return false, err.Error()
			}
			resp.Body.Close()
			fsUID, plUID := resp.Header.Get("X-Kubernetes-PF-FlowSchema-UID"), resp.Header.Get("X-Kubernetes-PF-PriorityLevel-UID")
			return fsUID == string(fs.UID) && plUID == string(pl.UID), fsUID + " " + plUID
		})
	}
	// One manager of the status, and kube's objects written once: the
	// replicas agree rather than take turns.
	cur, err := one.FlowSchemas().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var status []string
	for _, mf := range cur.ManagedFields {
		if mf.Subresource == "status" {
			status = append(status, mf.Manager)
		}
	}
	if len(status) != 1 || status[0] != "api-priority-and-fairness-config-consumer-v1" {
		t.Errorf("status managers %v, want kube's config consumer once", status)
	}
	for _, c := range []flowcontrolv1client{one, two} {
		exempt, err := c.FlowSchemas().Get(ctx, "exempt", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if exempt.Generation != 1 {
			t.Errorf("the mandatory exempt FlowSchema was rewritten: generation %d", exempt.Generation)
		}
	}
}

// flowcontrolv1client is the typed flowcontrol client both replicas give.
type flowcontrolv1client = flowcontrolv1typed.FlowcontrolV1Interface
