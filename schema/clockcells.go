package schema

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	podutil "k8s.io/kubernetes/pkg/api/v1/pod"
)

// The cells of kube's printed rows, besides Age, that show the clock:
// Pods' Restarts, Jobs' Duration, CronJobs' Last Schedule.
const (
	podRestartsCell         = 3
	jobDurationCell         = 3
	cronJobLastScheduleCell = 5
)

// clockCell is a kind's clockCells (see kubeKind) for the one cell, at
// index cell of the printed row, that open makes an Ago or a Since of an
// object of the served type T, when it shows the clock.
func clockCell[T runtime.Object](cell int, open func(T) (interface{}, bool)) func(runtime.Object, []interface{}) error {
	return func(obj runtime.Object, cells []interface{}) error {
		o, ok := obj.(T)
		if !ok {
			return wrongType(obj, fmt.Sprintf("%T", *new(T)))
		}
		if len(cells) <= cell {
			return fmt.Errorf("table row: %d cells, the clock's is %d", len(cells), cell)
		}
		if c, ok := open(o); ok {
			cells[cell] = c
		}
		return nil
	}
}

// The clockCells of Pods (Restarts: "3 (5m ago)"), Jobs (a running one's
// Duration) and CronJobs (Last Schedule).
var (
	openPodRestarts = clockCell(podRestartsCell, func(pod *corev1.Pod) (interface{}, bool) {
		return podRestartsAgo(pod)
	})
	// A Job's start at the zero time prints as the longest duration
	// there is, which the clock does not change: it stays as printed; a
	// completed Job's duration is fixed.
	openJobDuration = clockCell(jobDurationCell, func(job *batchv1.Job) (interface{}, bool) {
		st := job.Status.StartTime
		if st == nil || st.IsZero() || job.Status.CompletionTime != nil {
			return nil, false
		}
		return Since(st.Time), true
	})
	openCronJobLastSchedule = clockCell(cronJobLastScheduleCell, func(cj *batchv1.CronJob) (interface{}, bool) {
		if last := cj.Status.LastScheduleTime; last != nil {
			return Since(last.Time), true
		}
		return nil, false
	})
)

// podRestartsAgo is a Pod's Restarts cell as kube's printer (printPod in
// pkg/printers/internalversion) makes it, when the cell shows an age: the
// restarts it counts and the latest time one of the containers it counts
// last finished. Like the printer, it reads the init containers' statuses
// up to the first one not done, and, once the Pod is initialized (or
// none is pending), counts the sidecars (restartable init containers)
// and the containers instead.
func podRestartsAgo(pod *corev1.Pod) (Ago, bool) {
	restartable := map[string]bool{}
	for i := range pod.Spec.InitContainers {
		if podutil.IsRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			restartable[pod.Spec.InitContainers[i].Name] = true
		}
	}
	var restarts, sidecarRestarts int
	var last, sidecarLast time.Time
	latest := func(at *time.Time, st corev1.ContainerStatus) {
		if t := st.LastTerminationState.Terminated; t != nil && at.Before(t.FinishedAt.Time) {
			*at = t.FinishedAt.Time
		}
	}
	initializing := false
	for _, st := range pod.Status.InitContainerStatuses {
		restarts += int(st.RestartCount)
		latest(&last, st)
		if restartable[st.Name] {
			sidecarRestarts += int(st.RestartCount)
			latest(&sidecarLast, st)
		}
		if st.State.Terminated != nil && st.State.Terminated.ExitCode == 0 ||
			restartable[st.Name] && st.Started != nil && *st.Started {
			continue
		}
		initializing = true
		break
	}
	if !initializing || podInitialized(pod) {
		restarts, last = sidecarRestarts, sidecarLast
		for _, st := range pod.Status.ContainerStatuses {
			restarts += int(st.RestartCount)
			latest(&last, st)
		}
	}
	if restarts == 0 || last.IsZero() {
		return Ago{}, false
	}
	return Ago{Before: strconv.Itoa(restarts) + " (", At: Since(last), After: " ago)"}, true
}

// podInitialized: the Pod's Initialized condition is True.
func podInitialized(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodInitialized {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podRowConditions are the conditions of a Pod's Table row: kube's printer
// marks the row of a Pod that succeeded or failed Completed.
func podRowConditions(obj runtime.Object) []metav1.TableRowCondition {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodSucceeded), Message: "The pod has completed successfully."}}
	case corev1.PodFailed:
		return []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: string(corev1.PodFailed), Message: "The pod failed."}}
	}
	return nil
}
