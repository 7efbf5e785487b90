package conformance

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election timings, short so that the test is quick; client-go
// requires LeaseDuration > RenewDeadline > RetryPeriod × 1.2.
const (
	leaseDuration = 4 * time.Second
	renewDeadline = 3 * time.Second
	retryPeriod   = 300 * time.Millisecond
)

// candidate is one leader-election participant with its own clientset.
type candidate struct {
	id      string
	cancel  context.CancelFunc
	started chan struct{} // closed when it becomes leader
	stopped chan struct{} // closed when it stops leading
	leader  chan string   // the leaders it observes (OnNewLeader)
	done    chan struct{} // closed when Run returns
}

func runCandidate(t *testing.T, tg *target, ns, lease, id string) *candidate {
	t.Helper()
	cs := tg.clientset(t)
	c := &candidate{
		id: id, started: make(chan struct{}), stopped: make(chan struct{}),
		leader: make(chan string, 100), done: make(chan struct{}),
	}
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: ns, Name: lease},
			Client:     cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: id},
		},
		LeaseDuration:   leaseDuration,
		RenewDeadline:   renewDeadline,
		RetryPeriod:     retryPeriod,
		ReleaseOnCancel: true,
		Name:            "conformance",
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(context.Context) { close(c.started) },
			OnStoppedLeading: func() { close(c.stopped) },
			OnNewLeader: func(identity string) {
				select {
				case c.leader <- identity:
				default:
				}
			},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	go func() {
		defer close(c.done)
		le.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-c.done
	})
	return c
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestLeaderElection runs two client-go leader electors on one Lease:
// exactly one leads and renews; when it is cancelled it releases the
// Lease and the other takes over.
func TestLeaderElection(t *testing.T) {
	forEachTarget(t, func(t *testing.T, tg *target) {
		recordOutcome(t, scenarioRow(t, ""), tg.Name)
		ns := newNamespace(t, tg)
		const lease = "conformance-lock"
		leases := tg.clientset(t).CoordinationV1().Leases(ns)
		ctx := testContext(t, 3*time.Minute)

		a := runCandidate(t, tg, ns, lease, "candidate-a")
		b := runCandidate(t, tg, ns, lease, "candidate-b")

		var leader, follower *candidate
		select {
		case <-a.started:
			leader, follower = a, b
		case <-b.started:
			leader, follower = b, a
		case <-time.After(waitDeadline):
			t.Fatalf("no candidate became leader within %v", waitDeadline)
		}
		t.Logf("%s leads", leader.id)

		// The follower must see the leader and not lead itself.
		seen := false
		deadline := time.After(waitDeadline)
		for !seen {
			select {
			case id := <-follower.leader:
				seen = id == leader.id
			case <-deadline:
				t.Fatalf("%s did not observe %s as leader within %v", follower.id, leader.id, waitDeadline)
			}
		}

		// Renewals: renewTime advances, held by the leader, while the
		// follower keeps out.
		l, err := leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		w, err := leases.Watch(ctx, metav1.ListOptions{
			FieldSelector:   fields.OneTermEqualSelector("metadata.name", lease).String(),
			ResourceVersion: l.ResourceVersion,
		})
		if err != nil {
			t.Fatalf("watching the lease: %v", err)
		}
		last := l.Spec.RenewTime
		if last == nil {
			t.Fatalf("lease %s has no renewTime: %+v", lease, l.Spec)
		}
		renewals := 0
		deadline = time.After(waitDeadline)
		for renewals < 3 {
			select {
			case ev, ok := <-w.ResultChan():
				if !ok {
					t.Fatalf("the lease watch ended after %d renewals", renewals)
				}
				if ev.Type != watch.Modified {
					t.Fatalf("lease watch: got a %s event (%v), want MODIFIED renewals", ev.Type, ev.Object)
				}
				got := ev.Object.(*coordinationv1.Lease)
				if h := deref(got.Spec.HolderIdentity); h != leader.id {
					t.Fatalf("lease held by %q during the leader's term, want %q", h, leader.id)
				}
				if got.Spec.RenewTime == nil || !got.Spec.RenewTime.After(last.Time) {
					t.Fatalf("renewTime went from %v to %v, want it to advance", last, got.Spec.RenewTime)
				}
				last = got.Spec.RenewTime
				renewals++
			case <-deadline:
				t.Fatalf("saw %d lease renewals within %v, want 3", renewals, waitDeadline)
			}
		}
		w.Stop()
		if isClosed(follower.started) {
			t.Fatalf("both %s and %s lead", leader.id, follower.id)
		}

		// Cancelling the leader releases the lease; the follower takes over.
		leader.cancel()
		select {
		case <-follower.started:
		case <-time.After(waitDeadline):
			t.Fatalf("%s did not take over within %v of %s releasing the lease", follower.id, waitDeadline, leader.id)
		}
		select {
		case <-leader.done:
		case <-time.After(waitDeadline):
			t.Fatalf("%s's elector did not return after cancel", leader.id)
		}
		if !isClosed(leader.stopped) {
			t.Errorf("%s's OnStoppedLeading was not called", leader.id)
		}
		waitFor(t, "the lease to name "+follower.id, waitDeadline, func() (bool, string) {
			l, err := leases.Get(ctx, lease, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			return deref(l.Spec.HolderIdentity) == follower.id, "holder " + deref(l.Spec.HolderIdentity)
		})
		l, err = leases.Get(ctx, lease, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := deref(l.Spec.LeaseTransitions); got != 1 {
			t.Errorf("leaseTransitions = %d after one hand-over, want 1", got)
		}
	})
}
