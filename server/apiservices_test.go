package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLocalAPIServices: a ready server has the local APIService of every
// served group-version kube-apiserver registers one for, with its
// priorities, Available at once; the Table prints them as kube's
// aggregator does; a status write keeps the spec.
func TestLocalAPIServices(t *testing.T) {
	h := refNewHarness(t)
	const base = "/apis/apiregistration.k8s.io/v1/apiservices"
	var apps struct {
		Metadata metav1.ObjectMeta
		Spec     struct {
			Group                string
			Version              string
			GroupPriorityMinimum int32
			VersionPriority      int32
			Service              any
		}
		Status struct {
			Conditions []struct{ Type, Status, Reason string }
		}
	}
	r := h.do("GET", base+"/v1.apps", nil, nil)
	if r.Code != http.StatusOK {
		t.Fatalf("GET v1.apps: %d %s", r.Code, r.Body)
	}
	if err := json.Unmarshal(r.Body.Bytes(), &apps); err != nil {
		t.Fatal(err)
	}
	if apps.Spec.Group != "apps" || apps.Spec.Version != "v1" || apps.Spec.GroupPriorityMinimum != 17800 || apps.Spec.VersionPriority != 15 ||
		apps.Spec.Service != nil || apps.Metadata.Labels["kube-aggregator.kubernetes.io/automanaged"] != "onstart" {
		t.Errorf("v1.apps: %s", r.Body)
	}
	if len(apps.Status.Conditions) != 1 || apps.Status.Conditions[0].Type != "Available" || apps.Status.Conditions[0].Status != "True" ||
		apps.Status.Conditions[0].Reason != "Local" {
		t.Errorf("v1.apps conditions: %+v; want Available True (Local)", apps.Status.Conditions)
	}
	for _, name := range []string{"v1.", "v2.autoscaling", "v1.autoscaling", "v1.admissionregistration.k8s.io", "v1.resource.k8s.io"} {
		if r := h.do("GET", base+"/"+name, nil, nil); r.Code != http.StatusOK {
			t.Errorf("GET %s: %d", name, r.Code)
		}
	}
	// The aggregator's own group has none.
	if r := h.do("GET", base+"/v1.apiregistration.k8s.io", nil, nil); r.Code != http.StatusNotFound {
		t.Errorf("GET v1.apiregistration.k8s.io: %d; want 404", r.Code)
	}

	tbl := h.do("GET", base, map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil)
	var table metav1.Table
	if err := json.Unmarshal(tbl.Body.Bytes(), &table); err != nil {
		t.Fatal(err)
	}
	var cols []string
	for _, c := range table.ColumnDefinitions {
		cols = append(cols, c.Name)
	}
	if strings.Join(cols, ",") != "Name,Service,Available,Age" {
		t.Errorf("columns %v", cols)
	}
	found := false
	for _, row := range table.Rows {
		if row.Cells[0] == "v1.apps" {
			found = true
			if row.Cells[1] != "Local" || row.Cells[2] != "True" {
				t.Errorf("v1.apps row %v", row.Cells)
			}
		}
	}
	if !found {
		t.Error("the Table has no v1.apps row")
	}

	// An aggregated API: not available until something says so, and the
	// Table says why.
	ct := map[string]string{"Content-Type": "application/json"}
	body := `{"metadata":{"name":"v1beta1.metrics.k8s.io"},"spec":{"group":"metrics.k8s.io","version":"v1beta1",
		"service":{"namespace":"kube-system","name":"metrics-server"},"groupPriorityMinimum":100,"versionPriority":100,"insecureSkipTLSVerify":true},
		"status":{"conditions":[{"type":"Available","status":"True","reason":"Forged"}]}}`
	if r := h.do("POST", base, ct, []byte(body)); r.Code != http.StatusCreated || strings.Contains(r.Body.String(), "Forged") {
		t.Fatalf("create aggregated: %d %s; want 201 without the client's status", r.Code, r.Body)
	}
	merge := map[string]string{"Content-Type": "application/merge-patch+json"}
	status := `{"spec":{"versionPriority":1},"status":{"conditions":[{"type":"Available","status":"False","reason":"MissingEndpoints","message":"no endpoints"}]}}`
	r = h.do("PATCH", base+"/v1beta1.metrics.k8s.io/status", merge, []byte(status))
	if r.Code != http.StatusOK || !strings.Contains(r.Body.String(), `"versionPriority":100`) || !strings.Contains(r.Body.String(), "MissingEndpoints") {
		t.Errorf("status write: %d %s; want the condition written and the spec kept", r.Code, r.Body)
	}
	tbl = h.do("GET", base+"/v1beta1.metrics.k8s.io", map[string]string{"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io"}, nil)
	if !strings.Contains(tbl.Body.String(), `"kube-system/metrics-server","False (MissingEndpoints)"`) {
		t.Errorf("aggregated row: %s", tbl.Body)
	}
	// The name must be version.group.
	bad := `{"metadata":{"name":"metrics"},"spec":{"group":"metrics.k8s.io","version":"v1beta1","groupPriorityMinimum":100,"versionPriority":100}}`
	if r := h.do("POST", base, ct, []byte(bad)); r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), "v1beta1.metrics.k8s.io") {
		t.Errorf("misnamed APIService: %d %s; want 422 naming the required name", r.Code, r.Body)
	}
}

