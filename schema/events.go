package schema

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Events are stored in their core/v1 form; the events.k8s.io/v1 Type
// converts on the way in and out. The two forms carry the same data under
// different names:
//
//	events.k8s.io/v1            core/v1
//	regarding                   involvedObject
//	related                     related
//	note                        message
//	reportingController         reportingComponent (Go field ReportingController)
//	reportingInstance           reportingInstance
//	deprecatedSource            source
//	deprecatedFirstTimestamp    firstTimestamp
//	deprecatedLastTimestamp     lastTimestamp
//	deprecatedCount             count
//	series{count,lastObserved}  series{count,lastObserved}
//	eventTime, action, reason, type: same names
//
// Both directions are lossless, so an event written through either group
// reads back unchanged through the same group.

// eventToCore converts an events.k8s.io/v1 Event into the stored core/v1
// Event. A core/v1 Event is passed through (as a copy).
func eventToCore(obj runtime.Object) (runtime.Object, error) {
	switch in := obj.(type) {
	case *corev1.Event:
		out := in.DeepCopy()
		out.APIVersion, out.Kind = "v1", "Event"
		return out, nil
	case *eventsv1.Event:
		if in == nil {
			return nil, fmt.Errorf("eventToCore: nil *eventsv1.Event")
		}
		in = in.DeepCopy()
		out := &corev1.Event{
			InvolvedObject:      in.Regarding,
			Related:             in.Related,
			Reason:              in.Reason,
			Message:             in.Note,
			Source:              in.DeprecatedSource,
			FirstTimestamp:      in.DeprecatedFirstTimestamp,
			LastTimestamp:       in.DeprecatedLastTimestamp,
			Count:               in.DeprecatedCount,
			Type:                in.Type,
			EventTime:           in.EventTime,
			Action:              in.Action,
			ReportingController: in.ReportingController,
			ReportingInstance:   in.ReportingInstance,
		}
		out.ObjectMeta = in.ObjectMeta
		out.APIVersion, out.Kind = "v1", "Event"
		if in.Series != nil {
			out.Series = &corev1.EventSeries{
				Count:            in.Series.Count,
				LastObservedTime: in.Series.LastObservedTime,
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("eventToCore: unexpected object type %T", obj)
	}
}

// eventFromCore converts a stored core/v1 Event into an events.k8s.io/v1
// Event. An events.k8s.io/v1 Event is passed through (as a copy).
func eventFromCore(obj runtime.Object) (runtime.Object, error) {
	switch in := obj.(type) {
	case *eventsv1.Event:
		out := in.DeepCopy()
		out.APIVersion, out.Kind = eventsv1.SchemeGroupVersion.String(), "Event"
		return out, nil
	case *corev1.Event:
		if in == nil {
			return nil, fmt.Errorf("eventFromCore: nil *corev1.Event")
		}
		in = in.DeepCopy()
		out := &eventsv1.Event{
			EventTime:                in.EventTime,
			ReportingController:      in.ReportingController,
			ReportingInstance:        in.ReportingInstance,
			Action:                   in.Action,
			Reason:                   in.Reason,
			Regarding:                in.InvolvedObject,
			Related:                  in.Related,
			Note:                     in.Message,
			Type:                     in.Type,
			DeprecatedSource:         in.Source,
			DeprecatedFirstTimestamp: in.FirstTimestamp,
			DeprecatedLastTimestamp:  in.LastTimestamp,
			DeprecatedCount:          in.Count,
		}
		out.ObjectMeta = in.ObjectMeta
		out.APIVersion, out.Kind = eventsv1.SchemeGroupVersion.String(), "Event"
		if in.Series != nil {
			out.Series = &eventsv1.EventSeries{
				Count:            in.Series.Count,
				LastObservedTime: in.Series.LastObservedTime,
			}
		}
		return out, nil
	default:
		return nil, fmt.Errorf("eventFromCore: unexpected object type %T", obj)
	}
}

// asCoreEvent returns obj as a core/v1 Event, converting an events.k8s.io/v1
// Event; ok is false for any other type.
func asCoreEvent(obj runtime.Object) (*corev1.Event, bool) {
	switch o := obj.(type) {
	case *corev1.Event:
		return o, o != nil
	case *eventsv1.Event:
		if o == nil {
			return nil, false
		}
		c, err := eventToCore(o)
		if err != nil {
			return nil, false
		}
		return c.(*corev1.Event), true
	}
	return nil, false
}
