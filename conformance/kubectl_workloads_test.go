package conformance

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// applicationManifest is what a user's first `kubectl apply -f` holds:
// one object of every common kind, as kubectl's examples and `helm
// create` write them.
const applicationManifest = `apiVersion: v1
kind: ServiceAccount
metadata:
  name: web
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: web-config
data:
  greeting: hello
---
apiVersion: v1
kind: Secret
metadata:
  name: web-secret
stringData:
  password: s3cret
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels: {app: web}
spec:
  replicas: 2
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      serviceAccountName: web
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - {name: http, containerPort: 80}
        env:
        - name: GREETING
          valueFrom:
            configMapKeyRef: {name: web-config, key: greeting}
        resources:
          requests: {cpu: 100m, memory: 64Mi}
---
apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - {name: http, port: 80, targetPort: http}
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata:
  name: web
spec:
  rules:
  - host: web.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend:
          service: {name: web, port: {number: 80}}
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource:
      name: cpu
      target: {type: Utilization, averageUtilization: 80}
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata:
  name: web
spec:
  minAvailable: 1
  selector:
    matchLabels: {app: web}
---
apiVersion: apps/v1
kind: StatefulSet
metadata:
  name: db
spec:
  serviceName: db
  replicas: 1
  selector:
    matchLabels: {app: db}
  template:
    metadata:
      labels: {app: db}
    spec:
      containers:
      - {name: db, image: postgres:17}
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources:
        requests: {storage: 1Gi}
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: cache
spec:
  accessModes: [ReadWriteOnce]
  resources:
    requests: {storage: 1Gi}
---
apiVersion: apps/v1
kind: DaemonSet
metadata:
  name: agent
spec:
  selector:
    matchLabels: {app: agent}
  template:
    metadata:
      labels: {app: agent}
    spec:
      containers:
      - {name: agent, image: busybox:1.36}
---
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - {name: migrate, image: busybox:1.36, command: [sh, -c, "true"]}
---
apiVersion: batch/v1
kind: CronJob
metadata:
  name: report
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers:
          - {name: report, image: busybox:1.36}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata:
  name: deny-all
spec:
  podSelector: {}
  policyTypes: [Ingress]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: web-reader
subjects:
- {kind: ServiceAccount, name: web}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: reader}
`

// applicationKinds are the manifest's objects as `kubectl apply` names
// them ("<resource>.<group>/<name> created").
var applicationKinds = []string{
	"serviceaccount/web", "configmap/web-config", "secret/web-secret", "deployment.apps/web", "service/web",
	"ingress.networking.k8s.io/web", "horizontalpodautoscaler.autoscaling/web", "poddisruptionbudget.policy/web",
	"statefulset.apps/db", "persistentvolumeclaim/cache", "daemonset.apps/agent", "job.batch/migrate",
	"cronjob.batch/report", "networkpolicy.networking.k8s.io/deny-all", "role.rbac.authorization.k8s.io/reader",
	"rolebinding.rbac.authorization.k8s.io/web-reader",
}

// reappliedAsConfigured are the objects kubectl reports "configured" on
// every apply of an unchanged manifest against kube-apiserver too: its
// three-way patch is never empty for them.
var reappliedAsConfigured = map[string]string{
	"secret/web-secret":              "stringData is write-only: the server moves it into data, so kubectl sends it again",
	"poddisruptionbudget.policy/web": "spec.selector has patchStrategy replace: the computed patch always holds it",
	"statefulset.apps/db":            "volumeClaimTemplates is a list without merge key, and the server's defaults (volumeMode, status.phase) make it differ",
}

