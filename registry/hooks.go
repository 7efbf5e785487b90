package registry

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
)

// storageHooks are what a kind's storage does around the generic write
// path, as kube-apiserver's BeginCreate, BeginUpdate and AfterDelete:
// Services claim cluster IPs and node ports from shared pools.
type storageHooks interface {
	// beginCreate runs before the object is prepared and validated; finish
	// reports whether the write was stored (so claims are kept or given
	// back).
	beginCreate(ctx context.Context, obj runtime.Object, dryRun bool) (finish func(stored bool), err error)
	beginUpdate(ctx context.Context, obj, old runtime.Object, dryRun bool) (finish func(stored bool), err error)
	// afterDelete runs once the object is gone.
	afterDelete(ctx context.Context, obj runtime.Object)
}

func noFinish(bool) {}
