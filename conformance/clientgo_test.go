package conformance

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// loggedRequest is one request a client sent, and the response's status
// and Content-Type.
type loggedRequest struct {
	Method, URL, ContentType, Accept, Status, RespContentType string
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// loggedClientset is a protobuf clientset whose requests are recorded.
func loggedClientset(t *testing.T, tg *target) (*kubernetes.Clientset, *statusLog) {
	t.Helper()
	log := &statusLog{}
	cfg := tg.protobufConfig()
	cfg.Wrap(log.wrap)
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs, log
}

// expectProtobufWrites fails t unless every write carried a protobuf body.
func expectProtobufWrites(t *testing.T, log *statusLog) {
	t.Helper()
	writes := 0
	for _, r := range log.all() {
		if r.Method == http.MethodPost || r.Method == http.MethodPut {
			writes++
			if r.ContentType != protobufContentType {
				t.Errorf("%s %s sent Content-Type %q, want %q", r.Method, r.URL, r.ContentType, protobufContentType)
			}
		}
	}
	if writes == 0 {
		t.Errorf("no POST or PUT recorded; the check of request bodies did not run")
	}
}

// TestClientGoCRUD exercises the typed clientset with protobuf bodies on
// the kinds controllers and Helm write most.
func TestClientGoCRUD(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		scenario(t, tg, "configmap", func(t *testing.T) {
			cs, log := loggedClientset(t, tg)
			ns := newNamespace(t, tg)
			ctx := testContext(t, waitDeadline)
			api := cs.CoreV1().ConfigMaps(ns)
			created, err := api.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "cm", Labels: map[string]string{"a": "b"}},
				Data:       map[string]string{"k": "v"},
				BinaryData: map[string][]byte{"bin": {0, 1, 2, 255}},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
				t.Errorf("create returned incomplete metadata: %+v", created.ObjectMeta)
			}
			got, err := api.Get(ctx, "cm", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if got.UID != created.UID || got.ResourceVersion != created.ResourceVersion ||
				got.Data["k"] != "v" || string(got.BinaryData["bin"]) != "\x00\x01\x02\xff" || got.Labels["a"] != "b" {
				t.Errorf("get returned %+v, want what create returned", got)
			}
			got.Data["k"] = "v2"
			updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if updated.ResourceVersion == created.ResourceVersion || updated.Data["k"] != "v2" || updated.UID != created.UID {
				t.Errorf("update returned resourceVersion %s (was %s), data %v, uid %s",
					updated.ResourceVersion, created.ResourceVersion, updated.Data, updated.UID)
			}
			if err := api.Delete(ctx, "cm", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := api.Get(ctx, "cm", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: got %v, want NotFound", err)
			}
			expectProtobufWrites(t, log)
		})

		scenario(t, tg, "secret", func(t *testing.T) {
			cs, log := loggedClientset(t, tg)
			ns := newNamespace(t, tg)
			ctx := testContext(t, waitDeadline)
			api := cs.CoreV1().Secrets(ns)
			created, err := api.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: "s"},
				Type:       corev1.SecretTypeOpaque,
				Data:       map[string][]byte{"pw": []byte("x")},
				StringData: map[string]string{"user": "admin"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			got, err := api.Get(ctx, "s", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			// kube-apiserver folds stringData into data on write.
			if string(got.Data["pw"]) != "x" || string(got.Data["user"]) != "admin" || len(got.StringData) != 0 || got.Type != corev1.SecretTypeOpaque {
				t.Errorf("get returned data %q, stringData %q, type %q; want pw=x and user=admin in data, no stringData, Opaque",
					got.Data, got.StringData, got.Type)
			}
			got.Data["pw"] = []byte("y")
			updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if string(updated.Data["pw"]) != "y" || updated.ResourceVersion == created.ResourceVersion {
				t.Errorf("update returned data %q, resourceVersion %s (was %s)", updated.Data, updated.ResourceVersion, created.ResourceVersion)
			}
			if err := api.Delete(ctx, "s", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := api.Get(ctx, "s", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: got %v, want NotFound", err)
			}
			expectProtobufWrites(t, log)
		})

		scenario(t, tg, "lease", func(t *testing.T) {
			cs, log := loggedClientset(t, tg)
			ns := newNamespace(t, tg)
			ctx := testContext(t, waitDeadline)
			api := cs.CoordinationV1().Leases(ns)
			acquire := metav1.NewMicroTime(time.Date(2026, 1, 2, 3, 4, 5, 123456000, time.UTC))
			created, err := api.Create(ctx, &coordinationv1.Lease{
				ObjectMeta: metav1.ObjectMeta{Name: "l"},
				Spec: coordinationv1.LeaseSpec{
					HolderIdentity: stringPtr("a"), LeaseDurationSeconds: int32Ptr(15),
					AcquireTime: &acquire, RenewTime: &acquire, LeaseTransitions: int32Ptr(0),
				},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create: %v", err)
			}
			got, err := api.Get(ctx, "l", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			if deref(got.Spec.HolderIdentity) != "a" || deref(got.Spec.LeaseDurationSeconds) != 15 ||
				got.Spec.RenewTime == nil || !got.Spec.RenewTime.Time.Equal(acquire.Time) {
				t.Errorf("get returned spec %+v; want holder a, duration 15, renewTime %v (microseconds kept)", got.Spec, acquire)
			}
			renew := metav1.NewMicroTime(acquire.Add(1500 * time.Microsecond))
			got.Spec.RenewTime = &renew
			got.Spec.HolderIdentity = stringPtr("b")
			got.Spec.LeaseTransitions = int32Ptr(1)
			updated, err := api.Update(ctx, got, metav1.UpdateOptions{})
			if err != nil {
				t.Fatalf("update: %v", err)
			}
			if !updated.Spec.RenewTime.Time.Equal(renew.Time) || deref(updated.Spec.HolderIdentity) != "b" ||
				updated.ResourceVersion == created.ResourceVersion {
				t.Errorf("update returned spec %+v, resourceVersion %s (was %s)", updated.Spec, updated.ResourceVersion, created.ResourceVersion)
			}
			if err := api.Delete(ctx, "l", metav1.DeleteOptions{}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if _, err := api.Get(ctx, "l", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("get after delete: got %v, want NotFound", err)
			}
			expectProtobufWrites(t, log)
		})

		scenario(t, tg, "list over 128 KiB", func(t *testing.T) {
			// Large responses are gzip-compressed (kube-apiserver: from
			// 128 KiB); every byte must still arrive.
			cs := tg.clientset(t)
			ns := newNamespace(t, tg)
			ctx := testContext(t, 2*waitDeadline)
			payload := strings.Repeat("x", 2048)
			const n = 100
			for i := 0; i < n; i++ {
				if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("big-%03d", i), Labels: map[string]string{"big": "yes"}},
					Data:       map[string]string{"payload": payload},
				}, metav1.CreateOptions{}); err != nil {
					t.Fatalf("create %d: %v", i, err)
				}
			}
			list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: "big=yes"})
			if err != nil {
				t.Fatalf("list: %v", err)
			}
			if len(list.Items) != n {
				t.Fatalf("list: %d items, want %d", len(list.Items), n)
			}
			for _, cm := range list.Items {
				if cm.Data["payload"] != payload {
					t.Fatalf("%s: payload of %d bytes, want %d", cm.Name, len(cm.Data["payload"]), len(payload))
				}
			}
		})

		scenario(t, tg, "update conflict", func(t *testing.T) {
			cs := tg.clientset(t)
			ns := newNamespace(t, tg)
			ctx := testContext(t, waitDeadline)
			api := cs.CoreV1().ConfigMaps(ns)
			if _, err := api.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			first, err := api.Get(ctx, "c", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			second := first.DeepCopy()
			first.Data = map[string]string{"writer": "first"}
			if _, err := api.Update(ctx, first, metav1.UpdateOptions{}); err != nil {
				t.Fatalf("first update: %v", err)
			}
			second.Data = map[string]string{"writer": "second"}
			_, err = api.Update(ctx, second, metav1.UpdateOptions{})
			if !apierrors.IsConflict(err) {
				t.Fatalf("update with a stale resourceVersion: got %v, want a Conflict", err)
			}
			// A delete with a stale resourceVersion precondition conflicts too.
			err = api.Delete(ctx, "c", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &second.ResourceVersion}})
			if !apierrors.IsConflict(err) {
				t.Errorf("delete with a stale resourceVersion precondition: got %v, want a Conflict", err)
			}
			got, err := api.Get(ctx, "c", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if got.Data["writer"] != "first" {
				t.Errorf("data = %v, want writer=first", got.Data)
			}
		})
	})
}

