package server

import (
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"

	"github.com/tabula-dev/tabula/apply"
	"github.com/tabula-dev/tabula/codecs"
	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
)

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
		}, registry.WriteOptions{DryRun: dryRun, Manager: r.manager(), Sent: r.sentOptions(), PreconditionUID: uidOf(obj)})
		if err != nil {
			return err
		}
		return r.writeScale(sc)
	case "patch":
		p, err := r.readPatch()
		if err != nil {
			return err
		}
		if p.kind == apply.ServerSideApply {
			sc, res, err := r.res.ApplyScale(r.ctx, r.ri.Namespace, r.ri.Name, p.body, p.applyOptions())
			if err != nil {
				return err
			}
			for _, w := range res.Warnings {
				r.warn(w)
			}
			return r.writeScale(sc)
		}
		sc, _, err := r.res.UpdateScale(r.ctx, r.ri.Namespace, r.ri.Name, func(cur *autoscalingv1.Scale) (*autoscalingv1.Scale, error) {
			obj, err := p.apply(cur, schema.ScaleKind)
			if err != nil {
				return nil, err
			}
			return obj.(*autoscalingv1.Scale), nil
		}, registry.WriteOptions{DryRun: p.dryRun, Manager: r.manager(), Sent: r.sentOptions()})
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
	r.auditResponse(sc)
	printed := schema.ScaleKind
	if r.t.Unstructured {
		printed = schema.CustomResourceScaleKind
	}
	body, err := codecs.ObjectView(out, printed, sc, r.c.QueryParam("includeObject"))
	if err != nil {
		return err
	}
	return r.writeBody(http.StatusOK, out, body)
}
