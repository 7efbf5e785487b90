package server_test

import (
	"encoding/json"
	"net/http"
	"reflect"
	"testing"
)

// TestStatusWritesMetadata: a status write of most built-in kinds takes
// the request's metadata too, as kube-apiserver's status strategies reset
// only the spec — kube-controller-manager's deployment controller records
// a Deployment's revision annotation that way, and kubectl rollout reads
// it — while Deployments keep their labels, Pods their owner references,
// and kinds whose strategies reset metadata (ServiceCIDRs here) keep all
// of it. Each answer was checked against kube-apiserver 1.35.4.
func TestStatusWritesMetadata(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	type meta struct {
		Labels          map[string]string
		Annotations     map[string]string
		Finalizers      []string
		OwnerReferences []map[string]interface{}
		Generation      int64
	}
	for _, c := range []struct {
		name, path, body string
		want             meta
		specKept         string // a spec field whose stored value must stay
	}{
		{"deployment", "/apis/apps/v1/namespaces/default/deployments",
			`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","labels":{"a":"1"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
			meta{Labels: map[string]string{"a": "1"}, Annotations: map[string]string{"x": "y"}, Finalizers: []string{"example.com/f"}, Generation: 1}, "replicas"},
		{"replicaset", "/apis/apps/v1/namespaces/default/replicasets",
			`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"r","labels":{"a":"1"}},"spec":{"replicas":1,"selector":{"matchLabels":{"app":"r"}},"template":{"metadata":{"labels":{"app":"r"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}}}`,
			meta{Labels: map[string]string{"a": "2"}, Annotations: map[string]string{"x": "y"}, Finalizers: []string{"example.com/f"}, Generation: 1}, "replicas"},
		{"pod", "/api/v1/namespaces/default/pods",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"a":"1"}},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`,
			meta{Labels: map[string]string{"a": "2"}, Annotations: map[string]string{"x": "y"}, Finalizers: []string{"example.com/f"}, Generation: 1}, ""},
		{"servicecidr", "/apis/networking.k8s.io/v1/servicecidrs",
			`{"apiVersion":"networking.k8s.io/v1","kind":"ServiceCIDR","metadata":{"name":"s","labels":{"a":"1"}},"spec":{"cidrs":["10.200.0.0/24"]}}`,
			meta{Labels: map[string]string{"a": "1"}}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			var obj map[string]interface{}
			h.mustDo("POST", c.path, "application/json", c.body, http.StatusCreated)
			name := map[string]string{"deployment": "d", "replicaset": "r", "pod": "p", "servicecidr": "s"}[c.name]
			obj = h.getJSON(c.path + "/" + name)
			md := obj["metadata"].(map[string]interface{})
			md["labels"] = map[string]interface{}{"a": "2"}
			md["annotations"] = map[string]interface{}{"x": "y"}
			md["finalizers"] = []interface{}{"example.com/f"}
			md["ownerReferences"] = []interface{}{map[string]interface{}{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "6a1e1f0c-3b1a-4a5e-9a56-1a2b3c4d5e6f"}}
			if spec, ok := obj["spec"].(map[string]interface{}); ok && c.specKept != "" {
				spec[c.specKept] = 7
			}
			body, _ := json.Marshal(obj)
			rec := h.do("PUT", c.path+"/"+name+"/status", ct, body)
			if rec.Code != http.StatusOK {
				t.Fatalf("PUT status: %d %s", rec.Code, rec.Body)
			}
			var got struct {
				Metadata meta
				Spec     map[string]interface{}
			}
			if err := json.Unmarshal(rec.Body.Bytes(), &got); err != nil {
				t.Fatal(err)
			}
			got.Metadata.OwnerReferences = nil // checked below
			if !reflect.DeepEqual(got.Metadata, c.want) {
				t.Errorf("metadata after the status write: %+v; want %+v", got.Metadata, c.want)
			}
			var owners struct {
				Metadata struct{ OwnerReferences []interface{} }
			}
			_ = json.Unmarshal(rec.Body.Bytes(), &owners)
			wantOwners := c.name == "deployment" || c.name == "replicaset"
			if (len(owners.Metadata.OwnerReferences) == 1) != wantOwners {
				t.Errorf("owner references after the status write: %v; want them written: %v", owners.Metadata.OwnerReferences, wantOwners)
			}
			if c.specKept != "" && got.Spec[c.specKept] != float64(1) {
				t.Errorf("spec.%s = %v after the status write; want the stored 1", c.specKept, got.Spec[c.specKept])
			}
		})
	}
}
