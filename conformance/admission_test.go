package conformance

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// TestAdmissionPlugins: kube's default admission plugins run on the
// server's write path: LimitRanger fills a pod's resources from its
// namespace's LimitRange, PodSecurity refuses a privileged pod in a
// namespace labelled restricted (kube-apiserver's words) and warns in
// one labelled warn, and a ValidatingAdmissionPolicy with a parameter
// object, variables and a message expression denies, warns or records in
// the audit log as each of its bindings says, and a ResourceQuota stops
// 32 concurrent creators at its limit and gives room back on delete.
func TestAdmissionPlugins(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "limitranger", func(t *testing.T) { limitRangerScenario(t, tg) })
		scenario(t, tg, "podsecurity", func(t *testing.T) { podSecurityScenario(t, tg) })
		scenario(t, tg, "validatingadmissionpolicy", func(t *testing.T) { policyScenario(t, tg) })
		scenario(t, tg, "resourcequota", func(t *testing.T) { quotaScenario(t, []*target{tg}) })
	})
}

func limitRangerScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	lr := &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: "defaults"}, Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type:           corev1.LimitTypeContainer,
		Default:        corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		DefaultRequest: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		Max:            corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
	}}}}
	if _, err := cs.CoreV1().LimitRanges(ns).Create(ctx, lr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "defaulted"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	got, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	res := got.Spec.Containers[0].Resources
	if res.Limits.Cpu().String() != "500m" || res.Limits.Memory().String() != "256Mi" || res.Requests.Cpu().String() != "100m" ||
		res.Requests.Memory().String() != "256Mi" {
		t.Errorf("resources %v, want the LimitRange's defaults (requests cpu 100m, memory 256Mi; limits cpu 500m, memory 256Mi)", res)
	}
	if want := "LimitRanger plugin set: cpu, memory request for container c; cpu, memory limit for container c"; got.Annotations["kubernetes.io/limit-ranger"] != want {
		t.Errorf("annotation kubernetes.io/limit-ranger = %q, want %q", got.Annotations["kubernetes.io/limit-ranger"], want)
	}
	// Over the maximum: kube's words.
	pod.Name = "too-big"
	pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}
	_, err = cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	if want := `pods "too-big" is forbidden: maximum cpu usage per Container is 1, but limit is 2`; err == nil || err.Error() != want {
		t.Errorf("over the maximum: %v, want %q", err, want)
	}
}

func podSecurityScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	setLabels := func(labels map[string]string) {
		t.Helper()
		n, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range labels {
			n.Labels[k] = v
		}
		if _, err := cs.CoreV1().Namespaces().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// A pod with no securityContext: baseline, not restricted.
	plain := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}
	}
	// Unlabelled: privileged, as on kube-apiserver.
	if _, err := cs.CoreV1().Pods(ns).Create(ctx, plain("allowed"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("a pod where no level is set: %v", err)
	}

	// warn=restricted: admitted, with kube's warning to kubectl.
	setLabels(map[string]string{"pod-security.kubernetes.io/warn": "restricted"})
	k := newKubectl(t, tg)
	r := k.runWith(t, runOpts{stdin: podYAML("warned")}, "create", "-n", ns, "-f", "-")
	if r.code != 0 || !strings.Contains(r.stderr, `Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false)`) {
		t.Errorf("warn=restricted:\n%s", r)
	}

	// enforce=restricted: refused, with kube's words.
	setLabels(map[string]string{"pod-security.kubernetes.io/enforce": "restricted"})
	_, err := cs.CoreV1().Pods(ns).Create(ctx, plain("refused"), metav1.CreateOptions{})
	want := `pods "refused" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`
	if err == nil || err.Error() != want {
		t.Errorf("enforce=restricted:\n got %v\nwant %s", err, want)
	}
}

