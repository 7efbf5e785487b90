package server

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	genericrest "k8s.io/apiserver/pkg/registry/generic/rest"
	translator "k8s.io/apiserver/pkg/util/proxy"
	"k8s.io/client-go/util/retry"
	pdbhelper "k8s.io/component-helpers/apps/poddisruptionbudget"
	api "k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/utils/ptr"

	"github.com/tabula-dev/tabula/registry"
	"github.com/tabula-dev/tabula/schema"
	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// The subresources a kubelet, the scheduler or a proxied backend serves:
// logs, exec, attach and port-forward go to the Pod's kubelet (kubelet.go),
// proxies to the Pod, Service endpoint or Node; pods/binding and
// pods/eviction change state in the store.

var (
	bindingKind  = &schema.Type{Version: "v1", Kind: "Binding", New: func() runtime.Object { return &corev1.Binding{} }}
	evictionKind = &schema.Type{Group: "policy", Version: "v1", Kind: "Eviction", New: func() runtime.Object { return &policyv1.Eviction{} }}
	// Older clients (kubectl drain before 1.22's policy/v1) send these.
	evictionKindV1beta1 = &schema.Type{Group: "policy", Version: "v1beta1", Kind: "Eviction", New: func() runtime.Object { return &policyv1beta1.Eviction{} }}
)

// pod reads a Pod of the request's namespace.
func (r *request) pod(name string) (*corev1.Pod, error) { return r.podIn(r.ri.Namespace, name) }

func (r *request) podIn(namespace, name string) (*corev1.Pod, error) {
	obj, _, err := r.s.api.MustLookup("", "v1", "pods").Get(r.ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	return obj.(*corev1.Pod), nil
}

// podContainer picks the container a log, exec or attach request means,
// with kube-apiserver's errors: a named one must be one of the Pod's
// (init, regular or ephemeral); without a name the Pod must have exactly
// one regular container.
func podContainer(pod *corev1.Pod, container string) (string, error) {
	var names []string
	for _, c := range pod.Spec.InitContainers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		names = append(names, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		names = append(names, c.Name)
	}
	if container != "" {
		if !slices.Contains(names, container) {
			return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, pod.Name))
		}
		return container, nil
	}
	switch len(pod.Spec.Containers) {
	case 1:
		return pod.Spec.Containers[0].Name, nil
	case 0:
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s", pod.Name))
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, names))
}

// podLog serves GET pods/{name}/log from the Pod's kubelet, with kube's
// option validation; a Pod no node runs yet has no log (204, as
// kube-apiserver answers).
func (r *request) podLog() error {
	if r.verb != "get" {
		return methodNotAllowed()
	}
	opts := &api.PodLogOptions{}
	if err := r.connectOptions(opts); err != nil {
		return err
	}
	if errs := corevalidation.ValidatePodLogOptions(opts, false); len(errs) > 0 {
		return apierrors.NewInvalid(api.Kind("PodLogOptions"), r.ri.Name, errs)
	}
	pod, err := r.pod(r.ri.Name)
	if err != nil {
		return err
	}
	container, err := podContainer(pod, opts.Container)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return r.c.NoContent(http.StatusNoContent)
	}
	q := url.Values{}
	for param, on := range map[string]bool{"follow": opts.Follow, "previous": opts.Previous, "timestamps": opts.Timestamps} {
		if on {
			q.Set(param, "true")
		}
	}
	for param, v := range map[string]*int64{"sinceSeconds": opts.SinceSeconds, "tailLines": opts.TailLines, "limitBytes": opts.LimitBytes} {
		if v != nil {
			q.Set(param, strconv.FormatInt(*v, 10))
		}
	}
	if opts.SinceTime != nil {
		q.Set("sinceTime", opts.SinceTime.Format(time.RFC3339))
	}
	location, transport, err := r.kubeletLocation(pod, fmt.Sprintf("/containerLogs/%s/%s/%s", pod.Namespace, pod.Name, container), q, opts.InsecureSkipTLSVerifyBackend)
	if err != nil {
		return err
	}
	return r.writeStream(&genericrest.LocationStreamer{
		Location: location, Transport: transport, ContentType: "text/plain", Flush: opts.Follow,
		ResponseChecker: genericrest.NewGenericHttpResponseChecker(api.Resource("pods/log"), r.ri.Name),
		RedirectChecker: genericrest.PreventRedirects,
	})
}

