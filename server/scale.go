package server

import (
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

// subresourceHandlers serve the subresources whose kind is not the
// object's own, as kube-apiserver's storage map does: by subresource for
// every kind that has it ("scale"), by core resource/subresource for the
// kubelet- and scheduler-facing ones. The others (status, finalize) are
// the object itself and go through the verb handlers.
var subresourceHandlers = map[string]func(*request) error{
	"scale":                 (*request).scale,
	"pods/log":              (*request).podLog,
	"pods/exec":             (*request).podStream,
	"pods/attach":           (*request).podStream,
	"pods/portforward":      (*request).podStream,
	"pods/proxy":            (*request).podProxy,
	"pods/binding":          (*request).podBinding,
	"pods/eviction":         (*request).podEviction,
	"services/proxy":        (*request).serviceProxy,
	"serviceaccounts/token": (*request).serviceAccountToken,
	"nodes/proxy":           (*request).nodeProxy,
}

// scale serves GET, PUT and PATCH of an object's scale subresource.
func (r *request) scale() error {
	switch r.verb {
	case "get":
		if _, err := r.negotiate(false); err != nil {
			return err
		}
		sc, err := r.res.GetScale(r.ctx, r.ri.Namespace, r.ri.Name)
		if err != nil {
			return err
		}
		return r.writeScale(sc)
	case "update":
		obj, dryRun, err := r.readObject(schema.ScaleKind)
		if err != nil {
			return err
		}
		sc, _, err := r.res.UpdateScale(r.ctx, r.ri.Namespace, r.ri.Name, func(*autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			return obj.(*autoscalingv1.Scale).DeepCopy(), nil
		}, registry.WriteOptions{DryRun: dryRun})
		if err != nil {
			return err
		}
		return r.writeScale(sc)
	case "patch":
		p, err := r.readPatch()
		if err != nil {
			return err
		}
		sc, _, err := r.res.UpdateScale(r.ctx, r.ri.Namespace, r.ri.Name, func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			obj, err := p.apply(cur, schema.ScaleKind)
			if err != nil {
				return nil, err
			}
			return obj.(*autoscalingv1.Scale), nil
		}, registry.WriteOptions{DryRun: p.dryRun})
		if err != nil {
			return err
		}
		return r.writeScale(sc)
	}
	return methodNotAllowed()
}

func (r *request) writeScale(sc *autoscalingv1.Scale) error {
	out, err := r.negotiate(false)
	if err != nil {
		return err
	}
	return r.writeObject(http.StatusOK, out, sc)
}