// TestWatchFromList lists, then watches from the list's resourceVersion:
// the watch must deliver every change after the list, including one made
// before the watch opened, in commit order.
func TestWatchFromList(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		recordOutcome(t, scenarioRow(t, ""), tg.Name)
		cs := tg.clientset(t)
		ns := newNamespace(t, tg)
		ctx := testContext(t, 2*waitDeadline)
		api := cs.CoreV1().ConfigMaps(ns)
		sel := metav1.ListOptions{LabelSelector: "watch-order=yes"}
		labels := map[string]string{"watch-order": "yes"}
		mk := func(name string) *corev1.ConfigMap {
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
		}
		if _, err := api.Create(ctx, mk("before-list"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		list, err := api.List(ctx, sel)
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 1 || list.ResourceVersion == "" {
			t.Fatalf("list: %d items, resourceVersion %q; want 1 item and a resourceVersion", len(list.Items), list.ResourceVersion)
		}

		type step struct {
			typ  watch.EventType
			name string
			rv   string // the resourceVersion the write returned; "" for deletes
		}
		var want []step
		early, err := api.Create(ctx, mk("early"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, step{watch.Added, "early", early.ResourceVersion})

		opts := sel
		opts.ResourceVersion = list.ResourceVersion
		w, err := api.Watch(ctx, opts)
		if err != nil {
			t.Fatalf("watch from resourceVersion %s: %v", list.ResourceVersion, err)
		}
		defer w.Stop()

		a, err := api.Create(ctx, mk("a"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, step{watch.Added, "a", a.ResourceVersion})
		b, err := api.Create(ctx, mk("b"), metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, step{watch.Added, "b", b.ResourceVersion})
		a.Data = map[string]string{"v": "2"}
		a, err = api.Update(ctx, a, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, step{watch.Modified, "a", a.ResourceVersion})
		for _, name := range []string{"b", "before-list", "a"} {
			if err := api.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			want = append(want, step{watch.Deleted, name, ""})
		}

		timeout := time.NewTimer(waitDeadline)
		defer timeout.Stop()
		for i, s := range want {
			var ev watch.Event
			select {
			case e, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("watch closed after %d of %d events", i, len(want))
				}
				ev = e
			case <-timeout.C:
				t.Fatalf("got %d of %d events within %v; next wanted: %s %s", i, len(want), waitDeadline, s.typ, s.name)
			}
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				t.Fatalf("event %d: %s with a %T (%v), want a ConfigMap", i, ev.Type, ev.Object, ev.Object)
			}
			if ev.Type != s.typ || cm.Name != s.name {
				t.Fatalf("event %d: got %s %s, want %s %s", i, ev.Type, cm.Name, s.typ, s.name)
			}
			if s.rv != "" && cm.ResourceVersion != s.rv {
				t.Errorf("event %d (%s %s): resourceVersion %s, want %s as the write returned", i, ev.Type, cm.Name, cm.ResourceVersion, s.rv)
			}
		}
	})
}

