package conformance

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The cluster members the suite runs on Tabula: kube-controller-manager
// and kube-scheduler as testdata/cluster pins them (k8s.io/kubernetes
// v1.35.4), and kwok standing in for kubelets.
const kwokModule = "sigs.k8s.io/kwok/cmd/kwok@v0.7.0"

var clusterBin suiteArtifact

// kubeVersionFlags stamp the version a release build carries: built from
// the module proxy, kube's programs would report v0.0.0-master, which
// clients (the e2e suite among them) cannot parse.
const kubeVersionFlags = "-X k8s.io/component-base/version.gitVersion=v1.35.4 -X k8s.io/component-base/version.gitMajor=1" +
	" -X k8s.io/component-base/version.gitMinor=35 -X k8s.io/component-base/version.gitTreeState=clean"

// clusterBinaries builds the three once per test binary into one
// directory; the Go build cache makes later runs a link.
func clusterBinaries() (string, error) {
	return clusterBin.get(func(dir string) (string, error) {
		src, err := filepath.Abs(filepath.Join("testdata", "cluster"))
		if err != nil {
			return "", err
		}
		out := filepath.Join(dir, "cluster-bin")
		if _, err := goOutside(src, nil, "build", "-ldflags", kubeVersionFlags, "-o", out+string(filepath.Separator),
			"k8s.io/kubernetes/cmd/kube-controller-manager", "k8s.io/kubernetes/cmd/kube-scheduler"); err != nil {
			return "", err
		}
		if _, err := goOutside(dir, []string{"GOBIN=" + out}, "install", kwokModule); err != nil {
			return "", err
		}
		return out, nil
	})
}

// member is one upstream process of a cluster; its output goes to a log
// file whose end is shown when the test fails.
type member struct {
	name, log string
	cmd       *exec.Cmd
	exited    chan struct{}
}

func startMember(t testing.TB, dir, name, bin string, env []string, args ...string) *member {
	t.Helper()
	m := &member{name: name, log: filepath.Join(dir, name+".log"), exited: make(chan struct{})}
	f, err := os.Create(m.log)
	if err != nil {
		t.Fatal(err)
	}
	m.cmd = exec.Command(bin, args...)
	m.cmd.Stdout, m.cmd.Stderr = f, f
	m.cmd.Env = append(os.Environ(), env...)
	m.cmd.Dir = dir
	m.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := spawn(m.cmd); err != nil {
		f.Close()
		t.Fatalf("starting %s: %v", name, err)
	}
	go func() {
		_ = m.cmd.Wait()
		f.Close()
		close(m.exited)
	}()
	t.Cleanup(func() {
		_ = m.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-m.exited:
		case <-time.After(stopDeadline):
			_ = m.cmd.Process.Kill()
			<-m.exited
		}
		if t.Failed() {
			t.Logf("the end of %s's log:\n%s", name, tailFile(m.log, 30))
		}
	})
	return m
}

// startServing starts a member serving on a --secure-port of its own and
// waits until it says it serves there. freePort's port was free when
// chosen, not necessarily when the member binds it: another process can
// take it in between (kube-controller-manager once exited with "bind:
// address already in use" and the suite's rollouts then waited for a
// controller that never ran). Such a member is started again on a new
// port.
func startServing(t testing.TB, dir, name, bin string, env []string, args ...string) *member {
	t.Helper()
	for attempt := 1; ; attempt++ {
		port := freePortArg(t)
		m := startMember(t, dir, name, bin, env, append(append([]string(nil), args...), "--secure-port", port)...)
		serving := "Serving securely on 127.0.0.1:" + port
		exited := false
		waitFor(t, name+" serving on "+port, clusterWait, func() (bool, string) {
			select {
			case <-m.exited:
				exited = true
				return true, ""
			default:
			}
			b, _ := os.ReadFile(m.log)
			return strings.Contains(string(b), serving), "not serving yet"
		})
		if !exited {
			return m
		}
		b, _ := os.ReadFile(m.log)
		if attempt == 3 || !strings.Contains(string(b), "address already in use") {
			t.Fatalf("%s exited before serving:\n%s", name, tailFile(m.log, 30))
		}
		t.Logf("%s lost port %s to another process; starting it on another", name, port)
	}
}