// streamQuery is the kubelet's spelling of the streams a client asked for.
func streamQuery(stdin, stdout, stderr, tty bool) url.Values {
	q := url.Values{}
	for param, on := range map[string]bool{api.ExecStdinParam: stdin, api.ExecStdoutParam: stdout, api.ExecStderrParam: stderr, api.ExecTTYParam: tty} {
		if on {
			q.Set(param, "1")
		}
	}
	return q
}

// podExec, podAttach and podPortForward relay a stream to the kubelet:
// SPDY upgrades through, WebSocket ones translated as kube-apiserver does.
func (r *request) podExec() error {
	opts := &api.PodExecOptions{}
	if err := r.connectOptions(opts); err != nil {
		return err
	}
	if err := r.admitConnect(opts); err != nil {
		return err
	}
	if err := r.authorizeStreamCreate(); err != nil {
		return err
	}
	q := streamQuery(opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
	for _, c := range opts.Command {
		q.Add("command", c)
	}
	return r.containerStream("exec", opts.Container, q, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
}

func (r *request) podAttach() error {
	opts := &api.PodAttachOptions{}
	if err := r.connectOptions(opts); err != nil {
		return err
	}
	if err := r.admitConnect(opts); err != nil {
		return err
	}
	if err := r.authorizeStreamCreate(); err != nil {
		return err
	}
	q := streamQuery(opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
	return r.containerStream("attach", opts.Container, q, opts.Stdin, opts.Stdout, opts.Stderr, opts.TTY)
}

// containerStream relays exec or attach to the kubelet's /exec or
// /attach of the chosen container.
func (r *request) containerStream(path, container string, q url.Values, stdin, stdout, stderr, tty bool) error {
	pod, err := r.pod(r.ri.Name)
	if err != nil {
		return err
	}
	if container, err = podContainer(pod, container); err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return noHost(pod)
	}
	location, transport, err := r.kubeletLocation(pod, fmt.Sprintf("/%s/%s/%s/%s", path, pod.Namespace, pod.Name, container), q, false)
	if err != nil {
		return err
	}
	h := r.proxyHandler(location, transport, false, true)
	return r.relay(streamTranslated(h, location, transport, stdin, stdout, stderr, tty))
}

func noHost(pod *corev1.Pod) error {
	return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
}

func (r *request) podPortForward() error {
	opts := &api.PodPortForwardOptions{}
	if err := r.connectOptions(opts); err != nil {
		return err
	}
	if err := r.admitConnect(opts); err != nil {
		return err
	}
	if err := r.authorizeStreamCreate(); err != nil {
		return err
	}
	pod, err := r.pod(r.ri.Name)
	if err != nil {
		return err
	}
	if pod.Spec.NodeName == "" {
		return noHost(pod)
	}
	q := url.Values{}
	if len(opts.Ports) > 0 {
		ports := make([]string, len(opts.Ports))
		for i, p := range opts.Ports {
			ports[i] = strconv.Itoa(int(p))
		}
		q.Set(api.PortHeader, strings.Join(ports, ","))
	}
	location, transport, err := r.kubeletLocation(pod, fmt.Sprintf("/portForward/%s/%s", pod.Namespace, pod.Name), q, false)
	if err != nil {
		return err
	}
	h := r.proxyHandler(location, transport, false, true)
	// kubectl 1.31+ tunnels port-forward's SPDY over a WebSocket.
	return r.relay(translator.NewTranslatingHandler(h, translator.NewTunnelingHandler(h), wsstream.IsWebSocketRequestWithTunnelingProtocol))
}

// podProxy relays to the Pod's IP ("name", "name:port" or
// "scheme:name:port"; without a port, the first a container declares),
// as kube-apiserver's pods/proxy does.
func (r *request) podProxy() error {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", r.ri.Name))
	}
	pod, err := r.pod(name)
	if err != nil {
		return err
	}
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	var podIP string
	if len(pod.Status.PodIPs) > 0 {
		podIP = pod.Status.PodIPs[0].IP
	}
	if ip, err := netip.ParseAddr(podIP); err != nil || !ip.IsGlobalUnicast() {
		return apierrors.NewBadRequest("address not allowed")
	}
	location := &url.URL{Scheme: scheme, Host: podIP}
	if port != "" {
		location.Host = net.JoinHostPort(podIP, port)
	} else if strings.Contains(podIP, ":") {
		location.Host = "[" + podIP + "]"
	}
	location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, r.proxyPath())
	return r.relay(r.proxyHandler(location, r.s.proxyTransport, true, false))
}