// kubectlApplyApplication: the manifest applies (created, then unchanged,
// then configured after an edit), every object reads back, and `get -o
// wide` prints kube's columns for the workload kinds.
func kubectlApplyApplication(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	f := e.writeFile(t, "app.yaml", applicationManifest)
	out := e.k.ok(t, "apply", "-n", ns, "-f", f)
	for _, k := range applicationKinds {
		if !strings.Contains(out, k+" created") {
			t.Errorf("apply did not report %s created:\n%s", k, out)
		}
	}
	out = e.k.ok(t, "apply", "-n", ns, "-f", f)
	for _, k := range applicationKinds {
		want := k + " unchanged"
		if _, ok := reappliedAsConfigured[k]; ok {
			want = k + " configured"
		}
		if !strings.Contains(out, want) {
			t.Errorf("second apply did not report %q:\n%s", want, out)
		}
	}
	edited := strings.Replace(applicationManifest, "replicas: 2", "replicas: 4", 1)
	out = e.k.ok(t, "apply", "-n", ns, "-f", e.writeFile(t, "app2.yaml", edited))
	if !strings.Contains(out, "deployment.apps/web configured") || !strings.Contains(out, "service/web unchanged") {
		t.Errorf("apply of the edited manifest:\n%s", out)
	}
	d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 4 || d.Generation != 2 || d.Spec.Strategy.Type != "RollingUpdate" || d.Spec.Template.Spec.Containers[0].TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("deployment after apply: replicas %d generation %d strategy %q terminationMessagePath %q; want 4, 2 and kube's defaults",
			*d.Spec.Replicas, d.Generation, d.Spec.Strategy.Type, d.Spec.Template.Spec.Containers[0].TerminationMessagePath)
	}

	for _, c := range []struct {
		resource string
		header   []string
		row      map[string]string
	}{
		{"deployments", []string{"NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
			map[string]string{"NAME": "web", "READY": "0/4", "CONTAINERS": "web", "IMAGES": "nginx:1.27", "SELECTOR": "app=web"}},
		{"ingresses", []string{"NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"},
			map[string]string{"NAME": "web", "CLASS": "<none>", "HOSTS": "web.example.com", "PORTS": "80"}},
		{"poddisruptionbudgets", []string{"NAME", "MIN AVAILABLE", "MAX UNAVAILABLE", "ALLOWED DISRUPTIONS", "AGE"},
			map[string]string{"NAME": "web", "MIN AVAILABLE": "1", "MAX UNAVAILABLE": "N/A", "ALLOWED DISRUPTIONS": "0"}},
		{"horizontalpodautoscalers", []string{"NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"},
			map[string]string{"NAME": "web", "REFERENCE": "Deployment/web", "MINPODS": "1", "MAXPODS": "5", "REPLICAS": "0"}},
		{"cronjobs", []string{"NAME", "SCHEDULE", "TIMEZONE", "SUSPEND", "ACTIVE", "LAST SCHEDULE", "AGE", "CONTAINERS", "IMAGES", "SELECTOR"},
			map[string]string{"NAME": "report", "SCHEDULE": "*/5 * * * *", "SUSPEND": "False", "ACTIVE": "0", "LAST SCHEDULE": "<none>", "IMAGES": "busybox:1.36"}},
		{"persistentvolumeclaims", []string{"NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS", "VOLUMEATTRIBUTESCLASS", "AGE", "VOLUMEMODE"},
			map[string]string{"NAME": "cache", "STATUS": "Pending", "VOLUMEMODE": "Filesystem"}},
	} {
		header, rows := parseTable(t, e.k.ok(t, "get", c.resource, "-n", ns, "-o", "wide"))
		if strings.Join(header, "|") != strings.Join(c.header, "|") {
			t.Errorf("get %s -o wide: columns %q, want %q", c.resource, header, c.header)
			continue
		}
		if len(rows) != 1 {
			t.Errorf("get %s -o wide: %d rows, want 1", c.resource, len(rows))
			continue
		}
		for col, want := range c.row {
			if got := rows[0][col]; got != want {
				t.Errorf("get %s -o wide: %s is %q, want %q", c.resource, col, got, want)
			}
		}
	}

	out = e.k.ok(t, "describe", "deployment", "web", "-n", ns)
	for _, want := range []string{"Name:", "web", "Replicas:", "4 desired", "StrategyType:", "RollingUpdate", "nginx:1.27"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe deployment: %q missing:\n%s", want, out)
		}
	}

	out = e.k.ok(t, "delete", "-n", ns, "-f", f)
	for _, k := range applicationKinds {
		kind, name, _ := strings.Cut(k, "/")
		if want := kind + ` "` + name + `" deleted`; !strings.Contains(out, want) {
			t.Errorf("delete -f did not report %q:\n%s", want, out)
		}
	}
	if left := e.k.ok(t, "get", "all", "-n", ns, "-o", "name"); strings.TrimSpace(left) != "" {
		t.Errorf("objects left after delete -f:\n%s", left)
	}
}