func tailFile(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	all := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(all) > lines {
		all = all[len(all)-lines:]
	}
	return strings.Join(all, "\n")
}

// TestCluster runs a small cluster on Tabula, on every database, with
// unmodified upstream members: kube-controller-manager, kube-scheduler
// and kwok's simulated kubelets (node heartbeats through Leases, pods
// that start, Jobs' pods that finish, logs and exec served as a kubelet
// serves them). On PostgreSQL two Tabula replicas share the database:
// kube-controller-manager and kubectl use one, the scheduler and the
// kubelets the other. Tabula's own copies of kcm's controllers stay on,
// so both sets run side by side as a default install would have them.
func TestCluster(t *testing.T) {
	if !ownServerOnly(t, "the cluster needs servers the suite starts, with their PKI files") {
		return
	}
	bins, err := clusterBinaries()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			recordOutcome(t, scenarioRow(t, ""), b.name)
			c := startCluster(t, b, bins)
			c.run(t, b.name)
		})
	}
}

// cluster is Tabula with its members; tg and k are the replica kubectl
// and the test's clients use.
type cluster struct {
	tg   *target
	k    *kubectl
	cs   *kubernetes.Clientset
	logs string // the file kwok serves as every container's log
}

func startCluster(t *testing.T, b backend, bins string) *cluster {
	dir := t.TempDir()
	db := b.database(t, dir)
	replicas := 1
	if b.name == "postgres" {
		replicas = 2
	}
	// As kubeadm sets them up: kcm signs legacy tokens with an RSA sa.key
	// and the API server verifies them with its sa.pub, here beside the
	// key Tabula signs its own tokens with.
	saKey, saPub := writeRSAKeyPair(t, dir, "sa-rsa")
	var procs []*tabulaProcess
	for i := range replicas {
		// kubeadm's flags, for the TLS bootstrap and legacy token steps.
		args := []string{"--enable-bootstrap-token-auth", "--service-account-key-file", saPub}
		if replicas > 1 {
			args = append(args, "--token", "cluster-test-token")
		}
		p, err := startTabula(t, serveOptions{DB: db, DataDir: filepath.Join(dir, "tabula-"+strconv.Itoa(i)), Args: args})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("warnings and errors in replica %d's log:%s", i, p.logProblems())
			}
			_ = p.Stop(stopDeadline)
		})
		procs = append(procs, p)
	}
	first, last := procs[0], procs[len(procs)-1]
	pki := filepath.Join(first.Options.DataDir, "pki")

	// kcm and the scheduler act as themselves under Node,RBAC, with the
	// kubeconfigs Tabula writes for them (kubeadm's controller-manager.conf
	// and scheduler.conf) and only kube's bootstrap policy; kcm's
	// controllers each act as their own ServiceAccount.
	kc := filepath.Join(first.Options.DataDir, "controller-manager.kubeconfig")
	startServing(t, dir, "kube-controller-manager", filepath.Join(bins, "kube-controller-manager"), nil,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1", "--use-service-account-credentials=true",
		"--service-account-private-key-file", saKey, "--root-ca-file", filepath.Join(pki, "ca.crt"),
		"--cluster-signing-cert-file", filepath.Join(pki, "ca.crt"), "--cluster-signing-key-file", filepath.Join(pki, "ca.key"),
		// Quick to notice a silent node, so the test need not wait kcm's 50s.
		"--node-monitor-period", "2s", "--node-monitor-grace-period", "10s")
	kc = filepath.Join(last.Options.DataDir, "scheduler.kubeconfig")
	startServing(t, dir, "kube-scheduler", filepath.Join(bins, "kube-scheduler"), nil,
		"--kubeconfig", kc, "--authentication-kubeconfig", kc, "--authorization-kubeconfig", kc,
		"--bind-address", "127.0.0.1")

	// kwok serves kubelets' logs and exec for its nodes at --node-ip and
	// --node-port, over TLS (the replica's serving certificate names
	// 127.0.0.1); logs come from one CRI-format file, exec runs the
	// command here.
	logs := filepath.Join(dir, "container.log")
	if err := os.WriteFile(logs, []byte("2026-01-01T00:00:00.000000000Z stdout F hello from kwok\n2026-01-01T00:00:01.000000000Z stdout F second line\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "kwok.yaml")
	if err := os.WriteFile(config, []byte(fmt.Sprintf(`apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterLogs
metadata: {name: all}
spec:
  logs:
  - logsFile: %s
---
apiVersion: kwok.x-k8s.io/v1alpha1
kind: ClusterExec
metadata: {name: all}
spec:
  execs:
  - local: {}
`, logs)), 0o644); err != nil {
		t.Fatal(err)
	}
	kubeletPort := freePortArg(t)
	lastPKI := filepath.Join(last.Options.DataDir, "pki")
	// kwok is every node in one process, so it cannot hold a node's
	// identity (the Node authorizer limits system:node:<name> to its own
	// node): it runs as the admin.
	startMember(t, dir, "kwok", filepath.Join(bins, "kwok"), []string{"HOME=" + dir},
		"--config", config, "--kubeconfig", last.Kubeconfig, "--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector", "kwok.x-k8s.io/node=fake", "--node-lease-duration-seconds", "40",
		"--cidr", "10.244.0.1/16", "--node-ip", "127.0.0.1", "--node-port", kubeletPort,
		"--server-address", "127.0.0.1:"+kubeletPort,
		"--tls-cert-file", filepath.Join(lastPKI, "serving.crt"), "--tls-private-key-file", filepath.Join(lastPKI, "serving.key"))

	tg, err := loadTarget(b.name+"-cluster", first.Kubeconfig, first)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{tg: tg, k: newKubectl(t, tg), cs: tg.clientset(t), logs: logs}
}

// clusterWait is how long a cluster takes to act on a change: the
// controllers', scheduler's and kubelets' own periods, not Tabula's.
const clusterWait = 2 * time.Minute

// run goes through a cluster's life; each step is a matrix row, and a
// step that fails stops the ones after it (they build on it).
func (c *cluster) run(t *testing.T, col string) {
	ctx := testContext(t, 15*time.Minute)
	ns := newNamespace(t, c.tg)
	steps := []struct {
		name string
		fn   func(t *testing.T, ctx context.Context, ns string)
	}{
		{"nodes ready through Lease heartbeats", c.nodesReady},
		{"deployment rollout and scale", c.deployment},
		{"daemonset rollout, image change and restart", c.daemonSet},
		{"job completes", c.job},
		{"legacy service-account token Secret", c.legacyToken},
		{"kubelet TLS bootstrap with a bootstrap token", c.tlsBootstrap},
		{"service endpoint slices", c.endpoints},
		{"logs and exec through the kubelet", c.logsAndExec},
		{"drain around a disruption budget", c.drain},
		{"silent node NotReady, tainted, pods evicted", c.silentNode},
		{"cascading deletion", c.cascade},
		{"namespace deletion", c.namespaceDeletion},
	}
	for _, s := range steps {
		ok := t.Run(s.name, func(t *testing.T) {
			recordOutcome(t, scenarioRow(t, s.name), col)
			s.fn(t, ctx, ns)
		})
		if !ok {
			return
		}
	}
}

var kwokNodes = []string{"kwok-0", "kwok-1"}

func (c *cluster) nodesReady(t *testing.T, ctx context.Context, _ string) {
	for _, name := range kwokNodes {
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kwok.x-k8s.io/node": "fake"},
				Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok"}},
			Status: corev1.NodeStatus{Capacity: nodeResources(), Allocatable: nodeResources()},
		}
		if _, err := c.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "kwok nodes Ready with renewed Leases", clusterWait, func() (bool, string) {
		for _, name := range kwokNodes {
			n, err := c.cs.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			if !nodeCondition(n, corev1.NodeReady, corev1.ConditionTrue) {
				return false, name + " not Ready"
			}
			l, err := c.cs.CoordinationV1().Leases("kube-node-lease").Get(ctx, name, metav1.GetOptions{})
			if err != nil || l.Spec.RenewTime == nil {
				return false, fmt.Sprintf("lease of %s: %v", name, err)
			}
		}
		return true, ""
	})
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{"cpu": resource.MustParse("32"), "memory": resource.MustParse("256Gi"), "pods": resource.MustParse("110")}
}

