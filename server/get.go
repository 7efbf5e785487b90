package server

import (
	"net/http"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// get handles GET of one object. Every resourceVersion a get may name is
// satisfied by the latest state, once the store has reached it.
func (r *request) get() error {
	if export, ok := r.c.QueryParams()["export"]; ok {
		// kube's get handler refuses what kubectl --export once sent
		// (any value but 0 and false is true; the conversion never fails).
		exporting := true
		_ = runtime.Convert_Slice_string_To_bool(&export, &exporting, nil)
		if exporting {
			return apierrors.NewBadRequest("the export parameter, deprecated since v1.14, is no longer supported")
		}
	}
	if rv := r.c.QueryParam("resourceVersion"); rv != "" && rv != "0" {
		n, err := strconv.ParseInt(rv, 10, 64)
		if err != nil || n < 0 {
			return apierrors.NewBadRequest("invalid resource version: resourceVersion: Invalid value: " + strconv.Quote(rv))
		}
		if _, err := r.waitForRev(n); err != nil {
			return err
		}
	}
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	form, kept := r.keptForm(out)
	if kept && r.s.held.likely() {
		// An answer kept for the live revision is sent as it is: the
		// store then reads the revision alone, none of the object.
		var b []byte
		rec, skipped, err := r.res.GetRecordKnown(r.ctx, r.ri.Namespace, r.ri.Name, func(rev int64) bool {
			var ok bool
			b, ok = r.s.encoded.peek(encodedKey{rev, r.t, form})
			return ok
		})
		if err != nil {
			return err
		}
		r.s.held.saw(skipped)
		if skipped {
			return r.writeKept(http.StatusOK, out, form, b)
		}
		return r.writeRecord(http.StatusOK, rec)
	}
	rec, err := r.res.GetRecord(r.ctx, r.ri.Namespace, r.ri.Name)
	if err != nil {
		return err
	}
	if kept {
		r.s.held.saw(r.s.encoded.holds(encodedKey{rec.Rev, r.t, form}))
	}
	return r.writeRecord(http.StatusOK, rec)
}
