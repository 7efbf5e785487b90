package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestPodPartialSubresources: pods/ephemeralcontainers adds debug
// containers and pods/resize changes container resources, each leaving
// every other field as stored, with kube's validation.
func TestPodPartialSubresources(t *testing.T) {
	h := refNewHarness(t)
	const pod = "/api/v1/namespaces/default/pods/dbg"
	if r := h.do("POST", "/api/v1/namespaces/default/pods", map[string]string{"Content-Type": "application/json"},
		[]byte(`{"metadata":{"name":"dbg","labels":{"app":"dbg"}},"spec":{"containers":[{"name":"c","image":"busybox","resources":{"requests":{"cpu":"100m"},"limits":{"cpu":"200m"}}}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("create: %d %s", r.Code, r.Body)
	}
	smp := map[string]string{"Content-Type": "application/strategic-merge-patch+json"}
	r := h.do("PATCH", pod+"/ephemeralcontainers", smp,
		[]byte(`{"metadata":{"labels":{"app":"changed"}},"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox","stdin":true,"tty":true}]}}`))
	if r.Code != http.StatusOK {
		t.Fatalf("add an ephemeral container: %d %s", r.Code, r.Body)
	}
	var p struct {
		Metadata struct {
			Labels     map[string]string
			Generation int64
		}
		Spec struct {
			EphemeralContainers []struct{ Name, TerminationMessagePolicy, ImagePullPolicy string }
			Containers          []struct {
				Resources struct{ Requests, Limits map[string]string }
			}
		}
	}
	if err := json.Unmarshal(h.do("GET", pod, nil, nil).Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if len(p.Spec.EphemeralContainers) != 1 || p.Spec.EphemeralContainers[0].TerminationMessagePolicy != "File" || p.Metadata.Labels["app"] != "dbg" || p.Metadata.Generation != 2 {
		t.Fatalf("after ephemeralcontainers: %+v; want the debugger (defaulted), labels as stored, generation 2", p)
	}
	r = h.do("PATCH", pod+"/ephemeralcontainers", smp, []byte(`{"spec":{"ephemeralContainers":[{"name":"debugger","image":"other"}]}}`))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "spec.ephemeralContainers") {
		t.Errorf("changing an ephemeral container: %d %s; want 422", r.Code, r.Body)
	}

	r = h.do("PATCH", pod+"/resize", smp, []byte(`{"metadata":{"labels":{"app":"changed"}},"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"150m"}}}]}}`))
	if r.Code != http.StatusOK {
		t.Fatalf("resize: %d %s", r.Code, r.Body)
	}
	if err := json.Unmarshal(h.do("GET", pod, nil, nil).Body.Bytes(), &p); err != nil {
		t.Fatal(err)
	}
	if p.Spec.Containers[0].Resources.Requests["cpu"] != "150m" || p.Spec.Containers[0].Resources.Limits["cpu"] != "200m" || p.Metadata.Labels["app"] != "dbg" {
		t.Fatalf("after resize: %+v", p)
	}
	// Only resources move: a resize that also names another image keeps the stored one.
	r = h.do("PATCH", pod+"/resize", smp, []byte(`{"spec":{"containers":[{"name":"c","image":"other"}]}}`))
	if r.Code != http.StatusOK {
		t.Errorf("resize touching the image: %d %s", r.Code, r.Body)
	}
	if body := h.do("GET", pod, nil, nil).Body.String(); strings.Contains(body, `"image":"other"`) {
		t.Errorf("resize changed the image: %s", body)
	}
}