// TestDiscoveryGroupOrder: groups come in kube-apiserver's priority
// order, which kubectl uses to resolve a resource name two groups serve.
func TestDiscoveryGroupOrder(t *testing.T) {
	h := refNewHarness(t)
	var groups metav1.APIGroupList
	if err := json.Unmarshal(h.do("GET", "/apis", nil, nil).Body.Bytes(), &groups); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
		if g.Name == "autoscaling" && g.PreferredVersion.Version != "v2" {
			t.Errorf("autoscaling prefers %s; want v2", g.PreferredVersion.Version)
		}
	}
	// kube-apiserver 1.35's order (testdata/reference/discovery/apis.json).
	want := "apiregistration.k8s.io,apps,events.k8s.io,authentication.k8s.io,authorization.k8s.io,autoscaling,batch,certificates.k8s.io," +
		"networking.k8s.io,policy,rbac.authorization.k8s.io,storage.k8s.io,admissionregistration.k8s.io,apiextensions.k8s.io,scheduling.k8s.io," +
		"coordination.k8s.io,node.k8s.io,discovery.k8s.io,resource.k8s.io,flowcontrol.apiserver.k8s.io"
	if got := strings.Join(names, ","); got != want {
		t.Errorf("groups in order\n%s\nwant\n%s", got, want)
	}
}

// TestAdmissionPolicyValidation: policies' CEL expressions are compiled
// and type-checked as kube-apiserver does, with the field path of the
// expression that fails; a webhook needs a known sideEffects class.
func TestAdmissionPolicyValidation(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	policy := `{"metadata":{"name":"p"},"spec":{"matchConstraints":{"resourceRules":[{"apiGroups":["apps"],"apiVersions":["v1"],
		"operations":["CREATE"],"resources":["deployments"]}]},"validations":[{"expression":"object.spec.replicas <="}]}}`
	r := h.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", ct, []byte(policy))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `"field":"spec.validations[0].expression"`) ||
		!strings.Contains(r.Body.String(), "compilation failed") {
		t.Errorf("policy with a broken expression: %d %s; want 422 at spec.validations[0].expression", r.Code, r.Body)
	}
	policy = strings.Replace(policy, `object.spec.replicas <=`, `object.spec.replicas <= 5`, 1)
	r = h.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies", ct, []byte(policy))
	if r.Code != http.StatusCreated || !strings.Contains(r.Body.String(), `"generation":1`) || !strings.Contains(r.Body.String(), `"failurePolicy":"Fail"`) {
		t.Fatalf("valid policy: %d %s; want 201 with generation 1 and the default failurePolicy", r.Code, r.Body)
	}
	webhook := `{"metadata":{"name":"w"},"webhooks":[{"name":"w.example.com","clientConfig":{"url":"https://example.com/v"},
		"admissionReviewVersions":["v1"],"sideEffects":"Sometimes"}]}`
	r = h.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", ct, []byte(webhook))
	if r.Code != http.StatusUnprocessableEntity || !strings.Contains(r.Body.String(), `"field":"webhooks[0].sideEffects"`) {
		t.Errorf("webhook with sideEffects Sometimes: %d %s; want 422 at webhooks[0].sideEffects", r.Code, r.Body)
	}
}