// TestCreateRate measures a sequential loop of creates through the typed
// clientset (protobuf), and the server's memory before and after. It
// asserts only that the creates succeed; the numbers are for the report.
func TestCreateRate(t *testing.T) {
	const n = 200
	forEachTarget(t, func(t *testing.T, tg *target) {
		recordOutcome(t, scenarioRow(t, ""), tg.Name)
		cs := tg.clientset(t)
		ns := newNamespace(t, tg)
		ctx := testContext(t, 5*time.Minute)
		if tg.Proc != nil {
			if rss, err := tg.Proc.RSS(); err == nil {
				t.Logf("RSS before the loop: %s", formatBytes(rss))
				measurements.set(tg.Name, "RSS before creates", formatBytes(rss))
			}
		}
		api := cs.CoreV1().ConfigMaps(ns)
		start := time.Now()
		for i := 0; i < n; i++ {
			_, err := api.Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("rate-%03d", i)},
				Data:       map[string]string{"payload": strings.Repeat("x", 100)},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("create %d of %d: %v", i+1, n, err)
			}
		}
		elapsed := time.Since(start)
		rate := float64(n) / elapsed.Seconds()
		t.Logf("%d sequential creates in %v: %.0f creates/s", n, elapsed.Round(time.Millisecond), rate)
		measurements.set(tg.Name, fmt.Sprintf("creates/s (%d sequential)", n), fmt.Sprintf("%.0f", rate))
		if tg.Proc != nil {
			if rss, err := tg.Proc.RSS(); err == nil {
				t.Logf("RSS after the loop: %s", formatBytes(rss))
				measurements.set(tg.Name, "RSS after creates", formatBytes(rss))
			} else {
				t.Errorf("reading the server's RSS: %v", err)
			}
		}
		list, err := api.List(ctx, metav1.ListOptions{Limit: 500})
		if err != nil {
			t.Fatal(err)
		}
		created := 0
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "rate-") {
				created++
			}
		}
		if created != n {
			t.Errorf("list after the loop: %d of the created configmaps, want %d", created, n)
		}
	})
}

func stringPtr(s string) *string { return &s }
func int32Ptr(n int32) *int32    { return &n }

// deref returns *p, or the zero value for nil.
func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
