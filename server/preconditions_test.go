package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestUpdateUIDPrecondition: a PUT whose body names another uid is
// refused by kube's store before anything else, with its storage error;
// a namespace's delete checks its preconditions in its own words.
func TestUpdateUIDPrecondition(t *testing.T) {
	h := refNewHarness(t)
	hd := map[string]string{"Content-Type": "application/json", "Accept": "application/json"}
	const deps = "/apis/apps/v1/namespaces/default/deployments"
	cur := h.mustDo("POST", deps, "application/json", `{"metadata":{"name":"web"},"spec":{"selector":{"matchLabels":{"a":"b"}},
	  "template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"i"}]}}}}`, http.StatusCreated)
	md := cur["metadata"].(map[string]interface{})
	uid := md["uid"].(string)
	md["uid"] = "abc"
	b, _ := json.Marshal(cur)
	want := `Operation cannot be fulfilled on deployments.apps \"web\": StorageError: invalid object, Code: 4, Key: /registry/deployments/default/web, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: abc, UID in object meta: ` + uid
	for _, path := range []string{deps + "/web", deps + "/web/status"} {
		rec := h.do("PUT", path, hd, b)
		if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `"kind":"deployments"`) {
			t.Errorf("PUT %s naming another uid: %d %s; want 409 %s", path, rec.Code, rec.Body, want)
		}
	}
	rec := h.do("PUT", deps+"/web/scale", hd, []byte(`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web","namespace":"default","uid":"abc"},"spec":{"replicas":3}}`))
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), want) {
		t.Errorf("scale PUT naming another uid: %d %s; want 409 %s", rec.Code, rec.Body, want)
	}

	ns := h.mustDo("POST", "/api/v1/namespaces", "application/json", `{"metadata":{"name":"p3"}}`, http.StatusCreated)
	nsUID := ns["metadata"].(map[string]interface{})["uid"].(string)
	rec = h.do("DELETE", "/api/v1/namespaces/p3", hd, []byte(`{"preconditions":{"uid":"x"}}`))
	if want := `Operation cannot be fulfilled on namespaces \"p3\": Precondition failed: UID in precondition: x, UID in object meta: ` + nsUID; rec.Code != http.StatusConflict ||
		!strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `"kind":"namespaces"`) {
		t.Errorf("namespace delete with another uid: %d %s; want 409 %s", rec.Code, rec.Body, want)
	}
}