// TestLocalAPIServiceStaysAvailable: kube's local availability controller
// puts a local APIService's condition back to Available, whatever was
// written to it.
func TestLocalAPIServiceStaysAvailable(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	const apps = "/apis/apiregistration.k8s.io/v1/apiservices/v1.apps"
	if r := h.do("PATCH", apps+"/status", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"status":{"conditions":[{"type":"Available","status":"False","reason":"Manual","message":"m","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}`)); r.Code != http.StatusOK {
		t.Fatalf("status patch: %d %s", r.Code, r.Body)
	}
	h.eventually("v1.apps Available again", func() bool {
		b := h.do("GET", apps, nil, nil).Body.String()
		return strings.Contains(b, `"status":"True","lastTransitionTime"`) && strings.Contains(b, `"reason":"Local","message":"Local APIServices are always available"`)
	})
}

// TestServiceBackedVersionOfALocalGroup: an APIService that serves a
// version this server serves too replaces it in discovery (listed once),
// groups of one priority come by name in aggregated discovery, and every
// method on the group-version's own path goes to its server (here
// unavailable: kube's 503).
func TestServiceBackedVersionOfALocalGroup(t *testing.T) {
	h := refNewHarness(t)
	ct := map[string]string{"Content-Type": "application/json"}
	const base = "/apis/apiregistration.k8s.io/v1/apiservices"
	cur := h.mustDo("GET", base+"/v1.batch", "", "", http.StatusOK)
	cur["spec"].(map[string]any)["service"] = map[string]any{"namespace": "default", "name": "nosvc"}
	b, _ := json.Marshal(cur)
	if r := h.do("PUT", base+"/v1.batch", ct, b); r.Code != http.StatusOK {
		t.Fatalf("v1.batch to a Service: %d %s", r.Code, r.Body)
	}
	// By APIService name v1.zz comes before v2.aa; by group name after.
	for _, name := range []string{"v1.zz.example.com", "v2.aa.example.com"} {
		version, group, _ := strings.Cut(name, ".")
		if r := h.do("POST", base, ct, []byte(`{"metadata":{"name":"`+name+`"},"spec":{"group":"`+group+`","version":"`+version+`",
		  "groupPriorityMinimum":1000,"versionPriority":10,"insecureSkipTLSVerify":true,"service":{"namespace":"default","name":"nosvc"}}}`)); r.Code != http.StatusCreated {
			t.Fatalf("%s: %d %s", name, r.Code, r.Body)
		}
	}
	// A new version of apps at a higher version priority than v1's 15
	// comes first and is preferred, as kube orders a group's APIServices.
	if r := h.do("POST", base, ct, []byte(`{"metadata":{"name":"v2.apps"},"spec":{"group":"apps","version":"v2",
	  "groupPriorityMinimum":17800,"versionPriority":100,"insecureSkipTLSVerify":true,"service":{"namespace":"default","name":"nosvc"}}}`)); r.Code != http.StatusCreated {
		t.Fatalf("v2.apps: %d %s", r.Code, r.Body)
	}
	var group metav1.APIGroup
	r := h.do("GET", "/apis/batch", nil, nil)
	if err := json.Unmarshal(r.Body.Bytes(), &group); err != nil || len(group.Versions) != 1 || group.Versions[0].GroupVersion != "batch/v1" {
		t.Errorf("/apis/batch: %d %s; want batch/v1 once", r.Code, r.Body)
	}
	group = metav1.APIGroup{}
	r = h.do("GET", "/apis/apps", nil, nil)
	if err := json.Unmarshal(r.Body.Bytes(), &group); err != nil || len(group.Versions) != 2 || group.Versions[0].Version != "v2" ||
		group.Versions[1].Version != "v1" || group.PreferredVersion.Version != "v2" {
		t.Errorf("/apis/apps: %d %s; want v2 (preferred), then v1", r.Code, r.Body)
	}
	r = h.do("GET", "/apis", map[string]string{"Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}, nil)
	var list struct {
		Items []struct {
			Metadata struct{ Name string }
			Versions []struct{ Version string }
		}
	}
	if err := json.Unmarshal(r.Body.Bytes(), &list); err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, g := range list.Items {
		if g.Metadata.Name == "batch" && len(g.Versions) != 1 {
			t.Errorf("aggregated batch versions %v; want v1 once", g.Versions)
		}
		if g.Metadata.Name == "apps" && (len(g.Versions) != 2 || g.Versions[0].Version != "v2") {
			t.Errorf("aggregated apps versions %v; want v2, then v1", g.Versions)
		}
		if strings.HasSuffix(g.Metadata.Name, ".example.com") {
			order = append(order, g.Metadata.Name)
		}
	}
	if strings.Join(order, ",") != "aa.example.com,zz.example.com" {
		t.Errorf("aggregated order of equal-priority groups %v; want by group name", order)
	}
	if r := h.do("POST", "/apis/aa.example.com/v2", ct, []byte(`{}`)); r.Code != http.StatusServiceUnavailable {
		t.Errorf("POST to an aggregated group-version's path: %d %s; want 503 from the proxy", r.Code, r.Body)
	}
}

// TestCRDAPIServicesKeptAsAutoregister: a CRD's APIService is kept as
// kube's autoregister controller keeps it: deleted, it is made again;
// edited, it is set back; one labelled automanaged for a group-version no
// CRD serves is removed.
func TestCRDAPIServicesKeptAsAutoregister(t *testing.T) {
	h := gcHarness{refNewHarness(t), t}
	ct := map[string]string{"Content-Type": "application/json"}
	if r := h.do("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", ct, []byte(`{"metadata":{"name":"widgets.crd.example.com"},
	  "spec":{"group":"crd.example.com","names":{"plural":"widgets","singular":"widget","kind":"Widget","listKind":"WidgetList"},"scope":"Namespaced",
	  "versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object"}}}]}}`)); r.Code != http.StatusCreated {
		t.Fatalf("CRD: %d %s", r.Code, r.Body)
	}
	const base = "/apis/apiregistration.k8s.io/v1/apiservices"
	h.eventually("the CRD's APIService", func() bool { return h.do("GET", base+"/v1.crd.example.com", nil, nil).Code == http.StatusOK })
	if r := h.do("DELETE", base+"/v1.crd.example.com", nil, nil); r.Code != http.StatusOK {
		t.Fatalf("delete: %d %s", r.Code, r.Body)
	}
	h.eventually("the APIService made again", func() bool { return h.do("GET", base+"/v1.crd.example.com", nil, nil).Code == http.StatusOK })
	if r := h.do("PATCH", base+"/v1.crd.example.com", map[string]string{"Content-Type": "application/merge-patch+json"},
		[]byte(`{"spec":{"versionPriority":7}}`)); r.Code != http.StatusOK {
		t.Fatalf("edit: %d %s", r.Code, r.Body)
	}
	h.eventually("the APIService set back", func() bool {
		return strings.Contains(h.do("GET", base+"/v1.crd.example.com", nil, nil).Body.String(), `"versionPriority":100`)
	})
	if r := h.do("POST", base, ct, []byte(`{"metadata":{"name":"v1.stray.example.com","labels":{"kube-aggregator.kubernetes.io/automanaged":"true"}},
	  "spec":{"group":"stray.example.com","version":"v1","groupPriorityMinimum":1000,"versionPriority":100}}`)); r.Code != http.StatusCreated {
		t.Fatalf("stray: %d %s", r.Code, r.Body)
	}
	h.eventually("the stray removed", func() bool { return h.do("GET", base+"/v1.stray.example.com", nil, nil).Code == http.StatusNotFound })
}
