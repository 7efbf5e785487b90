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

// openPodRestarts makes the Restarts cell of a Pod's printed row an Ago
// when it shows how long ago a container last restarted ("3 (5m ago)"),
// so the row can be kept with its ages open.
func openPodRestarts(obj runtime.Object, cells []interface{}) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || pod == nil {
		return wrongType(obj, "*v1.Pod")
	}
	if len(cells) <= podRestartsCell {
		return fmt.Errorf("table row: %d cells, Restarts is %d", len(cells), podRestartsCell)
	}
	if ago, ok := podRestartsAgo(pod); ok {
		cells[podRestartsCell] = ago
	}
	return nil
}

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

// openJobDuration makes the Duration cell of a running Job's printed row
// (started, not completed) the Since of its start: kube's printer shows
// the time since then; a completed Job's is fixed.
func openJobDuration(obj runtime.Object, cells []interface{}) error {
	job, ok := obj.(*batchv1.Job)
	if !ok || job == nil {
		return wrongType(obj, "*v1.Job")
	}
	if len(cells) <= jobDurationCell {
		return fmt.Errorf("table row: %d cells, Duration is %d", len(cells), jobDurationCell)
	}
	// A start at the zero time prints as the longest duration there is,
	// which the clock does not change: it stays as printed.
	if st := job.Status.StartTime; st != nil && !st.IsZero() && job.Status.CompletionTime == nil {
		cells[jobDurationCell] = Since(st.Time)
	}
	return nil
}

// openCronJobLastSchedule makes the Last Schedule cell of a CronJob's
// printed row the Since of its last schedule, when it has one.
func openCronJobLastSchedule(obj runtime.Object, cells []interface{}) error {
	cj, ok := obj.(*batchv1.CronJob)
	if !ok || cj == nil {
		return wrongType(obj, "*v1.CronJob")
	}
	if len(cells) <= cronJobLastScheduleCell {
		return fmt.Errorf("table row: %d cells, Last Schedule is %d", len(cells), cronJobLastScheduleCell)
	}
	if last := cj.Status.LastScheduleTime; last != nil {
		cells[cronJobLastScheduleCell] = Since(last.Time)
	}
	return nil
}
