package server

import (
	"fmt"
	"net/http"
	"net/netip"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The subresources a kubelet, the scheduler or a proxied backend serves.
// Tabula runs no nodes: it answers them as kube-apiserver does when
// there is nothing to reach (a Pod without a node, a Service without
// endpoints) and says so plainly when there would be (a Pod bound to a
// Node: no kubelet is reachable from here). pods/binding and
// pods/eviction change state in the store and work fully.

var (
	bindingKind  = &schema.Type{Version: "v1", Kind: "Binding", New: func() runtime.Object { return &corev1.Binding{} }}
	evictionKind = &schema.Type{Group: "policy", Version: "v1", Kind: "Eviction", New: func() runtime.Object { return &policyv1.Eviction{} }}
)

// pod reads the Pod the request names.
func (r *request) pod(name string) (*corev1.Pod, error) {
	obj, _, err := r.res.Get(r.ctx, r.ri.Namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// podContainer picks the container a log, exec or attach request means,
// with kube-apiserver's errors.
func podContainer(pod *corev1.Pod, container string) (string, error) {
	if container != "" {
		for _, cs := range [][]corev1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range cs {
				if c.Name == container {
					return container, nil
				}
			}
		}
		for _, c := range pod.Spec.EphemeralContainers {
			if c.Name == container {
				return container, nil
			}
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	var names []string
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	msg := fmt.Sprintf("a container name must be specified for pod %s, choose one of: [%s]", pod.Name, strings.Join(names, " "))
	if len(pod.Spec.InitContainers) > 0 {
		var inits []string
		for _, c := range pod.Spec.InitContainers {
			inits = append(inits, c.Name)
		}
		msg += fmt.Sprintf(" or one of the init containers: [%s]", strings.Join(inits, " "))
	}
	return "", apierrors.NewBadRequest(msg)
}

// noKubelet is the answer for a Pod bound to a Node: the Node must exist
// (404 as kube-apiserver's node lookup), and its kubelet cannot be reached.
func (r *request) noKubelet(nodeName string) error {
	if _, _, err := r.s.api.MustLookup("", "v1", "nodes").Get(r.ctx, "", nodeName); err != nil {
		return err
	}
	return apierrors.NewInternalError(fmt.Errorf("error dialing backend: node %q has no kubelet this API server can reach (Tabula runs no nodes)", nodeName))
}

// podLog serves GET pods/{name}/log: a Pod that no node runs has written
// no log, so the answer is empty, as kube-apiserver's is.
func (r *request) podLog() error {
	if r.verb != "get" {
		return methodNotAllowed()
	}
	q := r.c.QueryParams()
	for _, p := range []string{"tailLines", "limitBytes", "sinceSeconds"} {
		if v := q.Get(p); v != "" {
			if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
				return apierrors.NewBadRequest(fmt.Sprintf("invalid %s %q: must be a non-negative integer", p, v))
			}
		}
	}
	if q.Get("sinceSeconds") != "" && q.Get("sinceTime") != "" {
		return apierrors.NewInvalid(runtimeschema.GroupKind{Kind: "PodLogOptions"}, "", field.ErrorList{
			field.Forbidden(field.NewPath(""), "at most one of `sinceTime` or `sinceSeconds` may be specified")})
	}
	pod, err := r.pod(r.ri.Name)
	if err != nil {
		return err
	}
	if _, err := podContainer(pod, q.Get("container")); err != nil {
		return err
	}
	if pod.Spec.NodeName != "" {
		return r.noKubelet(pod.Spec.NodeName)
	}
	r.c.Response().Header().Set("Content-Type", "text/plain")
	r.c.Response().WriteHeader(http.StatusOK)
	return nil
}

// podStream serves exec, attach and portforward.
func (r *request) podStream() error {
	if r.verb != "get" && r.verb != "create" {
		return methodNotAllowed()
	}
	pod, err := r.pod(r.ri.Name)
	if err != nil {
		return err
	}
	if r.ri.Subresource != "portforward" {
		if _, err := podContainer(pod, r.c.QueryParam("container")); err != nil {
			return err
		}
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	return r.noKubelet(pod.Spec.NodeName)
}

// proxyTarget splits a proxy name, "name", "name:port" or
// "scheme:name:port".
func proxyTarget(id string) (name string, ok bool) {
	parts := strings.Split(id, ":")
	switch len(parts) {
	case 1, 2:
		return parts[0], parts[0] != ""
	case 3:
		return parts[1], parts[1] != "" && (parts[0] == "http" || parts[0] == "https" || parts[0] == "")
	}
	return "", false
}

func unreachable(what string) error {
	return apierrors.NewServiceUnavailable("error trying to reach service: " + what)
}

func (r *request) podProxy() error {
	name, ok := proxyTarget(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", r.ri.Name))
	}
	pod, err := r.pod(name)
	if err != nil {
		return err
	}
	if ip, err := netip.ParseAddr(pod.Status.PodIP); err != nil || !ip.IsGlobalUnicast() {
		return apierrors.NewBadRequest("address not allowed")
	}
	return unreachable(fmt.Sprintf("this API server does not proxy to Pods (pod %s at %s)", pod.Name, pod.Status.PodIP))
}

func (r *request) serviceProxy() error {
	name, ok := proxyTarget(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", r.ri.Name))
	}
	if _, _, err := r.res.Get(r.ctx, r.ri.Namespace, name); err != nil {
		return err
	}
	obj, _, err := r.s.api.MustLookup("", "v1", "endpoints").Get(r.ctx, r.ri.Namespace, name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if eps, ok := obj.(*corev1.Endpoints); ok {
		for _, ss := range eps.Subsets {
			if len(ss.Addresses) > 0 {
				return unreachable(fmt.Sprintf("this API server does not proxy to Service endpoints (service %q)", name))
			}
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}

func (r *request) nodeProxy() error {
	name, ok := proxyTarget(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", r.ri.Name))
	}
	if _, _, err := r.res.Get(r.ctx, "", name); err != nil {
		return err
	}
	return unreachable(fmt.Sprintf("node %q has no kubelet this API server can reach (Tabula runs no nodes)", name))
}

// created is the Status kube-apiserver answers a binding or eviction with.
func (r *request) created() error {
	return r.s.writeJSONStatus(r.c, http.StatusCreated, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess, Code: http.StatusCreated,
	})
}

// podBinding assigns a Pod to a Node, as the scheduler does through
// pods/binding: spec.nodeName, the binding's annotations and the
// PodScheduled condition, written once.
func (r *request) podBinding() error {
	if r.verb != "create" {
		return methodNotAllowed()
	}
	obj, _, err := r.readObject(bindingKind)
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	if b.Name != r.ri.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	return r.bind(b)
}

// bind assigns the Pod b names to its target Node: pods/binding and the
// legacy bindings resource (a create naming the Pod in its metadata).
func (r *request) bind(b *corev1.Binding) error {
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(runtimeschema.GroupKind{Kind: "Binding"}, b.Name, errs)
	}
	bindingGR := runtimeschema.GroupResource{Resource: "pods/binding"}
	pods := r.s.api.MustLookup("", "v1", "pods")
	_, _, err := pods.Update(r.ctx, r.ri.Namespace, b.Name, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if b.UID != "" && b.UID != pod.UID {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", b.UID, pod.UID))
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		pod.Spec.NodeName = b.Target.Name
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		pod.ResourceVersion = ""
		return pod, nil
	}, registry.UpdateOptions{Subresource: "binding", SkipValidation: true})
	if err != nil {
		return err
	}
	return r.created()
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status != c.Status {
				pod.Status.Conditions[i] = c
			}
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// podEviction deletes a Pod unless that would violate its
// PodDisruptionBudget, as kube-apiserver's eviction subresource does
// (kubectl drain). Pods that are not running (Pending, as every Pod on a
// node-less server is, or finished) are deleted without a budget check.
func (r *request) podEviction() error {
	if r.verb != "create" {
		return methodNotAllowed()
	}
	obj, _, err := r.readObject(evictionKind)
	if err != nil {
		return err
	}
	ev := obj.(*policyv1.Eviction)
	if ev.Name != r.ri.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	opts := ev.DeleteOptions
	if opts == nil {
		opts = &metav1.DeleteOptions{}
	}
	// As kube-apiserver's eviction does, a budget changed meanwhile (the
	// disruption controller writes its status all the time) is read again
	// and the eviction retried, rather than failing the client.
	err = retry.OnError(evictionRetry, apierrors.IsConflict, func() error {
		pod, err := r.pod(r.ri.Name)
		if err != nil {
			return err
		}
		switch pod.Status.Phase {
		case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed, "":
		default:
			if pod.DeletionTimestamp == nil {
				return r.checkDisruptionBudget(pod)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := r.res.Delete(r.ctx, r.ri.Namespace, r.ri.Name, opts); err != nil {
		return err
	}
	return r.created()
}

// evictionRetry is kube-apiserver's backoff for evictions that meet a
// changed budget.
var evictionRetry = wait.Backoff{Steps: 20, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// checkDisruptionBudget takes one disruption from the budget covering a
// running Pod, or refuses the eviction with kube-apiserver's 429.
func (r *request) checkDisruptionBudget(pod *corev1.Pod) error {
	pdbs := r.s.api.MustLookup("policy", "v1", "poddisruptionbudgets")
	res, err := pdbs.List(r.ctx, kv.ListOptions{Namespace: pod.Namespace})
	if err != nil {
		return err
	}
	var matching []*policyv1.PodDisruptionBudget
	for _, rec := range res.Items {
		obj, err := pdbs.Decode(rec)
		if err != nil {
			return err
		}
		pdb := obj.(*policyv1.PodDisruptionBudget)
		// policy/v1: a nil selector matches no Pod, an empty one all.
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil {
			continue
		}
		if sel.Matches(labels.Set(pod.Labels)) {
			matching = append(matching, pdb)
		}
	}
	switch len(matching) {
	case 0:
		return nil
	case 1:
	default:
		return apierrors.NewInternalError(fmt.Errorf("This pod has more than one PodDisruptionBudget, which the eviction subresource does not support."))
	}
	pdb := matching[0]
	refuse := func(cause string) error {
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: "DisruptionBudget", Message: cause})
		return err
	}
	if pdb.Status.ObservedGeneration < pdb.Generation {
		return refuse(fmt.Sprintf("The disruption budget %s is still being processed by the server.", pdb.Name))
	}
	if pdb.Status.DisruptionsAllowed < 0 {
		return apierrors.NewForbidden(runtimeschema.GroupResource{Resource: "pods/eviction"}, pod.Name, fmt.Errorf("pdb disruptions allowed is negative"))
	}
	if pdb.Status.DisruptionsAllowed == 0 {
		return refuse(fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy))
	}
	// Spend one disruption, recorded as the disruption controller expects.
	_, _, err = pdbs.Update(r.ctx, pdb.Namespace, pdb.Name, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*policyv1.PodDisruptionBudget)
		if p.ResourceVersion != pdb.ResourceVersion {
			return nil, apierrors.NewConflict(runtimeschema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, p.Name, fmt.Errorf("the budget changed; retry the eviction"))
		}
		p.Status.DisruptionsAllowed--
		if p.Status.DisruptedPods == nil {
			p.Status.DisruptedPods = map[string]metav1.Time{}
		}
		p.Status.DisruptedPods[pod.Name] = metav1.NewTime(time.Now().Truncate(time.Second))
		return p, nil
	}, registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	return err
}