// serviceProxy relays to one of the Service's endpoints that a Pod of
// its namespace holds, picked at random, as kube-apiserver's
// services/proxy does ("name", "name:port" by number or port name,
// "scheme:name:port").
func (r *request) serviceProxy() error {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", r.ri.Name))
	}
	if num, err := strconv.ParseInt(port, 10, 64); err == nil {
		obj, _, err := r.res.Get(r.ctx, r.ri.Namespace, name)
		if err != nil {
			return err
		}
		found := false
		for _, sp := range obj.(*corev1.Service).Spec.Ports {
			if int64(sp.Port) == num {
				port, found = sp.Name, true
				break
			}
		}
		if !found {
			return apierrors.NewServiceUnavailable(fmt.Sprintf("no service port %d found for service %q", num, name))
		}
	}
	obj, _, err := r.s.api.MustLookup("", "v1", "endpoints").Get(r.ctx, r.ri.Namespace, name)
	if err != nil {
		return err
	}
	eps := obj.(*corev1.Endpoints)
	if len(eps.Subsets) == 0 {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
	}
	first := rand.IntN(len(eps.Subsets))
	for i := range eps.Subsets {
		ss := &eps.Subsets[(first+i)%len(eps.Subsets)]
		if len(ss.Addresses) == 0 {
			continue
		}
		for _, p := range ss.Ports {
			if p.Name != port {
				continue
			}
			firstAddr := rand.IntN(len(ss.Addresses))
			for j := range ss.Addresses {
				addr := ss.Addresses[(firstAddr+j)%len(ss.Addresses)]
				if !r.podHoldsAddress(addr) {
					continue
				}
				location := &url.URL{Scheme: scheme, Host: net.JoinHostPort(addr.IP, strconv.Itoa(int(p.Port)))}
				location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, r.proxyPath())
				return r.relay(r.proxyHandler(location, r.s.proxyTransport, true, false))
			}
		}
	}
	return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", r.ri.Name))
}

// podHoldsAddress: an endpoint is proxied to only when it names a Pod of
// the request's namespace that has its IP, so a hand-written Endpoints
// object cannot aim the API server at an arbitrary address.
func (r *request) podHoldsAddress(addr corev1.EndpointAddress) bool {
	if addr.TargetRef == nil || addr.TargetRef.Namespace != r.ri.Namespace {
		return false
	}
	pod, err := r.podIn(r.ri.Namespace, addr.TargetRef.Name)
	if err != nil {
		return false
	}
	for _, ip := range pod.Status.PodIPs {
		if ip.IP == addr.IP {
			return true
		}
	}
	return false
}

// nodeProxy relays to the Node's kubelet, or to another port at its
// address, as kube-apiserver's nodes/proxy does: only to an address that
// resolves to global unicast IPs.
func (r *request) nodeProxy() error {
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(r.ri.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid node request %q", r.ri.Name))
	}
	info, err := r.s.kubelets.GetConnectionInfo(r.ctx, types.NodeName(name))
	if err != nil {
		return err
	}
	addrs, err := net.DefaultResolver.LookupNetIP(r.ctx, "ip", info.Hostname)
	if err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	if len(addrs) == 0 {
		return apierrors.NewBadRequest("no addresses for hostname")
	}
	for _, a := range addrs {
		if !a.Unmap().IsGlobalUnicast() {
			return apierrors.NewBadRequest("address not allowed")
		}
	}
	location, transport := &url.URL{Scheme: info.Scheme, Host: net.JoinHostPort(info.Hostname, info.Port)}, info.Transport
	if port != "" && port != info.Port {
		location, transport = &url.URL{Scheme: scheme, Host: net.JoinHostPort(info.Hostname, port)}, r.s.proxyTransport
	}
	location.Path = utilnet.JoinPreservingTrailingSlash(location.Path, r.proxyPath())
	return r.relay(r.proxyHandler(location, transport, true, false))
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
	obj, dryRun, err := r.readObject(bindingKind)
	if err != nil {
		return err
	}
	b := obj.(*corev1.Binding)
	if err := r.bodyNamespace(b); err != nil {
		return err
	}
	if b.Name != r.ri.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	return r.bind(b, dryRun)
}

