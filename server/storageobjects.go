package server

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// objectCounter is the store's count of live objects by resource.
type objectCounter interface {
	CountByResource(ctx context.Context) (map[string]int64, error)
}

// storageObjectsInterval is how often the counts are made, as kube's
// storage counts its objects once a minute.
const storageObjectsInterval = time.Minute

// countStoredObjects keeps kube's apiserver_storage_objects gauge, by
// stored resource ("pods", "deployments.apps", custom resources'
// "widgets.example.com"): every served resource, 0 when it has no
// objects, -1 while counting fails, as kube's reads.
func (s *Server) countStoredObjects(ctx context.Context, gauge *prometheus.GaugeVec) {
	counter, ok := s.store.(objectCounter)
	if !ok {
		return
	}
	t := time.NewTicker(storageObjectsInterval)
	defer t.Stop()
	var before map[string]bool
	for {
		counts, err := counter.CountByResource(ctx)
		seen := map[string]bool{}
		for _, typ := range s.reg.Types() {
			r := typ.StorageResource
			// Reviews and computed kinds store nothing.
			if seen[r] || typ.Virtual || typ.ListKind == "" {
				continue
			}
			seen[r] = true
			if err != nil {
				gauge.WithLabelValues(r).Set(-1)
			} else {
				gauge.WithLabelValues(r).Set(float64(counts[r]))
			}
		}
		for r := range before {
			if !seen[r] {
				gauge.DeleteLabelValues(r) // a custom resource no longer served
			}
		}
		before = seen
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