func nodeCondition(n *corev1.Node, typ corev1.NodeConditionType, status corev1.ConditionStatus) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}

func (c *cluster) deployment(t *testing.T, ctx context.Context, ns string) {
	c.k.ok(t, "create", "deployment", "web", "-n", ns, "--image=nginx:1.27", "--replicas=3")
	c.k.ok(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	running := 0
	for _, p := range pods.Items {
		if p.Status.Phase == corev1.PodRunning && strings.HasPrefix(p.Spec.NodeName, "kwok-") && p.Status.PodIP != "" {
			running++
		}
	}
	if running != 3 {
		t.Fatalf("%d of the Deployment's pods are Running on a kwok node with an IP; want 3", running)
	}
	// A new template rolls out through a new ReplicaSet.
	c.k.ok(t, "set", "image", "deployment/web", "-n", ns, "nginx=nginx:1.28")
	c.k.ok(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	for _, replicas := range []string{"5", "3"} {
		c.k.ok(t, "scale", "deployment/web", "-n", ns, "--replicas="+replicas)
		// rollout status is content once every replica is of the new
		// template; the pods a scale-down removes go after it returns.
		c.k.ok(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
		want, _ := strconv.Atoi(replicas)
		waitFor(t, "the Deployment at "+replicas+" ready replicas", clusterWait, func() (bool, string) {
			d, err := c.cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return d.Status.ObservedGeneration == d.Generation && int(d.Status.Replicas) == want && int(d.Status.ReadyReplicas) == want,
				fmt.Sprintf("status %+v", d.Status)
		})
	}
}

// daemonSet: kube-controller-manager's DaemonSet controller runs a pod
// on each kwok node, and kubectl's set image and rollout restart, which
// change the template, roll it out again: the server moves the template
// generation on (a template write that kept the client's was a 422).
func (c *cluster) daemonSet(t *testing.T, ctx context.Context, ns string) {
	labels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent"}, Spec: appsv1.DaemonSetSpec{
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}}}
	if _, err := c.cs.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.k.ok(t, "rollout", "status", "daemonset/agent", "-n", ns, "--timeout=2m")
	c.k.ok(t, "set", "image", "daemonset/agent", "-n", ns, "c=busybox:1.37")
	c.k.ok(t, "rollout", "status", "daemonset/agent", "-n", ns, "--timeout=2m")
	c.k.ok(t, "rollout", "restart", "daemonset/agent", "-n", ns)
	c.k.ok(t, "rollout", "status", "daemonset/agent", "-n", ns, "--timeout=2m")
	got, err := c.cs.AppsV1().DaemonSets(ns).Get(ctx, "agent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if g := got.Annotations["deprecated.daemonset.template.generation"]; g != "3" || got.Generation != 3 {
		t.Errorf("after two template changes: template generation %q, generation %d; want 3 and 3", g, got.Generation)
	}
	waitFor(t, "the DaemonSet's new pods on every kwok node", clusterWait, func() (bool, string) {
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err.Error()
		}
		nodes := map[string]bool{}
		for _, p := range pods.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && p.Spec.Containers[0].Image == "busybox:1.37" {
				nodes[p.Spec.NodeName] = true
			}
		}
		return len(nodes) == len(kwokNodes), fmt.Sprintf("running new pods on %v", nodes)
	})
	// Gone with its pods before the drain step, which would refuse them.
	if err := c.cs.AppsV1().DaemonSets(ns).Delete(ctx, "agent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the DaemonSet's pods gone", clusterWait, func() (bool, string) {
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=agent"})
		if err != nil {
			return false, err.Error()
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d left", len(pods.Items))
	})
}