// bodyNamespace checks the namespace a namespaced create's body names
// (a subresource's, a review's), as kube-apiserver's create handler checks
// every body's: none means the request's.
func (r *request) bodyNamespace(obj metav1.Object) error {
	if ns := obj.GetNamespace(); ns != "" && ns != r.ri.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// bind assigns the Pod b names to its target Node: pods/binding and the
// legacy bindings resource (a create naming the Pod in its metadata). The
// binding's uid and resourceVersion are preconditions on the Pod, as
// kube-apiserver's binding storage makes them.
func (r *request) bind(b *corev1.Binding, dryRun bool) error {
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
	// The legacy collection is its own resource to admission, as kube's
	// bindings storage is: plugins and policies for pods/binding
	// (PodTopologyLabels) do not see it.
	admitter, subresource := pods, "binding"
	if r.ri.Subresource == "" {
		admitter, subresource = r.s.api.MustLookup("", "v1", "bindings"), ""
	}
	if err := admitter.AdmitSubresource(r.ctx, r.ri.Namespace, b.Name, subresource, bindingKind, b, dryRun); err != nil {
		return err
	}
	_, _, err := pods.Update(r.ctx, r.ri.Namespace, b.Name, func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		// A failed precondition is kube's storage error, on the Pod.
		if b.UID != "" && b.UID != pod.UID {
			return nil, pods.PreconditionFailed(pod.Namespace, pod.Name, "UID", b.UID, pod.UID)
		}
		if b.ResourceVersion != "" && b.ResourceVersion != pod.ResourceVersion {
			return nil, pods.PreconditionFailed(pod.Namespace, pod.Name, "ResourceVersion", b.ResourceVersion, pod.ResourceVersion)
		}
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if len(pod.Spec.SchedulingGates) != 0 {
			return nil, apierrors.NewConflict(bindingGR, b.Name, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", pod.Name))
		}
		pod.Spec.NodeName = b.Target.Name
		// kube 1.35's ClearingNominatedNodeNameAfterBinding and
		// PodTopologyLabelsAdmission (both on by default): the nomination
		// is dropped and the binding's labels are copied over the Pod's.
		pod.Status.NominatedNodeName = ""
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		for k, v := range b.Labels {
			if pod.Labels == nil {
				pod.Labels = map[string]string{}
			}
			pod.Labels[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue})
		pod.ResourceVersion = ""
		return pod, nil
	}, registry.UpdateOptions{Subresource: "binding", SkipValidation: true, WriteOptions: registry.WriteOptions{DryRun: dryRun}})
	if err != nil {
		return err
	}
	return r.created()
}

func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	c.LastTransitionTime = metav1.NewTime(time.Now().Truncate(time.Second))
	for i, old := range pod.Status.Conditions {
		if old.Type == c.Type {
			// As kube's UpdatePodCondition: the new condition replaces
			// the old, keeping its transition time when the status stays.
			if old.Status == c.Status {
				c.LastTransitionTime = old.LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// podEviction deletes a Pod unless that would violate its
// PodDisruptionBudget, as kube-apiserver's eviction subresource does
// (kubectl drain): a Pod that is Pending, finished or already being
// deleted goes without a budget check; an unready one goes without
// spending the budget when its budget is healthy (or lets unhealthy Pods
// go always); a ready one spends a disruption. Before the delete the Pod
// is marked with the DisruptionTarget condition, which Jobs' pod failure
// policies read.
func (r *request) podEviction() error {
	if r.verb != "create" {
		return methodNotAllowed()
	}
	obj, dryRun, err := r.readObject(evictionKind, evictionKindV1beta1)
	if err != nil {
		return err
	}
	if b, ok := obj.(*policyv1beta1.Eviction); ok {
		// The same fields in both versions.
		obj = &policyv1.Eviction{TypeMeta: metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"}, ObjectMeta: b.ObjectMeta, DeleteOptions: b.DeleteOptions}
	}
	ev := obj.(*policyv1.Eviction)
	if err := r.bodyNamespace(ev); err != nil {
		return err
	}
	if ev.Name != r.ri.Name {
		return apierrors.NewBadRequest("name in URL does not match name in Eviction object")
	}
	if ev.DeleteOptions != nil && ptr.Deref(ev.DeleteOptions.IgnoreStoreReadErrorWithClusterBreakingPotential, false) {
		return apierrors.NewInvalid(runtimeschema.GroupKind{Group: "policy", Kind: "Eviction"}, ev.Name, field.ErrorList{field.Invalid(
			field.NewPath("deleteOptions", "ignoreStoreReadErrorWithClusterBreakingPotential"), true, "can not be set for pod eviction, try after removing the option")})
	}
	if err := r.s.api.MustLookup("", "v1", "pods").AdmitSubresource(r.ctx, r.ri.Namespace, ev.Name, "eviction", evictionKind, ev, dryRun); err != nil {
		return err
	}
	opts, err := evictionDeleteOptions(ev, dryRun)
	if err != nil {
		return err
	}
	// A precondition the client set is its own: no retries then.
	retriable := apierrors.IsConflict
	if rvSet(opts) {
		retriable = func(error) bool { return false }
	}
	var pod *corev1.Pod
	deleted := false
	err = retry.OnError(evictionRetry, retriable, func() error {
		if pod, err = r.pod(r.ri.Name); err != nil {
			return err
		}
		if !evictsWithoutBudget(pod) {
			return nil
		}
		o := opts
		if pod.Status.Phase == corev1.PodPending && pod.DeletionTimestamp == nil && !rvSet(opts) {
			o = withResourceVersion(opts, pod.ResourceVersion) // not a Pod that started meanwhile
		}
		if err := r.markAndDeletePod(o); err != nil {
			return err
		}
		deleted = true
		return nil
	})
	if err != nil {
		return err
	}
	if deleted {
		return r.created()
	}

	pdb, several, err := r.podDisruptionBudget(pod)
	if err != nil {
		return err
	}
	if several {
		// kube answers this Status as the create's result: HTTP 201.
		return r.s.writeJSONStatus(r.c, http.StatusCreated, &metav1.Status{
			TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
			Status:   metav1.StatusFailure, Code: http.StatusInternalServerError,
			Message: "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.",
		})
	}
	spared := false // an unready Pod under a healthy budget goes free
	if pdb != nil && !podReady(pod) {
		policy := pdb.Spec.UnhealthyPodEvictionPolicy
		spared = policy != nil && *policy == policyv1.AlwaysAllow ||
			pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy && pdb.Status.DesiredHealthy > 0
	}
	if pdb != nil && !spared {
		// As kube-apiserver's eviction does, a budget changed meanwhile
		// (the disruption controller writes its status all the time) is
		// read again and the eviction retried, rather than failing the
		// client.
		err := retry.OnError(evictionRetry, apierrors.IsConflict, func() error {
			if err := r.spendDisruption(pod, pdb, len(opts.DryRun) > 0); err != nil {
				if !apierrors.IsConflict(err) {
					return err
				}
				// Read again by name, as kube's eviction does: a budget
				// deleted meanwhile fails the eviction.
				obj, _, gerr := r.s.api.MustLookup("policy", "v1", "poddisruptionbudgets").Get(r.ctx, pdb.Namespace, pdb.Name)
				if gerr != nil {
					return gerr
				}
				pdb = obj.(*policyv1.PodDisruptionBudget)
				return err
			}
			return nil
		})
		if wait.Interrupted(err) {
			err = apierrors.NewTimeoutError(fmt.Sprintf("couldn't update PodDisruptionBudget %q due to conflicts", pdb.Name), 10)
		}
		if err != nil {
			return err
		}
	}
	o := opts
	if spared && !rvSet(opts) {
		o = withResourceVersion(opts, pod.ResourceVersion)
	}
	if err := r.markAndDeletePod(o); err != nil {
		if apierrors.IsConflict(err) && spared && !rvSet(opts) {
			// The Pod changed (it may be ready now): the client retries.
			return budgetInProcess(pdb.Name)
		}
		return err
	}
	return r.created()
}

// evictsWithoutBudget: a Pending or finished Pod, or one already being
// deleted, goes without a look at its budget (kube's canIgnorePDB).
func evictsWithoutBudget(pod *corev1.Pod) bool {
	switch pod.Status.Phase {
	case corev1.PodPending, corev1.PodSucceeded, corev1.PodFailed:
		return true
	}
	return pod.DeletionTimestamp != nil
}

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func rvSet(opts *metav1.DeleteOptions) bool {
	return opts.Preconditions != nil && opts.Preconditions.ResourceVersion != nil
}

func withResourceVersion(opts *metav1.DeleteOptions, rv string) *metav1.DeleteOptions {
	o := opts.DeepCopy()
	if o.Preconditions == nil {
		o.Preconditions = &metav1.Preconditions{}
	}
	o.Preconditions.ResourceVersion = &rv
	return o
}

// budgetInProcess is kube's 429 for a budget it could not judge yet:
// clients retry it after ten seconds.
func budgetInProcess(name string) error {
	err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
	err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause,
		Message: fmt.Sprintf("The disruption budget %s is still being processed by the server.", name)})
	return err
}

// markAndDeletePod adds the DisruptionTarget condition to the Pod, then
// deletes it with opts (a dry run only deletes), as kube's
// addConditionAndDeletePod: the mark checks opts' preconditions, and the
// delete's resourceVersion precondition moves to the marked Pod.
func (r *request) markAndDeletePod(opts *metav1.DeleteOptions) error {
	pods := r.s.api.MustLookup("", "v1", "pods")
	if len(opts.DryRun) == 0 {
		// As kube's GuaranteedUpdate of the latest Pod: unconditional
		// (retried on a conflict), and not admitted again — the eviction
		// was.
		res, _, err := pods.Update(registry.AdmittedAs(r.ctx), r.ri.Namespace, r.ri.Name, func(cur runtime.Object) (runtime.Object, error) {
			p := cur.(*corev1.Pod)
			if pre := opts.Preconditions; pre != nil {
				if pre.UID != nil && *pre.UID != "" && *pre.UID != p.UID {
					return nil, apierrors.NewConflict(runtimeschema.GroupResource{Resource: "Pod"}, p.Name,
						fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *pre.UID, p.UID))
				}
				if pre.ResourceVersion != nil && *pre.ResourceVersion != "" && *pre.ResourceVersion != p.ResourceVersion {
					return nil, apierrors.NewConflict(runtimeschema.GroupResource{Resource: "Pod"}, p.Name,
						fmt.Errorf("the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *pre.ResourceVersion, p.ResourceVersion))
				}
			}
			setPodCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
				Reason: "EvictionByEvictionAPI", Message: "Eviction API: evicting"})
			p.ResourceVersion = ""
			return p, nil
		}, registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
		if err != nil {
			return err
		}
		if rvSet(opts) {
			opts = withResourceVersion(opts, res.Obj.(*corev1.Pod).ResourceVersion)
		}
	}
	_, err := r.res.Delete(registry.AdmittedAs(r.ctx), r.ri.Namespace, r.ri.Name, opts)
	return err
}

// evictionDeleteOptions is the delete an eviction asks for: its body's
// options, with the request's dryRun when the body names none, as
// kube-apiserver's eviction storage merges them (and refuses the two
// disagreeing, with its answer: a plain 500), valid as any delete's
// (kube's answer for invalid ones, given here before the budget is
// spent and the Pod marked rather than after).
func evictionDeleteOptions(ev *policyv1.Eviction, dryRun bool) (*metav1.DeleteOptions, error) {
	var query []string
	if dryRun {
		query = []string{metav1.DryRunAll}
	}
	if ev.DeleteOptions == nil {
		return &metav1.DeleteOptions{DryRun: query}, nil
	}
	opts := ev.DeleteOptions.DeepCopy()
	switch {
	case len(opts.DryRun) == 0:
		opts.DryRun = query
	case len(query) != 0 && !slices.Equal(query, opts.DryRun):
		return nil, fmt.Errorf("Non-matching dry-run options in request and content: %v and %v", query, opts.DryRun)
	}
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(runtimeschema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

// evictionRetry is kube-apiserver's backoff for evictions that meet a
// changed budget.
var evictionRetry = wait.Backoff{Steps: 20, Duration: 500 * time.Millisecond, Factor: 1.0, Jitter: 0.1}

// podDisruptionBudget is the budget covering pod; several reports more
// than one, which evictions do not support.
func (r *request) podDisruptionBudget(pod *corev1.Pod) (pdb *policyv1.PodDisruptionBudget, several bool, err error) {
	pdbs := r.s.api.MustLookup("policy", "v1", "poddisruptionbudgets")
	res, err := pdbs.List(r.ctx, kv.ListOptions{Namespace: pod.Namespace})
	if err != nil {
		return nil, false, err
	}
	for _, rec := range res.Items {
		obj, err := pdbs.Decode(rec)
		if err != nil {
			return nil, false, err
		}
		p := obj.(*policyv1.PodDisruptionBudget)
		// policy/v1: a nil selector matches no Pod, an empty one all.
		sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if pdb != nil {
			return nil, true, nil
		}
		pdb = p
	}
	return pdb, false, nil
}

// maxDisruptedPods is kube's bound on evictions the disruption
// controller has not yet confirmed.
const maxDisruptedPods = 2000

// spendDisruption takes one disruption from pdb for pod, or refuses the
// eviction with kube-apiserver's answers (its checkAndDecrement). A dry
// run checks the budget and leaves it as it is; a budget changed since
// it was read is a conflict.
func (r *request) spendDisruption(pod *corev1.Pod, pdb *policyv1.PodDisruptionBudget, dryRun bool) error {
	forbidden := func(why string) error {
		return apierrors.NewForbidden(runtimeschema.GroupResource{Group: "policy", Resource: "poddisruptionbudget"}, pdb.Name, errors.New(why))
	}
	switch {
	case pdb.Status.ObservedGeneration < pdb.Generation:
		return budgetInProcess(pdb.Name)
	case pdb.Status.DisruptionsAllowed < 0:
		return forbidden("pdb disruptions allowed is negative")
	case len(pdb.Status.DisruptedPods) > maxDisruptedPods:
		return forbidden("DisruptedPods map too big - too many evictions not confirmed by PDB controller")
	case pdb.Status.DisruptionsAllowed == 0:
		err := apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 0)
		err.ErrStatus.Details.Causes = append(err.ErrStatus.Details.Causes, metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: budgetRefusal(pdb)})
		return err
	}
	if dryRun {
		return nil
	}
	// Spend one disruption, recorded as the disruption controller expects.
	_, _, err := r.s.api.MustLookup("policy", "v1", "poddisruptionbudgets").Update(r.ctx, pdb.Namespace, pdb.Name, func(cur runtime.Object) (runtime.Object, error) {
		p := cur.(*policyv1.PodDisruptionBudget)
		if p.ResourceVersion != pdb.ResourceVersion {
			return nil, apierrors.NewConflict(runtimeschema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, p.Name, fmt.Errorf("the budget changed; retry the eviction"))
		}
		p.Status.DisruptionsAllowed--
		if p.Status.DisruptionsAllowed == 0 {
			pdbhelper.UpdateDisruptionAllowedCondition(p)
		}
		if p.Status.DisruptedPods == nil {
			p.Status.DisruptedPods = map[string]metav1.Time{}
		}
		p.Status.DisruptedPods[pod.Name] = metav1.NewTime(time.Now().Truncate(time.Second))
		return p, nil
	}, registry.UpdateOptions{Subresource: "status", WriteOptions: registry.WriteOptions{Manager: registry.ManagerAPIServer}})
	return err
}

// budgetRefusal is why a budget allows no disruption, in kube's words
// and order: a failed sync first, since its counts cannot be trusted.
func budgetRefusal(pdb *policyv1.PodDisruptionBudget) string {
	c := apimeta.FindStatusCondition(pdb.Status.Conditions, policyv1.DisruptionAllowedCondition)
	falseWithMessage := c != nil && c.Status == metav1.ConditionFalse && c.Message != ""
	switch {
	case falseWithMessage && c.Reason == policyv1.SyncFailedReason:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently because it failed sync: %s", pdb.Name, c.Message)
	case pdb.Status.CurrentHealthy <= pdb.Status.DesiredHealthy:
		return fmt.Sprintf("The disruption budget %s needs %d healthy pods and has %d currently", pdb.Name, pdb.Status.DesiredHealthy, pdb.Status.CurrentHealthy)
	case falseWithMessage:
		return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently (%s): %s", pdb.Name, c.Reason, c.Message)
	}
	return fmt.Sprintf("The disruption budget %s does not allow evicting pods currently", pdb.Name)
}
