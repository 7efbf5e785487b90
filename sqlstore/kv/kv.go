package kv

import (
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
)

// Key names one object. Resource is the storage resource ("configmaps",
// "coordination.k8s.io/leases"); Namespace is empty for cluster-scoped ones.
type Key struct {
	Resource  string
	Namespace string
	Name      string
}

// Record is one stored version of an object.
type Record struct {
	Key
	// Rev is the revision of this version: the object's resourceVersion.
	Rev int64
	// CreatedRev is the revision at which this incarnation was created.
	CreatedRev int64
	// Value is the serialized object, resourceVersion included.
	Value []byte
	// Stale: the value is stored in a form the store would not write now
	// (under an older encryption key, or unencrypted where a provider is
	// configured). Rewriting the same value is then not a no-op: it is how
	// values are moved to the current key, as on kube-apiserver. Set by Get.
	Stale bool
	// Cached: Value is what ListOptions.Cached gave for this record (the
	// caller's own encoding), not the stored value. Set by List.
	Cached bool
}

// Entry is what a write stores: the object bytes plus the attributes the
// store indexes for selectors and expiry.
type Entry struct {
	Value  []byte
	Labels map[string]string
	// Fields holds the selectable field values (metadata.name and
	// metadata.namespace included).
	Fields map[string]string
	// ExpiresAt, when set, lets the store delete the object after that time.
	ExpiresAt time.Time
}

// Encoder builds the Entry to store once the write's revision is known, so
// the stored bytes can carry their own resourceVersion. It runs inside the
// writing transaction: it must be fast and must not touch the store.
type Encoder func(rev int64) (Entry, error)

// Predicate selects objects by labels and fields; nil selectors match all.
type Predicate struct {
	Label labels.Selector
	Field fields.Selector
}

// Empty reports whether p matches everything.
func (p Predicate) Empty() bool {
	return (p.Label == nil || p.Label.Empty()) && (p.Field == nil || p.Field.Empty())
}

// Matches reports whether an object with the given labels and fields passes.
func (p Predicate) Matches(l map[string]string, f map[string]string) bool {
	if p.Label != nil && !p.Label.Empty() && !p.Label.Matches(labels.Set(l)) {
		return false
	}
	if p.Field != nil && !p.Field.Empty() && !p.Field.Matches(fields.Set(f)) {
		return false
	}
	return true
}

// ListOptions says what to list.
type ListOptions struct {
	Resource  string
	Namespace string // empty: all namespaces
	// Rev is the revision to read at; 0 means the latest.
	Rev int64
	// MinRev, for a read of the latest state (Rev 0), lets a read
	// replica that has replayed at least this revision answer
	// (resourceVersion=N NotOlderThan; 1 accepts any state, as
	// resourceVersion=0). 0 asks for a consistent read: the state
	// includes every write committed before the read began.
	MinRev int64
	// After continues a paginated list after this namespace/name.
	AfterNamespace, AfterName string
	// Limit caps the number of items; 0 means no limit.
	Limit int
	Pred  Predicate
	// Encode, if set, turns each item's stored value into the bytes the
	// caller will send, a batch of rows at a time as they are read; the
	// items then hold only those. A large list so holds one form of its
	// items, not two. It is called from several goroutines at once (a
	// large batch is encoded on every core). The value passed stays
	// valid (it is the item's own copy, or with Shared one that others
	// read too) and must not be modified.
	Encode func(Record) ([]byte, error)
	// Cached, if set, returns the caller's own encoding of a record it
	// holds one of (by its revision): the item then comes with those
	// bytes, marked Record.Cached, and the store does not read its value
	// at all (nor pass it to Encode). Items listed so may lack their
	// CreatedRev. It is called on one goroutine, an item at a time.
	Cached func(Record) ([]byte, bool)
	// Shared: the items' values may be shared with other readers of the
	// same revisions (the store reads each once for all of them, as when
	// many watches open with the same state at once). They must not be
	// modified.
	Shared bool
}

