package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestEventNamesAsKube: a core/v1 Event's name is any path segment, as
// kube's generic check allows (client-go's recorder names an event after
// its object: "system:…" ClusterRoles, names near 253 characters plus a
// suffix), while events.k8s.io/v1 requires a DNS subdomain and reports it
// after the legacy checks, in kube's order.
func TestEventNamesAsKube(t *testing.T) {
	h := refNewHarness(t)
	core := func(name, extra string) string {
		return fmt.Sprintf(`{"metadata":{"name":%q%s},"involvedObject":{"kind":"ClusterRole","name":"x"},"reason":"R","type":"Normal"}`, name, extra)
	}
	for _, name := range []string{"system:aggregate-to-edit.17abc", "Upper_Name.1", "x..y", strings.Repeat("n", 250) + ".187a6c2f0e1d9b3a"} {
		h.mustDo("POST", "/api/v1/namespaces/default/events", "application/json", core(name, ""), http.StatusCreated)
		h.mustDo("PUT", "/api/v1/namespaces/default/events/"+name, "application/json", core(name, `,"labels":{"a":"b"}`), http.StatusOK)
	}
	// A finalizer kube's core checks would refuse: core Events get only
	// the generic ones.
	h.mustDo("POST", "/api/v1/namespaces/default/events", "application/json", core("fin", `,"finalizers":["plain"]`), http.StatusCreated)

	st := h.mustDo("POST", "/api/v1/namespaces/default/events", "application/json", core("a%b", ""), http.StatusUnprocessableEntity)
	if msg := fmt.Sprint(st["message"]); !strings.Contains(msg, `metadata.name: Invalid value: "a%b": may not contain '%'`) {
		t.Errorf("core Event named a%%b: %s; want the path segment refusal", msg)
	}

	st = h.mustDo("POST", "/apis/events.k8s.io/v1/namespaces/default/events", "application/json",
		`{"metadata":{"name":"Bad_Name"},"eventTime":"2026-11-30T00:00:00.000000Z","reportingInstance":"i","action":"A","reason":"R","type":"Normal","regarding":{"kind":"Pod","namespace":"default","name":"p"}}`,
		http.StatusUnprocessableEntity)
	var fields []string
	for _, c := range st["details"].(map[string]interface{})["causes"].([]interface{}) {
		fields = append(fields, fmt.Sprint(c.(map[string]interface{})["field"]))
	}
	if got := strings.Join(fields, ","); got != "reportingController,reportingController,reportingController,metadata.name" {
		t.Errorf("events.k8s.io/v1 Event named Bad_Name without reportingController: causes %s; want reportingController (required, then the qualified-name check's two) before metadata.name", got)
	}
}

// TestEventsV1ImmutableErrorsAsKube: kube checks an events.k8s.io update
// on its internal Event, whose struct fields have no json tags, so a
// changed reference or source is printed with Go's field names.
func TestEventsV1ImmutableErrorsAsKube(t *testing.T) {
	h := refNewHarness(t)
	const events = "/apis/events.k8s.io/v1/namespaces/default/events"
	h.mustDo("POST", events, "application/json", `{"metadata":{"name":"e"},"eventTime":"2026-01-01T00:00:00.000000Z","reportingController":"example.com/c",
		"reportingInstance":"i","action":"Act","reason":"R","type":"Normal","regarding":{"kind":"Pod","namespace":"default","name":"p"}}`, http.StatusCreated)
	r := h.do("PATCH", events+"/e", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"regarding":{"name":"z"},"deprecatedSource":{"component":"q"},"related":{"kind":"X"}}`))
	for _, want := range []string{
		`involvedObject: Invalid value: {\"Kind\":\"Pod\",\"Namespace\":\"default\",\"Name\":\"z\",\"UID\":\"\",\"APIVersion\":\"\",\"ResourceVersion\":\"\",\"FieldPath\":\"\"}: field is immutable`,
		`source: Invalid value: {\"Component\":\"q\",\"Host\":\"\"}: field is immutable`,
		`related: Invalid value: {\"Kind\":\"X\",`,
	} {
		if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), want) {
			t.Errorf("immutable fields changed: %d %s; want %s", r.Code, r.Body, want)
		}
	}
}
