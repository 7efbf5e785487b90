package schema

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// podGracePeriod is kube's pod strategy's CheckGracefulDelete: the
// period asked for, else the Pod's terminationGracePeriodSeconds; none
// for a Pod no node runs (unscheduled) or that has finished; a negative
// period is one second.
func podGracePeriod(obj runtime.Object, requested *int64) int64 {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	var period int64
	switch {
	case requested != nil:
		period = *requested
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		period = *pod.Spec.TerminationGracePeriodSeconds
	}
	if pod.Spec.NodeName == "" || pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	return period
}
