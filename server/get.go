package server

import (
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	rec, err := r.res.GetRecord(r.ctx, r.ri.Namespace, r.ri.Name)
	if err != nil {
		return err
	}
	return r.writeRecord(http.StatusOK, rec)
}
