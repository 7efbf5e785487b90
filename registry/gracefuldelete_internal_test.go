package registry

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/schema"
)

// TestShortenedGraceNotInThePast: a delete shortening a Pod's grace
// period moves its deletionTimestamp back by the difference, but never
// before now, as kube's BeforeDelete: a graceful one whose whole period
// has already gone by keeps one second (the node still makes the final
// delete), and one of 0 is 0.
func TestShortenedGraceNotInThePast(t *testing.T) {
	pods := mustNew(Config{Store: nil, Types: schema.NewBuiltin()}).MustLookup("", "v1", "pods")
	for _, c := range []struct {
		name            string
		markedAgo       time.Duration
		cur             int64
		requested, want int64
		notBefore       bool // the new deadline is now, not earlier
	}{
		{name: "within the period", markedAgo: 10 * time.Second, cur: 60, requested: 30, want: 30},
		{name: "period gone by", markedAgo: 50 * time.Second, cur: 60, requested: 5, want: 1, notBefore: true},
		{name: "period gone by, grace 0", markedAgo: 50 * time.Second, cur: 60, requested: 0, want: 0, notBefore: true},
	} {
		now := time.Now()
		ts := metav1.NewTime(now.Add(-c.markedAgo).Add(time.Duration(c.cur) * time.Second).Truncate(time.Second))
		cur := c.cur
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &ts, DeletionGracePeriodSeconds: &cur},
			Spec: corev1.PodSpec{NodeName: "n1"}}
		graceful, pending, period := pods.beforeGracefulDelete(pod, pod, &metav1.DeleteOptions{GracePeriodSeconds: &c.requested})
		if !graceful || pending || period != c.want || *pod.DeletionGracePeriodSeconds != c.want {
			t.Errorf("%s: graceful %v, pending %v, period %d (stored %d); want graceful with %d", c.name, graceful, pending, period, *pod.DeletionGracePeriodSeconds, c.want)
		}
		at := pod.DeletionTimestamp.Time
		switch want := ts.Add(time.Duration(c.requested-c.cur) * time.Second); {
		case c.notBefore && (at.Before(now.Truncate(time.Second)) || at.After(time.Now())):
			t.Errorf("%s: deadline %v; want now (%v)", c.name, at, now)
		case !c.notBefore && !at.Equal(want):
			t.Errorf("%s: deadline %v; want %v", c.name, at, want)
		}
	}
}
