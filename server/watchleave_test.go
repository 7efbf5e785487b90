package server_test

import (
	"context"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestWatchLeavingSelectorShowsTheOldObject: an object that stops matching
// a watch's selector is DELETED as it was before the write that moved it
// out, at that write's resourceVersion, as kube-apiserver's watch shows
// it; a selector authorizing a watch never shows the data it excludes.
// Checked from history and live, in Protobuf and in JSON.
func TestWatchLeavingSelectorShowsTheOldObject(t *testing.T) {
	h := refNewHarness(t)
	hs := httptest.NewServer(h.h)
	defer hs.Close()
	ctx := context.Background()
	for _, ct := range []string{"application/vnd.kubernetes.protobuf", "application/json"} {
		cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: hs.URL, ContentConfig: rest.ContentConfig{ContentType: ct}})
		secrets := cs.CoreV1().Secrets("default")
		s, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Labels: map[string]string{"tier": "public"}},
			StringData: map[string]string{"pw": "public"}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		leave := func(s *corev1.Secret, data string) *corev1.Secret {
			s.Labels["tier"] = "private"
			s.Data = map[string][]byte{"pw": []byte(data)}
			u, err := secrets.Update(ctx, s, metav1.UpdateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return u
		}
		check := func(how string, w watch.Interface, before *corev1.Secret, at string) {
			t.Helper()
			defer w.Stop()
			ev := <-w.ResultChan()
			got, ok := ev.Object.(*corev1.Secret)
			if ev.Type != watch.Deleted || !ok {
				t.Fatalf("%s, %s: %s %#v; want DELETED", ct, how, ev.Type, ev.Object)
			}
			if got.Labels["tier"] != "public" || string(got.Data["pw"]) != string(before.Data["pw"]) || got.ResourceVersion != at || got.Name != before.Name {
				t.Errorf("%s, %s: DELETED %s labels %v data %q at %s; want the object before, %v %q, at %s",
					ct, how, got.Name, got.Labels, got.Data["pw"], got.ResourceVersion, before.Labels, before.Data["pw"], at)
			}
		}
		public := metav1.ListOptions{LabelSelector: "tier=public"}

		// From history: the watch starts before the write.
		public.ResourceVersion = s.ResourceVersion
		u := leave(s.DeepCopy(), "TOPSECRET")
		w, err := secrets.Watch(ctx, public)
		if err != nil {
			t.Fatal(err)
		}
		check("from history", w, s, u.ResourceVersion)

		// Live: the watch is open when the write lands.
		u.Labels["tier"] = "public"
		u.Data = map[string][]byte{"pw": []byte("public again")}
		back, err := secrets.Update(ctx, u, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		public.ResourceVersion = back.ResourceVersion
		w, err = secrets.Watch(ctx, public)
		if err != nil {
			t.Fatal(err)
		}
		moved := leave(back.DeepCopy(), "TOPSECRET again")
		check("live", w, back, moved.ResourceVersion)
	}
}