// ListResult is one page of a list.
type ListResult struct {
	Items []Record
	// Rev is the revision the list was read at.
	Rev int64
	// More reports whether items remain after the last one returned.
	More bool
	// Remaining counts the items after this page when More is set and the
	// list has no selector (kube-apiserver's remainingItemCount).
	Remaining int64
}

// WatchOptions says what to watch.
type WatchOptions struct {
	Resource  string
	Namespace string
	// After: deliver events with revisions greater than this one.
	After int64
	Pred  Predicate
	// Name, when set, watches one object.
	Name string
	// Initial: the watch opens with the objects as they are at After (at
	// the current revision when After is 0), as Added events in key
	// order, read page by page with shared values, then an InitialEnd
	// event carrying that revision, then the changes after it.
	Initial bool
}

// EventType says what happened to an object.
type EventType string

const (
	Added    EventType = "ADDED"
	Modified EventType = "MODIFIED"
	Deleted  EventType = "DELETED"
	// InitialEnd follows a watch's initial events; its Rev is the
	// revision they show. It carries no object.
	InitialEnd EventType = "INITIAL-END"
)

// Event is one change delivered to a watcher. For a delete, Record holds
// the object's final state at the deleting revision.
type Event struct {
	Type EventType
	Record
	// ValueRev, when not 0, is the revision Value was written at: a
	// Deleted event for an object that stopped matching the watch's
	// selector at Rev carries the object as it was before (as kube's
	// watch shows it, so a selector never shows what it excludes), to be
	// shown at Rev.
	ValueRev int64
}

// Errors the store returns; callers test them with errors.Is.
var (
	ErrNotFound  = errors.New("kv: not found")
	ErrExists    = errors.New("kv: already exists")
	ErrConflict  = errors.New("kv: revision conflict")
	ErrCompacted = errors.New("kv: revision compacted")
	// ErrFutureRev: the requested revision is newer than the store's.
	ErrFutureRev = errors.New("kv: revision not reached yet")
	// ErrWatchClosed: the store ended a watch (slow consumer, shutdown).
	ErrWatchClosed = errors.New("kv: watch closed")
	// ErrInvalidKey: the database cannot hold the key's name (a NUL
	// character in PostgreSQL's text); nothing is stored under it.
	ErrInvalidKey = errors.New("kv: the database cannot hold this name")
	// ErrUnavailable: the database cannot be reached.
	ErrUnavailable = errors.New("kv: database unavailable")
)

// CompactedError carries the compacted and current revisions.
type CompactedError struct{ Requested, Compacted int64 }

func (e *CompactedError) Error() string { return ErrCompacted.Error() }
func (e *CompactedError) Unwrap() error { return ErrCompacted }

// FutureRevError carries the requested and current revisions.
type FutureRevError struct{ Requested, Current int64 }

func (e *FutureRevError) Error() string { return ErrFutureRev.Error() }
func (e *FutureRevError) Unwrap() error { return ErrFutureRev }

// Watcher is an open watch.
type Watcher interface {
	// Events delivers changes in revision order; it closes when the watch
	// ends.
	Events() <-chan Event
	// Stop ends the watch.
	Stop()
	// Err says why Events closed; nil when the caller stopped it.
	Err() error
	// Progress is a revision up to which every event of this watch has
	// been put on Events (other resources' and namespaces' writes move
	// it too), or 0 while the watch still reads its state or history. A
	// bookmark there, once Events is drained, tells the client that
	// nothing it watches changed up to it, as kube-apiserver's do.
	Progress() int64
}

// CompactionStatus reports how compaction is doing, for /readyz and logs.
type CompactionStatus struct {
	// Revision is the newest compacted revision this process knows of.
	Revision int64
	// LastSuccess is when a compaction run last completed without error.
	LastSuccess time.Time
	// LastError is the error of the latest run, if it failed.
	LastError error
}
