package server

import (
	"context"
	"errors"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// get handles GET of one object. Every resourceVersion a get may name is
// satisfied by the latest state, once the store has reached it.
func (r *request) get() error {
	if rv := r.c.QueryParam("resourceVersion"); rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil || n < 0 {
			return apierrors.NewBadRequest("invalid resource version: resourceVersion: Invalid value: " + strconv.Quote(rv))
		}
		if _, err := r.waitForRev(n); err != nil {
			return err
		}
	}
	if _, err := r.negotiate(false); err != nil {
		return err
	}
	rec, err := r.s.store.Get(r.ctx, r.key(r.ri.Name))
	if err != nil {
		return r.storeError(err, r.ri.Name)
	}
	return r.writeRecord(http.StatusOK, rec)
}

var namespacesGR = runtimeschema.GroupResource{Resource: "namespaces"}

// getNamespace reads a namespace object; 404 when it does not exist.
func (s *Server) getNamespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	rec, err := s.store.Get(ctx, kv.Key{Resource: "namespaces", Name: name})
	if errors.Is(err, kv.ErrNotFound) {
		return nil, apierrors.NewNotFound(namespacesGR, name)
	}
	if err != nil {
		return nil, err
	}
	return decodeNamespace(rec.Value)
}

// decodeNamespace decodes a stored namespace.
func decodeNamespace(value []byte) (*corev1.Namespace, error) {
	obj, err := codecs.FromStorage(func() runtime.Object { return &corev1.Namespace{} }, corev1.SchemeGroupVersion.WithKind("Namespace"), value)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Namespace), nil
}
