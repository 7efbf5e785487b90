package main

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/sqlstore/dbtest"
)

// TestNULCharactersOnPostgres: kube stores a NUL character in any string.
// On PostgreSQL, whose text cannot hold one, an Event whose reason holds
// one is stored and found by its field selector (not a 503 its recorder
// retries for ever); an RBAC name holding one, which kube allows, is a
// clear 422 and nothing is written; gets and lists under such names find
// nothing, as for any missing name.
func TestNULCharactersOnPostgres(t *testing.T) {
	_, cs := serve(t, "--db", dbtest.Postgres(t))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e1"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "p"},
		Reason:         "Pulled\x00x",
		Message:        "a\x00b",
		Type:           corev1.EventTypeNormal,
	}
	if _, err := cs.CoreV1().Events("default").Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create an Event whose reason holds NUL: %v", err)
	}
	for sel, want := range map[string]int{"reason=Pulled\x00x": 1, "reason=Pulled": 0, "reason!=Pulled\x00x": 0, "reason!=Pulled": 1} {
		l, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(l.Items) != want {
			t.Errorf("list events %q = %d items, %v; want %d", sel, len(l.Items), err, want)
		} else if want == 1 && l.Items[0].Message != "a\x00b" {
			t.Errorf("listed message %q; want a\\x00b", l.Items[0].Message)
		}
	}

	cr := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "p\x00q"}}
	_, err := cs.RbacV1().ClusterRoles().Create(ctx, cr, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "NUL") {
		t.Fatalf("create a ClusterRole named p\\x00q: %v; want 422 Invalid naming the NUL", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, "p\x00q", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get p\\x00q: %v; want NotFound", err)
	}
	if l, err := cs.CoreV1().ConfigMaps("n\x00s").List(ctx, metav1.ListOptions{}); err != nil || len(l.Items) != 0 {
		t.Errorf("list configmaps in n\\x00s: %v; want an empty list", err)
	}
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "c\x00d", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("delete c\\x00d: %v; want NotFound", err)
	}
}
