package registry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"strconv"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// Indexed fields the garbage collector finds its work by (clients cannot
// select on them): FieldHasOwners marks objects with owner references,
// FieldWaitingForGC owners being deleted that wait for the collector
// (orphan or foreground finalizer), and OwnerField one owner reference.
const (
	FieldHasOwners    = "tabula.gc/has-owners"
	FieldWaitingForGC = "tabula.gc/waiting"
)

// OwnerField is the indexed field recording an owner reference to uid.
func OwnerField(uid types.UID) string { return "ownerref." + string(uid) }

// encoder returns the store encoder for obj: it stamps the revision into
// the object and extracts labels and selectable fields.
//
// The store calls encoders one after another inside its single writer, so
// the object is serialized here, on the caller's goroutine, with a
// placeholder resourceVersion; the encoder only splices the revision into
// those bytes.
func (x *Resource) encoder(obj runtime.Object) kv.Encoder {
	acc, err := meta.Accessor(obj)
	if err != nil {
		return func(int64) (kv.Entry, error) { return kv.Entry{}, err }
	}
	orig := acc.GetResourceVersion()
	acc.SetResourceVersion(rvPlaceholder)
	b, err := x.Encode(obj)
	acc.SetResourceVersion(orig)
	if err != nil {
		return func(int64) (kv.Entry, error) { return kv.Entry{}, err }
	}
	// The placeholder is random, so it is found once, in the metadata,
	// unless a client guessed it; then the object is encoded in the writer.
	at := bytes.Index(b, rvPlaceholderJSON)
	if at < 0 || bytes.Index(b[at+1:], rvPlaceholderJSON) >= 0 {
		b = nil
	}
	entry := kv.Entry{Labels: acc.GetLabels(), Fields: x.fieldsOf(obj, acc), ExpiresAt: x.expiry()}
	return func(rev int64) (kv.Entry, error) {
		rv := strconv.FormatInt(rev, 10)
		acc.SetResourceVersion(rv)
		e := entry
		var err error
		if b != nil {
			// The placeholder is longer than any revision: the revision
			// goes in its place within b and the rest moves up, with no
			// copy of the object made. Only once: the encoders of a
			// batch that failed are called again, one write at a time,
			// and b is then no longer the placeholder's encoding.
			start := at + len(rvPlaceholderJSON) - len(rvPlaceholder) - 1
			n := copy(b[start:], rv)
			n += copy(b[start+n:], b[start+len(rvPlaceholder):])
			e.Value, b = b[:start+n], nil
		} else if e.Value, err = x.Encode(obj); err != nil {
			return kv.Entry{}, err
		}
		if len(e.Value) > maxStoredBytes {
			return kv.Entry{}, apierrors.NewRequestEntityTooLargeError("limit is 1572864")
		}
		return e, nil
	}
}

// rvPlaceholder stands for the resourceVersion while an object is
// serialized ahead of its write; it is random so that no stored content
// contains it by accident.
var rvPlaceholder, rvPlaceholderJSON = func() (string, []byte) {
	var b [12]byte
	_, _ = rand.Read(b[:])
	ph := "tabula-rv-" + hex.EncodeToString(b[:])
	return ph, []byte(`"resourceVersion":"` + ph + `"`)
}()

// maxStoredBytes is etcd's default request limit that kube-apiserver
// inherits for one object.
const maxStoredBytes = 1536 * 1024

// RefreshFields rewrites, in place, the selectable fields stored with this
// kind's live objects that lack one of its field labels: objects written
// by a Tabula that did not yet select the kind by them. Kinds sharing a
// storage resource must store the same fields (the Events'
// eventFields), or a refresh by one would drop the other's.
func (x *Resource) RefreshFields(ctx context.Context) (int, error) {
	if len(x.t.FieldLabels) == 0 {
		return 0, nil
	}
	stale := func(stored map[string]string) bool {
		for _, l := range x.t.FieldLabels {
			if _, ok := stored[l]; !ok {
				return true
			}
		}
		return false
	}
	return x.g.store.RefreshFields(ctx, x.t.StorageResource, stale, func(rec kv.Record) (map[string]string, error) {
		obj, err := x.Decode(rec)
		if err != nil {
			return nil, err
		}
		acc, err := meta.Accessor(obj)
		if err != nil {
			return nil, err
		}
		return x.fieldsOf(obj, acc), nil
	})
}

func (x *Resource) fieldsOf(obj runtime.Object, acc metav1.Object) map[string]string {
	f := map[string]string{"metadata.name": acc.GetName(), "metadata.namespace": acc.GetNamespace()}
	for _, ref := range acc.GetOwnerReferences() {
		f[OwnerField(ref.UID)] = "1"
	}
	if len(acc.GetOwnerReferences()) > 0 {
		f[FieldHasOwners] = "1"
	}
	if acc.GetDeletionTimestamp() != nil && (hasFinalizer(acc, metav1.FinalizerOrphanDependents) || hasFinalizer(acc, metav1.FinalizerDeleteDependents)) {
		f[FieldWaitingForGC] = "1"
	}
	if x.t.Fields != nil {
		for k, v := range x.t.Fields(obj) {
			f[k] = v
		}
	}
	return f
}

// expiry is when an object written now expires (zero: never).
func (x *Resource) expiry() time.Time {
	if !x.st.Expiring || x.g.eventTTL <= 0 {
		return time.Time{}
	}
	return time.Now().Add(x.g.eventTTL)
}

func hasFinalizer(acc metav1.Object, f string) bool {
	for _, x := range acc.GetFinalizers() {
		if x == f {
			return true
		}
	}
	return false
}