// kubectlScale: `kubectl scale` writes through the scale subresource, and
// its --current-replicas precondition is checked.
func kubectlScale(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	f := e.writeFile(t, "deploy.yaml", `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - {name: web, image: nginx:1.27}
`)
	e.k.ok(t, "apply", "-n", ns, "-f", f)
	if out := e.k.ok(t, "scale", "-n", ns, "deployment/web", "--replicas=3"); !strings.Contains(out, "deployment.apps/web scaled") {
		t.Errorf("kubectl scale printed:\n%s", out)
	}
	d, err := e.cs.AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 3 || d.Generation != 2 {
		t.Errorf("after scale: replicas %d generation %d; want 3 and 2", *d.Spec.Replicas, d.Generation)
	}
	r := e.k.fails(t, runOpts{}, "scale", "-n", ns, "deployment/web", "--current-replicas=1", "--replicas=5")
	if !strings.Contains(r.stderr, "Expected replicas to be 1, was 3") {
		t.Errorf("scale with a wrong --current-replicas:\n%s", r)
	}
	sc, err := e.cs.AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil || sc.Spec.Replicas != 3 || sc.Status.Selector != "app=web" {
		t.Errorf("client-go GetScale: %+v, %v", sc, err)
	}
}

// kubectlAuth: whoami names the kubeconfig's user; can-i asks the review
// resources, which RBAC answers yes for the admin.
func kubectlAuth(t *testing.T, e *kubectlEnv) {
	out := e.k.ok(t, "auth", "whoami", "-o", "json")
	if !strings.Contains(out, `"kind": "SelfSubjectReview"`) || !strings.Contains(out, `"username": "tabula-admin"`) || !strings.Contains(out, "system:masters") {
		t.Errorf("auth whoami:\n%s", out)
	}
	for _, args := range [][]string{
		{"create", "deployments"}, {"delete", "nodes"}, {"get", "/healthz"}, {"list", "secrets", "-n", "kube-system"},
	} {
		if out := e.k.ok(t, append([]string{"auth", "can-i"}, args...)...); strings.TrimSpace(out) != "yes" {
			t.Errorf("auth can-i %v: %q; want yes", args, out)
		}
	}
	// kubectl create token: the token authenticates as the account.
	ns := e.ns(t)
	e.k.ok(t, "create", "serviceaccount", "bot", "-n", ns)
	token := strings.TrimSpace(e.k.ok(t, "create", "token", "bot", "-n", ns))
	cfg := e.tg.restConfig()
	cfg.CertData, cfg.KeyData, cfg.CertFile, cfg.KeyFile, cfg.BearerToken = nil, nil, "", "", token
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ssr, err := cs.AuthenticationV1().SelfSubjectReviews().Create(context.Background(), &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil || ssr.Status.UserInfo.Username != "system:serviceaccount:"+ns+":bot" {
		t.Errorf("whoami with the account's token: %+v, %v", ssr, err)
	}

	// The admin is in system:masters, bound to cluster-admin: everything,
	// listed first, beside what every authenticated user may do.
	header, rows := parseTable(t, e.k.ok(t, "auth", "can-i", "--list", "-n", "default"))
	star := slices.ContainsFunc(rows, func(r map[string]string) bool { return r["Non-Resource URLs"] == "[*]" && r["Verbs"] == "[*]" })
	if strings.Join(header, "|") != "Resources|Non-Resource URLs|Resource Names|Verbs" || len(rows) < 2 || rows[0]["Resources"] != "*.*" || rows[0]["Verbs"] != "[*]" || !star {
		t.Errorf("auth can-i --list: %q %v", header, rows)
	}
}

// kubectlNodeless: a Pod no node runs has an empty log, and exec says it
// has no host, as kube-apiserver answers for an unscheduled Pod.
func kubectlNodeless(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	e.k.ok(t, "run", "-n", ns, "p", "--image=busybox:1.36", "--", "sleep", "1000")
	if out := e.k.ok(t, "logs", "-n", ns, "p"); out != "" {
		t.Errorf("logs of a Pod no node runs: %q; want nothing", out)
	}
	r := e.k.fails(t, runOpts{}, "exec", "-n", ns, "p", "--", "ls")
	if !strings.Contains(r.stderr, "pod p does not have a host assigned") {
		t.Errorf("exec into a Pod no node runs:\n%s", r)
	}
}

// kubectlCascade: a Deployment owning a ReplicaSet owning Pods (written
// here as the controllers would write them) goes with everything it owns
// on a foreground delete, dependents first; an orphaning delete leaves
// them without the owner reference.
func kubectlCascade(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	ctx := context.Background()
	chain := func(name string) {
		t.Helper()
		d, err := e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: appsv1.DeploymentSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
					Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1.27"}}}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		yes := true
		owner := func(kind, n string, uid types.UID) []metav1.OwnerReference {
			return []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: n, UID: uid, Controller: &yes, BlockOwnerDeletion: &yes}}
		}
		rs, err := e.cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-rs", OwnerReferences: owner("Deployment", d.Name, d.UID)},
			Spec:       appsv1.ReplicaSetSpec{Selector: d.Spec.Selector, Template: d.Spec.Template},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{"a", "b"} {
			if _, err := e.cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: name + "-" + p, Labels: map[string]string{"app": name}, OwnerReferences: owner("ReplicaSet", rs.Name, rs.UID)},
				Spec:       d.Spec.Template.Spec,
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	chain("fg")
	if out := e.k.ok(t, "delete", "-n", ns, "deployment/fg", "--cascade=foreground"); !strings.Contains(out, `deployment.apps "fg" deleted`) {
		t.Errorf("delete --cascade=foreground: %s", out)
	}
	waitFor(t, "the foreground delete takes the ReplicaSet and Pods", waitDeadline, func() (bool, string) {
		rss, err1 := e.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
		pods, err2 := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err1 != nil || err2 != nil {
			return false, fmt.Sprint(err1, err2)
		}
		return len(rss.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d replicasets, %d pods", len(rss.Items), len(pods.Items))
	})

	chain("orphan")
	e.k.ok(t, "delete", "-n", ns, "deployment/orphan", "--cascade=orphan")
	waitFor(t, "the orphaned ReplicaSet loses its owner", waitDeadline, func() (bool, string) {
		rs, err := e.cs.AppsV1().ReplicaSets(ns).Get(ctx, "orphan-rs", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return len(rs.OwnerReferences) == 0, fmt.Sprint(rs.OwnerReferences)
	})
	if pods, err := e.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{}); err != nil || len(pods.Items) != 2 {
		t.Errorf("pods of the orphaned ReplicaSet: %v %v; want both kept", err, pods)
	}
}

// kubectlRolloutHistory: `kubectl rollout history` reads a Deployment's
// revisions from the ReplicaSets it controls (written here as the
// deployment controller would, one per template) and prints one
// revision's template.
func kubectlRolloutHistory(t *testing.T, e *kubectlEnv) {
	ns := e.ns(t)
	ctx := context.Background()
	d, err := e.cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1.27"}}}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	yes := true
	for rev, image := range map[string]string{"1": "nginx:1.26", "2": "nginx:1.27"} {
		hash := "h" + rev
		tmpl := d.Spec.Template.DeepCopy()
		tmpl.Labels["pod-template-hash"] = hash
		tmpl.Spec.Containers[0].Image = image
		annotations := map[string]string{"deployment.kubernetes.io/revision": rev}
		if rev == "2" {
			annotations["kubernetes.io/change-cause"] = "kubectl set image deployment/web web=nginx:1.27"
		}
		if _, err := e.cs.AppsV1().ReplicaSets(ns).Create(ctx, &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: "web-" + hash, Labels: tmpl.Labels, Annotations: annotations,
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "Deployment", Name: d.Name, UID: d.UID, Controller: &yes}}},
			Spec: appsv1.ReplicaSetSpec{
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web", "pod-template-hash": hash}},
				Template: *tmpl,
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	out := e.k.ok(t, "rollout", "history", "-n", ns, "deployment/web")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], "deployment.apps/web") || strings.Join(strings.Fields(lines[1]), " ") != "REVISION CHANGE-CAUSE" ||
		strings.Join(strings.Fields(lines[2]), " ") != "1 <none>" ||
		strings.Join(strings.Fields(lines[3]), " ") != "2 kubectl set image deployment/web web=nginx:1.27" {
		t.Errorf("rollout history printed:\n%s", out)
	}
	out = e.k.ok(t, "rollout", "history", "-n", ns, "deployment/web", "--revision=1")
	if !strings.Contains(out, "revision #1") || !strings.Contains(out, "nginx:1.26") || strings.Contains(out, "nginx:1.27") {
		t.Errorf("rollout history --revision=1 printed:\n%s", out)
	}
}