func (c *cluster) job(t *testing.T, ctx context.Context, ns string) {
	completions := int32(2)
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "once"}, Spec: batchv1.JobSpec{Completions: &completions,
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36", Command: []string{"true"}}}}}}}
	if _, err := c.cs.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.k.ok(t, "wait", "--for=condition=Complete", "job/once", "-n", ns, "--timeout=2m")
	j, err := c.cs.BatchV1().Jobs(ns).Get(ctx, "once", metav1.GetOptions{})
	if err != nil || j.Status.Succeeded != 2 {
		t.Errorf("the completed Job: succeeded %d, %v; want 2", j.Status.Succeeded, err)
	}
}

// legacyToken: kube-controller-manager's token controller fills a
// kubernetes.io/service-account-token Secret with a token signed by its
// RSA key, one of Tabula's --service-account-key-file keys (not the key
// Tabula signs with); Tabula accepts it as the account while the
// Secret holds it, labels the Secret with the day it was used (as
// kube-apiserver does, for kcm's legacy token cleaner), and refuses it
// once the Secret is gone.
func (c *cluster) legacyToken(t *testing.T, ctx context.Context, ns string) {
	c.k.ok(t, "create", "serviceaccount", "legacy", "-n", ns)
	c.k.ok(t, "create", "rolebinding", "legacy-view", "--clusterrole=view", "--serviceaccount="+ns+":legacy", "-n", ns)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "legacy-token", Annotations: map[string]string{corev1.ServiceAccountNameKey: "legacy"}},
		Type: corev1.SecretTypeServiceAccountToken}
	if _, err := c.cs.CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var token string
	waitFor(t, "kube-controller-manager filling the token Secret", clusterWait, func() (bool, string) {
		s, err := c.cs.CoreV1().Secrets(ns).Get(ctx, "legacy-token", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		token = string(s.Data[corev1.ServiceAccountTokenKey])
		return token != "", fmt.Sprintf("data keys %d", len(s.Data))
	})
	k := tokenKubectl(t, c.tg, token)
	if out := k.ok(t, "auth", "whoami", "-o", "jsonpath={.status.userInfo.username}"); out != "system:serviceaccount:"+ns+":legacy" {
		t.Errorf("the legacy token's user: %q", out)
	}
	k.ok(t, "get", "configmaps", "-n", ns)
	s, err := c.cs.CoreV1().Secrets(ns).Get(ctx, "legacy-token", metav1.GetOptions{})
	if today := time.Now().UTC().Format(time.DateOnly); err != nil || s.Labels["kubernetes.io/legacy-token-last-used"] != today {
		t.Errorf("the Secret's last-used label: %v, %v; want %s", s.Labels, err, today)
	}
	if err := c.cs.CoreV1().Secrets(ns).Delete(ctx, "legacy-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := k.fails(t, runOpts{}, "get", "configmaps", "-n", ns); !strings.Contains(r.stderr, "You must be logged in to the server") {
		t.Errorf("the token after its Secret is deleted:\n%s", r)
	}
}

