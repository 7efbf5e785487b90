package server

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// ComponentStatuses are computed on each read, as kube-apiserver does:
// the scheduler and controller-manager are probed where kubeadm runs them
// (their secure health ports on this host), and the database stands where
// etcd would. Without a scheduler or controller-manager they report the
// probe's error, as on a control plane that has none.

// componentProbes are the components kube-apiserver checks.
var componentProbes = []struct{ name, url string }{
	{"controller-manager", "https://127.0.0.1:10257/healthz"},
	{"scheduler", "https://127.0.0.1:10259/healthz"},
}

func (s *Server) componentStatuses(ctx context.Context) []*corev1.ComponentStatus {
	client := &http.Client{Timeout: 2 * time.Second, Transport: &http.Transport{
		// The components serve self-signed certificates; kube-apiserver
		// does not verify them either.
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
	}}
	defer client.CloseIdleConnections()
	status := func(name string, err error) *corev1.ComponentStatus {
		c := corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionTrue, Message: "ok"}
		if err != nil {
			c = corev1.ComponentCondition{Type: corev1.ComponentHealthy, Status: corev1.ConditionFalse, Error: err.Error()}
		}
		return &corev1.ComponentStatus{
			TypeMeta:   metav1.TypeMeta{Kind: "ComponentStatus", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Conditions: []corev1.ComponentCondition{c},
		}
	}
	// Probed at once, as kube-apiserver does: a list waits for the slowest.
	out := make([]*corev1.ComponentStatus, len(componentProbes))
	var wg sync.WaitGroup
	for i, p := range componentProbes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = status(p.name, probe(ctx, client, p.url))
		}()
	}
	wg.Wait()
	out = append(out, status("database", s.checkDatabase(ctx)))
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// probe GETs a component's health endpoint; nil when it answers 200.
func probe(ctx context.Context, client *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, "GET", url, nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("unhealthy: %s answered %d", url, resp.StatusCode)
	}
	return nil
}

// virtualRead answers get and list of a computed type.
func (r *request) virtualRead() error {
	rev, err := r.s.store.CurrentRev(r.ctx)
	if err != nil {
		return err
	}
	var items []kv.Record
	for _, cs := range r.s.componentStatuses(r.ctx) {
		if r.verb == "get" && cs.Name != r.ri.Name {
			continue
		}
		b, err := codecs.StorageBytes(cs)
		if err != nil {
			return err
		}
		items = append(items, kv.Record{Key: r.key(cs.Name), Rev: rev, Value: b})
	}
	if r.verb == "get" {
		if len(items) == 0 {
			return r.notFound(r.ri.Name)
		}
		return r.writeRecord(http.StatusOK, items[0])
	}
	p, err := r.parseListParams()
	if err != nil {
		return err
	}
	out, err := r.negotiate(true)
	if err != nil {
		return err
	}
	return r.writeList(out, kv.ListResult{Items: items, Rev: rev}, p)
}
