package server

import (
	"context"
	"time"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Store is what the handlers need from the event log.
type Store interface {
	Get(ctx context.Context, key kv.Key) (kv.Record, error)
	List(ctx context.Context, opts kv.ListOptions) (kv.ListResult, error)
	// ResourcesWithField names the resources with a live object whose
	// selectable field equals value.
	ResourcesWithField(ctx context.Context, field, value string) ([]string, error)
	Create(ctx context.Context, key kv.Key, enc kv.Encoder) (kv.Record, error)
	Update(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error)
	Delete(ctx context.Context, key kv.Key, expect int64, enc kv.Encoder) (kv.Record, error)
	Watch(ctx context.Context, opts kv.WatchOptions) (kv.Watcher, error)
	// RefreshFields rewrites in place the stored selectable fields of a
	// resource's live objects that stale says are out of date.
	RefreshFields(ctx context.Context, resource string, stale func(stored map[string]string) bool,
		fields func(kv.Record) (map[string]string, error)) (int, error)
	CurrentRev(ctx context.Context) (int64, error)
	Ready(ctx context.Context) error
	// Expired lists live objects of resource whose expiry has passed.
	Expired(ctx context.Context, resource string, now time.Time, limit int) ([]kv.Record, error)
	// Compaction reports the compactor's health.
	Compaction() kv.CompactionStatus
}