func (c *cluster) endpoints(t *testing.T, ctx context.Context, ns string) {
	c.k.ok(t, "expose", "deployment/web", "-n", ns, "--port=80")
	waitFor(t, "the Service's EndpointSlices list its 3 ready pods", clusterWait, func() (bool, string) {
		slices, err := c.cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return false, err.Error()
		}
		ready := 0
		for _, s := range slices.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready && e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
					ready++
				}
			}
		}
		return ready == 3, fmt.Sprintf("%d ready endpoints in %d slices", ready, len(slices.Items))
	})
}

// logsAndExec: kubectl reaches kwok's kubelet endpoints through Tabula.
// (kwok's local exec does not pass on the end of stdin, so no command
// here reads stdin; server/kubelet_test.go covers stdin.)
func (c *cluster) logsAndExec(t *testing.T, ctx context.Context, ns string) {
	pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("the Deployment's pods: %v", err)
	}
	pod := pods.Items[0].Name
	if out := c.k.ok(t, "logs", "-n", ns, pod); out != "hello from kwok\nsecond line\n" {
		t.Errorf("kubectl logs: %q", out)
	}
	if out := c.k.ok(t, "logs", "-n", ns, pod, "--tail=1", "--timestamps"); out != "2026-01-01T00:00:01.000000000Z second line\n" {
		t.Errorf("kubectl logs --tail=1 --timestamps: %q", out)
	}
	if out := c.k.ok(t, "exec", "-n", ns, pod, "--", "sh", "-c", "echo exec in $0"); out != "exec in sh\n" {
		t.Errorf("kubectl exec: %q", out)
	}
}

