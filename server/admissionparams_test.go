package server_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/server"
)

// TestPolicyParamsNeedRead: as kube's admission policy storage checks,
// whoever writes a policy's paramKind must be able to get every object of
// that kind, and whoever binds it to parameters must be able to get them
// (list them, when chosen by selector); an unchanged paramKind is not
// checked again, and system:masters is not checked.
func TestPolicyParamsNeedRead(t *testing.T) {
	h, _, as := authServer(t, "tok-root,root,1,\"system:masters\"\ntok-carol,carol,4\n", server.Config{})
	do := func(method, path, token, body string) (int, string) {
		t.Helper()
		rec := h.do(method, path, as(token), []byte(body))
		return rec.Code, rec.Body.String()
	}
	must := func(what, method, path, token, body string, want int) string {
		t.Helper()
		code, out := do(method, path, token, body)
		if code != want {
			t.Fatalf("%s: %d %s; want %d", what, code, out, want)
		}
		return out
	}
	refused := func(what, method, path, token, body, field, message string) {
		t.Helper()
		code, out := do(method, path, token, body)
		var st struct {
			Reason  string
			Details struct {
				Causes []struct{ Reason, Message, Field string }
			}
		}
		_ = json.Unmarshal([]byte(out), &st)
		if code != http.StatusUnprocessableEntity || st.Reason != "Invalid" || len(st.Details.Causes) != 1 ||
			st.Details.Causes[0].Reason != "FieldValueForbidden" || st.Details.Causes[0].Field != field ||
			!strings.HasPrefix(st.Details.Causes[0].Message, "Forbidden: ") ||
			!strings.Contains(st.Details.Causes[0].Message, " user &{carol 4 [system:authenticated] map[]} ") ||
			!strings.HasSuffix(st.Details.Causes[0].Message, message) {
			t.Errorf("%s: %d %s\nwant 422, one Forbidden cause on %s ending %q", what, code, out, field, message)
		}
	}
	const ar = "/apis/admissionregistration.k8s.io/v1"
	must("a role writing policies", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "tok-root",
		`{"metadata":{"name":"policy-writer"},"rules":[{"apiGroups":["admissionregistration.k8s.io"],"resources":["*"],"verbs":["*"]}]}`, http.StatusCreated)
	must("carol writes policies", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", "tok-root",
		`{"metadata":{"name":"carol-policies"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"policy-writer"},"subjects":[{"kind":"User","name":"carol"}]}`, http.StatusCreated)

	policy := func(name, paramKind string) string {
		pk := ""
		if paramKind != "" {
			pk = `"paramKind":{"apiVersion":"v1","kind":"` + paramKind + `"},`
		}
		return `{"metadata":{"name":"` + name + `"},"spec":{` + pk + `"matchConstraints":{"resourceRules":[{"apiGroups":[""],"apiVersions":["v1"],"operations":["CREATE"],"resources":["pods"]}]},"validations":[{"expression":"true"}]}}`
	}
	refused("a policy over Secrets carol cannot read", "POST", ar+"/validatingadmissionpolicies", "tok-carol", policy("p1", "Secret"),
		"spec.paramKind", `must have "get" permission on all objects of the referenced paramKind (kind=Secret, apiVersion=v1)`)
	refused("its dry run", "POST", ar+"/validatingadmissionpolicies?dryRun=All", "tok-carol", policy("p1", "Secret"),
		"spec.paramKind", `must have "get" permission on all objects of the referenced paramKind (kind=Secret, apiVersion=v1)`)
	out := must("a policy without params", "POST", ar+"/validatingadmissionpolicies", "tok-carol", policy("p2", ""), http.StatusCreated)
	var p2 struct {
		Metadata struct{ ResourceVersion string }
	}
	if err := json.Unmarshal([]byte(out), &p2); err != nil {
		t.Fatal(err)
	}
	refused("giving it params carol cannot read", "PUT", ar+"/validatingadmissionpolicies/p2", "tok-carol",
		strings.Replace(policy("p2", "Secret"), `"name":"p2"`, `"name":"p2","resourceVersion":"`+p2.Metadata.ResourceVersion+`"`, 1),
		"spec.paramKind", `(kind=Secret, apiVersion=v1)`)
	// A policy root wrote over Secrets: carol may change the rest of it.
	out = must("root's policy over Secrets", "POST", ar+"/validatingadmissionpolicies", "tok-root", policy("p3", "Secret"), http.StatusCreated)
	var p3 map[string]any
	if err := json.Unmarshal([]byte(out), &p3); err != nil {
		t.Fatal(err)
	}
	p3["spec"].(map[string]any)["validations"] = []any{map[string]any{"expression": "false"}}
	b, _ := json.Marshal(p3)
	must("carol changes its validations, not its paramKind", "PUT", ar+"/validatingadmissionpolicies/p3", "tok-carol", string(b), http.StatusOK)

	binding := func(name, policyName, paramRef string) string {
		return `{"metadata":{"name":"` + name + `"},"spec":{"policyName":"` + policyName + `","validationActions":["Deny"],"paramRef":` + paramRef + `}}`
	}
	refused("binding to a Secret carol cannot get", "POST", ar+"/validatingadmissionpolicybindings", "tok-carol",
		binding("b1", "p3", `{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}`),
		"spec.paramRef", `does not have "get" permission on the object referenced by paramRef`)
	refused("binding to Secrets by selector", "POST", ar+"/validatingadmissionpolicybindings", "tok-carol",
		binding("b1", "p3", `{"selector":{},"namespace":"default","parameterNotFoundAction":"Deny"}`),
		"spec.paramRef", `does not have "list" permission on the object referenced by paramRef`)
	refused("binding to a policy not there", "POST", ar+"/validatingadmissionpolicybindings", "tok-carol",
		binding("b1", "missing", `{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}`),
		"spec.paramRef", `does not have "get" permission for all groups, versions and resources`)
	must("root binds it", "POST", ar+"/validatingadmissionpolicybindings", "tok-root",
		binding("b1", "p3", `{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}`), http.StatusCreated)

	// With read access to Secrets in default, carol may.
	must("a role reading secrets", "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", "tok-root",
		`{"metadata":{"name":"secret-reader"},"rules":[{"apiGroups":[""],"resources":["secrets"],"verbs":["get"]}]}`, http.StatusCreated)
	must("carol reads secrets in default", "POST", "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings", "tok-root",
		`{"metadata":{"name":"carol-secrets"},"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"ClusterRole","name":"secret-reader"},"subjects":[{"kind":"User","name":"carol"}]}`, http.StatusCreated)
	must("carol binds to a Secret in default", "POST", ar+"/validatingadmissionpolicybindings", "tok-carol",
		binding("b2", "p3", `{"name":"params","namespace":"default","parameterNotFoundAction":"Deny"}`), http.StatusCreated)
	refused("a policy over every Secret still", "POST", ar+"/validatingadmissionpolicies", "tok-carol", policy("p4", "Secret"),
		"spec.paramKind", `(kind=Secret, apiVersion=v1)`)
}