// podYAML is the manifest of a pod with no securityContext.
func podYAML(name string) string {
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  containers:
  - name: c
    image: registry.k8s.io/pause:3.10
`
}

func policyScenario(t *testing.T, tg *target) {
	ctx := context.Background()
	cs := tg.clientset(t)
	ns := newNamespace(t, tg)
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "limits"},
		Data: map[string]string{"max": "3"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "max-keys-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			ParamKind: &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}}}}}},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "not-the-limits", Expression: "object.metadata.name != 'limits'"}},
			Variables:       []admissionregistrationv1.Variable{{Name: "keys", Expression: "has(object.data) ? size(object.data) : 0"}},
			Validations: []admissionregistrationv1.Validation{{Expression: "variables.keys <= int(params.data.max)",
				MessageExpression: "'too many keys: ' + string(variables.keys) + ' > ' + params.data.max"}},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{{Key: "keys", ValueExpression: "string(variables.keys)"}},
		}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	// Deny last: once the policy denies, the bindings made before it are
	// in force too (each refresh compiles every binding there is).
	for _, action := range []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit, admissionregistrationv1.Warn, admissionregistrationv1.Deny} {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: strings.ToLower(string(action)) + "-" + ns},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy.Name,
				ParamRef: &admissionregistrationv1.ParamRef{Name: "limits", Namespace: ns,
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)},
				MatchResources: &admissionregistrationv1.MatchResources{
					NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
					ObjectSelector:    &metav1.LabelSelector{MatchLabels: map[string]string{"action": strings.ToLower(string(action))}}},
				ValidationActions: []admissionregistrationv1.ValidationAction{action}}}
		if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), b.Name, metav1.DeleteOptions{})
		})
	}
	// Type checking, written to the status as kube-controller-manager's
	// controller writes it: none for this policy, one for a policy naming
	// a field ConfigMaps do not have.
	bad := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "typo-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: policy.Spec.MatchConstraints,
			Validations:      []admissionregistrationv1.Validation{{Expression: "object.spec.replicas > 1"}}}}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, bad, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), bad.Name, metav1.DeleteOptions{})
	})
	waitFor(t, "the policies' type checking", 30*time.Second, func() (bool, string) {
		good, err1 := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, policy.Name, metav1.GetOptions{})
		typo, err2 := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(ctx, bad.Name, metav1.GetOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		gs, ts := good.Status, typo.Status
		done := gs.ObservedGeneration == 1 && gs.TypeChecking != nil && len(gs.TypeChecking.ExpressionWarnings) == 0 &&
			ts.ObservedGeneration == 1 && ts.TypeChecking != nil && len(ts.TypeChecking.ExpressionWarnings) == 1 &&
			ts.TypeChecking.ExpressionWarnings[0].FieldRef == "spec.validations[0].expression" &&
			strings.Contains(ts.TypeChecking.ExpressionWarnings[0].Warning, "undefined field 'spec'")
		return done, fmt.Sprintf("%+v / %+v", gs, ts)
	})

	big := func(name, action string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"action": action}},
			Data: map[string]string{"a": "1", "b": "2", "c": "3", "d": "4"}}
	}
	// Policies are compiled in the background (kube-apiserver refreshes
	// them every second): probe with dry runs until the denial shows.
	want := `configmaps "big" is forbidden: ValidatingAdmissionPolicy 'max-keys-` + ns + `' with binding 'deny-` + ns + `' denied request: too many keys: 4 > 3`
	var err error
	waitFor(t, "the policy in effect", 30*time.Second, func() (bool, string) {
		_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, big("big", "deny"), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err != nil, fmt.Sprint(err)
	})
	if err.Error() != want {
		t.Errorf("Deny:\n got %v\nwant %s", err, want)
	}
	ok := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "small", Labels: map[string]string{"action": "deny"}}, Data: map[string]string{"a": "1"}}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, ok, metav1.CreateOptions{}); err != nil {
		t.Errorf("within the limit: %v", err)
	}

	warnings := &warningCollector{}
	cfg := tg.restConfig()
	cfg.WarningHandler = warnings
	wcs := kubernetes.NewForConfigOrDie(cfg)
	if _, err := wcs.CoreV1().ConfigMaps(ns).Create(ctx, big("warned", "warn"), metav1.CreateOptions{}); err != nil {
		t.Errorf("Warn: %v", err)
	}
	if w, want := warnings.all(), "Validation failed for ValidatingAdmissionPolicy 'max-keys-"+ns+"' with binding 'warn-"+ns+"': too many keys: 4 > 3"; len(w) != 1 || w[0] != want {
		t.Errorf("Warn: warnings %q, want %q", w, want)
	}
	if _, err := wcs.CoreV1().ConfigMaps(ns).Create(ctx, big("audited", "audit"), metav1.CreateOptions{}); err != nil {
		t.Errorf("Audit: %v", err)
	}
	if len(warnings.all()) != 1 {
		t.Errorf("Audit warned: %q", warnings.all())
	}
	if tg.Proc == nil {
		return // the audit log is the server's own
	}
	var found bool
	var seen []map[string]string
	for _, e := range auditEvents(t, tg, ns) {
		if e.ObjectRef.Name == "audited" && e.Verb == "create" {
			seen = append(seen, e.Annotations)
			var failures []struct {
				Message           string   `json:"message"`
				Binding           string   `json:"binding"`
				ValidationActions []string `json:"validationActions"`
			}
			_ = json.Unmarshal([]byte(e.Annotations["validation.policy.admission.k8s.io/validation_failure"]), &failures)
			if len(failures) == 1 && failures[0].Message == "too many keys: 4 > 3" && failures[0].Binding == "audit-"+ns &&
				e.Annotations["max-keys-"+ns+"/keys"] == "4" {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("the audit log has no validation_failure and keys annotations for the audited ConfigMap; its create events' annotations: %v", seen)
	}
}

// TestQuotaAcrossReplicas: two replicas of one database admit 32
// concurrent creators against one quota: exactly its limit of pods and
// secrets is created, the rest refused with kube-apiserver's words, and a
// deletion gives the room back.
func TestQuotaAcrossReplicas(t *testing.T) {
	// SQLite: TestAdmissionPlugins/resourcequota covers one process.
	forEachSharedDatabase(t, func(t *testing.T, b backend) {
		quotaScenario(t, startReplicas(t, b, 2))
	})
}

func quotaScenario(t *testing.T, tgs []*target) {
	ctx := context.Background()
	var clients []kubernetes.Interface
	for _, tg := range tgs {
		clients = append(clients, tg.clientset(t))
	}
	cs := clients[0]
	ns := newNamespace(t, tgs[0])
	waitFor(t, "the default ServiceAccount", 30*time.Second, func() (bool, string) {
		_, err := cs.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	const pods, secrets = 5, 3
	used := func(name corev1.ResourceName) string {
		got, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		v, ok := got.Status.Used[name]
		if !ok {
			return "unset"
		}
		return v.String()
	}
	// A quota binds once the quota controller has written its status and
	// a replica's watch has brought that status (as with kube-apiservers
	// and their informers): it starts with no room, and the burst waits
	// until every replica refuses for it, then sees the room it is given.
	q := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{
		corev1.ResourcePods: resource.MustParse("0"), "count/secrets": resource.MustParse("0")}}}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Create(ctx, q, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := func(c kubernetes.Interface) error {
		_, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe"},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}},
			metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return err
	}
	for i, c := range clients {
		waitFor(t, fmt.Sprintf("replica %d refusing for the quota", i), 30*time.Second, func() (bool, string) {
			err := probe(c)
			return apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"), fmt.Sprint(err)
		})
	}
	cur, err := cs.CoreV1().ResourceQuotas(ns).Get(ctx, "q", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Hard = corev1.ResourceList{corev1.ResourcePods: resource.MustParse(fmt.Sprint(pods)), "count/secrets": resource.MustParse(fmt.Sprint(secrets))}
	if _, err := cs.CoreV1().ResourceQuotas(ns).Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, c := range clients {
		waitFor(t, fmt.Sprintf("replica %d seeing the room", i), 30*time.Second, func() (bool, string) {
			err := probe(c)
			return err == nil, fmt.Sprint(err)
		})
	}
	if u := used(corev1.ResourcePods); u != "0" {
		t.Fatalf("pods used before the burst: %s", u)
	}

	// 32 creators, alternating replicas, each until refused by the quota.
	create := func(c kubernetes.Interface, kind string, i, j int) error {
		name := fmt.Sprintf("%s-%d-%d", kind, i, j)
		var err error
		if kind == "pod" {
			_, err = c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}}}}, metav1.CreateOptions{})
		} else {
			_, err = c.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
		}
		return err
	}
	var mu sync.Mutex
	created := map[string]int{}
	refusals := map[string]string{}
	var wg sync.WaitGroup
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := clients[i%len(clients)]
			for _, kind := range []string{"pod", "secret"} {
				for j := 0; j < 20; j++ {
					err := create(c, kind, i, j)
					mu.Lock()
					switch {
					case err == nil:
						created[kind]++
					case apierrors.IsForbidden(err) && strings.Contains(err.Error(), "exceeded quota"):
						refusals[kind] = err.Error()
						j = 20
					default:
						// Another admission raced for the quota and kube's
						// evaluator gave up: try again, as controllers do.
					}
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if created["pod"] != pods || created["secret"] != secrets {
		t.Errorf("created %d pods and %d secrets, want exactly %d and %d", created["pod"], created["secret"], pods, secrets)
	}
	list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != pods {
		t.Errorf("stored pods: %d (%v), want %d", len(list.Items), err, pods)
	}
	if !strings.Contains(refusals["pod"], "is forbidden: exceeded quota: q, requested: pods=1, used: pods=5, limited: pods=5") {
		t.Errorf("a refused pod: %q", refusals["pod"])
	}
	if !strings.Contains(refusals["secret"], "is forbidden: exceeded quota: q, requested: count/secrets=1, used: count/secrets=3, limited: count/secrets=3") {
		t.Errorf("a refused secret: %q", refusals["secret"])
	}

	// A deletion frees room (the quota controller recounts).
	if err := cs.CoreV1().Pods(ns).Delete(ctx, list.Items[0].Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod's room given back", 30*time.Second, func() (bool, string) {
		return used(corev1.ResourcePods) == fmt.Sprint(pods-1), used(corev1.ResourcePods)
	})
	// Every replica admits from its own cache of the quota, which its
	// watch brings up to date (kube-apiservers do the same).
	waitFor(t, "a pod admitted after the deletion", 30*time.Second, func() (bool, string) {
		err := create(clients[len(clients)-1], "pod", 99, 0)
		return err == nil, fmt.Sprint(err)
	})
}