func (c *cluster) drain(t *testing.T, ctx context.Context, ns string) {
	c.k.ok(t, "create", "poddisruptionbudget", "web", "-n", ns, "--selector=app=web", "--min-available=2")
	waitFor(t, "the disruption controller to work out the budget", clusterWait, func() (bool, string) {
		pdb, err := c.cs.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return pdb.Status.ObservedGeneration == pdb.Generation && pdb.Status.CurrentHealthy == 3,
			fmt.Sprintf("status %+v", pdb.Status)
	})
	onNode := func(node string) int {
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Fatal(err)
		}
		return len(pods.Items)
	}
	victim := kwokNodes[0]
	if onNode(victim) == 0 {
		victim = kwokNodes[1]
	}
	c.k.ok(t, "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=2m")
	if n := onNode(victim); n != 0 {
		t.Errorf("%d of the Deployment's pods are still on the drained node", n)
	}
	c.k.ok(t, "rollout", "status", "deployment/web", "-n", ns, "--timeout=2m")
	if got := c.k.ok(t, "get", "node", victim, "-o", "jsonpath={.spec.unschedulable}"); got != "true" {
		t.Errorf("drained node unschedulable: %q", got)
	}
	c.k.ok(t, "uncordon", victim)
}

// silentNode: a node that never heartbeats (no kwok behind it) turns
// NotReady, is tainted, and the pod on it is evicted by kcm.
func (c *cluster) silentNode(t *testing.T, ctx context.Context, ns string) {
	now := metav1.Now()
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "silent"}, Status: corev1.NodeStatus{
		Capacity: nodeResources(), Allocatable: nodeResources(),
		Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: now, LastTransitionTime: now}},
	}}
	if _, err := c.cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The pod tolerates an unreachable node for a second, not the 300s
	// DefaultTolerationSeconds admission would give it.
	second := int64(1)
	var tolerations []corev1.Toleration
	for _, key := range []string{corev1.TaintNodeUnreachable, corev1.TaintNodeNotReady} {
		tolerations = append(tolerations, corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &second})
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stranded"}, Spec: corev1.PodSpec{NodeName: "silent", Tolerations: tolerations,
		Containers: []corev1.Container{{Name: "c", Image: "busybox:1.36"}}}}
	if _, err := c.cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the silent node NotReady and tainted unreachable", clusterWait, func() (bool, string) {
		n, err := c.cs.CoreV1().Nodes().Get(ctx, "silent", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		tainted := false
		for _, taint := range n.Spec.Taints {
			if taint.Key == corev1.TaintNodeUnreachable && taint.Effect == corev1.TaintEffectNoExecute {
				tainted = true
			}
		}
		return nodeCondition(n, corev1.NodeReady, corev1.ConditionUnknown) && tainted, fmt.Sprintf("conditions %v taints %v", n.Status.Conditions, n.Spec.Taints)
	})
	// No kubelet confirms the deletion, so the evicted pod stays
	// terminating, as on kube-apiserver.
	waitFor(t, "the stranded pod evicted", clusterWait, func() (bool, string) {
		p, err := c.cs.CoreV1().Pods(ns).Get(ctx, "stranded", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		if err != nil {
			return false, err.Error()
		}
		return p.DeletionTimestamp != nil, "not marked for deletion"
	})
	if err := c.cs.CoreV1().Nodes().Delete(ctx, "silent", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) cascade(t *testing.T, ctx context.Context, ns string) {
	c.k.ok(t, "delete", "deployment/web", "-n", ns, "--cascade=foreground", "--timeout=2m")
	waitFor(t, "the Deployment's ReplicaSets and pods gone", clusterWait, func() (bool, string) {
		rs, err := c.cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		pods, err := c.cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return false, err.Error()
		}
		return len(rs.Items) == 0 && len(pods.Items) == 0, fmt.Sprintf("%d ReplicaSets, %d pods", len(rs.Items), len(pods.Items))
	})
}

func (c *cluster) namespaceDeletion(t *testing.T, ctx context.Context, ns string) {
	// The stranded pod of the silent node has no kubelet to confirm its
	// end; an operator forces it, as on any cluster.
	c.k.ok(t, "delete", "pod", "stranded", "-n", ns, "--force", "--grace-period=0", "--ignore-not-found")
	c.k.ok(t, "delete", "namespace", ns, "--timeout=2m")
	if _, err := c.cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the namespace after kubectl delete returned: %v; want it gone", err)
	}
}

// writeRSAKeyPair writes an RSA private key (PKCS #1) and its public key
// (PKIX) as kubeadm writes sa.key and sa.pub, and returns their paths.
func writeRSAKeyPair(t *testing.T, dir, name string) (keyFile, pubFile string) {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	keyFile, pubFile = filepath.Join(dir, name+".key"), filepath.Join(dir, name+".pub")
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pubFile, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644); err != nil {
		t.Fatal(err)
	}
	return keyFile, pubFile
}
