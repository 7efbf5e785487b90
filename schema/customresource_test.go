package schema

import (
	"encoding/json"
	"strings"
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// celCase is one x-kubernetes-validations rule on a spec of the given
// properties, with a spec it accepts and one it rejects.
type celCase struct {
	name  string
	props string // JSON: spec's properties
	rule  string
	good  string // JSON spec
	bad   string // JSON spec; "" when the example has no failing form
}

// The seed's CEL examples (the example rules and each Kubernetes library's
// examples), run through the validation a custom resource gets. Where an
// example is a bare expression it is turned into a rule on a field.
var seedCELCases = []celCase{
	{"replicas ordered", `{"minReplicas":{"type":"integer"},"replicas":{"type":"integer"},"maxReplicas":{"type":"integer"}}`,
		"self.minReplicas <= self.replicas && self.replicas <= self.maxReplicas",
		`{"minReplicas":1,"replicas":2,"maxReplicas":3}`, `{"minReplicas":1,"replicas":5,"maxReplicas":3}`},
	{"key in map", `{"stateCounts":{"type":"object","additionalProperties":{"type":"integer"}}}`,
		"'Available' in self.stateCounts", `{"stateCounts":{"Available":1}}`, `{"stateCounts":{"Pending":1}}`},
	{"one of two lists", `{"list1":{"type":"array","items":{"type":"string"}},"list2":{"type":"array","items":{"type":"string"}}}`,
		"(self.list1.size() == 0) != (self.list2.size() == 0)", `{"list1":["a"],"list2":[]}`, `{"list1":["a"],"list2":["b"]}`},
	// The seed writes e.name = 'MY_ENV', which CEL does not parse; == is meant.
	{"listMap entry value", `{"envars":{"type":"array","x-kubernetes-list-type":"map","x-kubernetes-list-map-keys":["name"],"items":{"type":"object","required":["name"],"properties":{"name":{"type":"string"},"value":{"type":"string"}}}}}`,
		"self.envars.filter(e, e.name == 'MY_ENV').all(e, e.value.matches('^[a-zA-Z]*$'))",
		`{"envars":[{"name":"MY_ENV","value":"abc"},{"name":"OTHER","value":"1"}]}`, `{"envars":[{"name":"MY_ENV","value":"a1"}]}`},
	{"date plus duration", `{"created":{"type":"string","format":"date-time"},"ttl":{"type":"string","format":"duration"},"expired":{"type":"string","format":"date-time"}}`,
		"has(self.expired) && self.created + self.ttl < self.expired",
		`{"created":"2020-01-01T00:00:00Z","ttl":"1h","expired":"2020-01-01T02:00:00Z"}`, `{"created":"2020-01-01T00:00:00Z","ttl":"1h","expired":"2020-01-01T00:30:00Z"}`},
	{"prefix", `{"health":{"type":"string"}}`, "self.health.startsWith('ok')", `{"health":"ok: fine"}`, `{"health":"bad"}`},
	{"listMap item property", `{"widgets":{"type":"array","items":{"type":"object","properties":{"key":{"type":"string"},"foo":{"type":"integer"}}}}}`,
		"self.widgets.exists(w, w.key == 'x' && w.foo < 10)", `{"widgets":[{"key":"x","foo":5}]}`, `{"widgets":[{"key":"x","foo":20}]}`},
	{"int or string", `{"v":{"x-kubernetes-int-or-string":true}}`, "type(self.v) == string ? self.v == '99%' : self.v == 42", `{"v":"99%"}`, `{"v":41}`},
	{"disjoint sets", `{"set1":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},"set2":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}}}`,
		"self.set1.all(e, !(e in self.set2))", `{"set1":["a"],"set2":["b"]}`, `{"set1":["a"],"set2":["a"]}`},
	{"map keyed by set", `{"names":{"type":"array","x-kubernetes-list-type":"set","items":{"type":"string"}},"details":{"type":"object","additionalProperties":{"type":"string"}}}`,
		"self.names.size() == self.details.size() && self.names.all(n, n in self.details)", `{"names":["a"],"details":{"a":"x"}}`, `{"names":["a"],"details":{"b":"x"}}`},
	{"map keys", `{"details":{"type":"object","additionalProperties":{"type":"string"}}}`,
		"self.details.all(key, key.matches('^[a-zA-Z]*$'))", `{"details":{"ab":"1"}}`, `{"details":{"a1":"1"}}`},
	{"map values", `{"details":{"type":"object","additionalProperties":{"type":"string"}}}`,
		"self.details.all(key, self.details[key].matches('^[a-zA-Z]*$'))", `{"details":{"a":"xy"}}`, `{"details":{"a":"x1"}}`},

	// Lists library.
	{"isSorted", `{"names":{"type":"array","items":{"type":"string"}}}`, "self.names.isSorted()", `{"names":["a","b"]}`, `{"names":["b","a"]}`},
	{"sum of weights", `{"items":{"type":"array","items":{"type":"object","properties":{"weight":{"type":"number"}}}}}`,
		"self.items.map(x, x.weight).sum() == 1.0", `{"items":[{"weight":0.5},{"weight":0.5}]}`, `{"items":[{"weight":0.5}]}`},
	{"max below min", `{"low":{"type":"array","items":{"type":"object","properties":{"priority":{"type":"integer"}}}},"high":{"type":"array","items":{"type":"object","properties":{"priority":{"type":"integer"}}}}}`,
		"self.low.map(x, x.priority).max() < self.high.map(x, x.priority).min()",
		`{"low":[{"priority":1}],"high":[{"priority":2}]}`, `{"low":[{"priority":3}],"high":[{"priority":2}]}`},
	{"indexOf", `{"names":{"type":"array","items":{"type":"string"}}}`, "self.names.indexOf('should-be-first') == 1",
		`{"names":["x","should-be-first"]}`, `{"names":["should-be-first"]}`},
	// Regex library.
	{"find", `{"s":{"type":"string"}}`, "self.s.find('[0-9]+') == '123'", `{"s":"abc 123"}`, `{"s":"abc"}`},
	{"findAll", `{"s":{"type":"string"}}`, "self.s.findAll('[0-9]+').map(x, int(x)).sum() < 100", `{"s":"1, 2, 3, 4"}`, `{"s":"50, 60"}`},
	// URL library.
	{"url host", `{"s":{"type":"string"}}`, "url(self.s).getHost() == 'example.com:80'", `{"s":"https://example.com:80/"}`, `{"s":"https://example.org/"}`},
	{"url escaped path", `{"s":{"type":"string"}}`, "url(self.s).getEscapedPath() == '/path%20with%20spaces/'",
		`{"s":"https://example.com/path with spaces/"}`, `{"s":"https://example.com/path/"}`},
	// IP library.
	{"isIP", `{"s":{"type":"string"}}`, "isIP(self.s)", `{"s":"127.0.0.1"}`, `{"s":"::ffff:1.2.3.4"}`},
	// The seed writes ip('…').isCanonical(); kube-apiserver's library
	// declares the function as ip.isCanonical(string), which is followed.
	{"canonical IP", `{"s":{"type":"string"}}`, "ip.isCanonical(self.s)", `{"s":"2001:db8::abcd"}`, `{"s":"2001:DB8::ABCD"}`},
	{"IP family", `{"s":{"type":"string"}}`, "ip(self.s).family() == 4", `{"s":"127.0.0.1"}`, `{"s":"::1"}`},
	{"loopback", `{"s":{"type":"string"}}`, "ip(self.s).isLoopback()", `{"s":"::1"}`, `{"s":"192.168.0.1"}`},
	{"global unicast", `{"s":{"type":"string"}}`, "ip(self.s).isGlobalUnicast()", `{"s":"192.168.0.1"}`, `{"s":"127.0.0.1"}`},
	// CIDR library.
	{"containsIP object", `{"s":{"type":"string"}}`, "cidr('192.168.0.0/24').containsIP(ip(self.s))", `{"s":"192.168.0.1"}`, `{"s":"192.168.1.1"}`},
	{"containsIP string", `{"s":{"type":"string"}}`, "cidr('192.168.0.0/24').containsIP(self.s)", `{"s":"192.168.0.1"}`, `{"s":"192.168.1.1"}`},
	{"containsCIDR", `{"s":{"type":"string"}}`, "cidr(self.s).containsCIDR(cidr('192.168.10.0/24'))", `{"s":"192.168.0.0/16"}`, `{"s":"192.168.1.0/24"}`},
	{"containsCIDR string", `{"s":{"type":"string"}}`, "cidr(self.s).containsCIDR('192.168.2.0/24')", `{"s":"192.168.0.0/16"}`, `{"s":"192.168.1.0/24"}`},
	{"CIDR ip family", `{"s":{"type":"string"}}`, "cidr(self.s).ip().family() == 6", `{"s":"::1/128"}`, `{"s":"192.168.0.1/24"}`},
	{"masked", `{"s":{"type":"string"}}`, "cidr(self.s) == cidr(self.s).masked()", `{"s":"192.168.0.0/24"}`, `{"s":"192.168.0.1/24"}`},
	{"prefixLength", `{"s":{"type":"string"}}`, "cidr(self.s).prefixLength() == 16", `{"s":"192.168.0.0/16"}`, `{"s":"::1/128"}`},
	{"isCIDR", `{"s":{"type":"string"}}`, "isCIDR(self.s)", `{"s":"::1/128"}`, `{"s":"192.168.0.0/33"}`},
}

// TestSeedCELExamples: each example accepts its good spec and rejects its
// bad one with the rule named in the error.
func TestSeedCELExamples(t *testing.T) {
	for _, c := range seedCELCases {
		t.Run(c.name, func(t *testing.T) {
			typ := celTestType(t, c.props, c.rule)
			if errs := validateSpec(t, typ, c.good); len(errs) > 0 {
				t.Errorf("good spec %s rejected: %v", c.good, errs)
			}
			if c.bad == "" {
				return
			}
			errs := validateSpec(t, typ, c.bad)
			if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "failed rule: "+c.rule) {
				t.Errorf("bad spec %s: %v; want the rule's failure", c.bad, errs)
			}
		})
	}
}

// TestSeedCELSingleton: a rule on the root sees metadata.name.
func TestSeedCELSingleton(t *testing.T) {
	typ := celTestTypeRoot(t, `{}`, "self.metadata.name == 'singleton'")
	for name, ok := range map[string]bool{"singleton": true, "other": false} {
		u := &unstructured.Unstructured{Object: map[string]interface{}{"apiVersion": "cel.tabula.test/v1", "kind": "Thing",
			"metadata": map[string]interface{}{"name": name}, "spec": map[string]interface{}{}}}
		if errs := typ.Validate(u, nil); (len(errs) == 0) != ok {
			t.Errorf("name %s: %v; want valid=%v", name, errs, ok)
		}
	}
}

func celTestType(t *testing.T, props, rule string) *Type {
	t.Helper()
	return buildCELType(t, `{"type":"object","properties":{"spec":{"type":"object","properties":`+props+`,"x-kubernetes-validations":[{"rule":`+quoteJSON(rule)+`}]}}}`)
}

func celTestTypeRoot(t *testing.T, props, rule string) *Type {
	t.Helper()
	return buildCELType(t, `{"type":"object","x-kubernetes-validations":[{"rule":`+quoteJSON(rule)+`}],"properties":{"spec":{"type":"object","properties":`+props+`}}}`)
}

func buildCELType(t *testing.T, schemaJSON string) *Type {
	t.Helper()
	var s apiextensionsv1.JSONSchemaProps
	if err := json.Unmarshal([]byte(schemaJSON), &s); err != nil {
		t.Fatal(err)
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "things.cel.tabula.test"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "cel.tabula.test", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &s}}},
		},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Plural: "things", Kind: "Thing", ListKind: "ThingList"}},
	}
	types, err := CustomResourceTypes(crd, nil)
	if err != nil || len(types) != 1 {
		t.Fatalf("CustomResourceTypes: %v (%d types)", err, len(types))
	}
	return types[0]
}

func validateSpec(t *testing.T, typ *Type, spec string) field.ErrorList {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(spec), &m); err != nil {
		t.Fatal(err)
	}
	obj := map[string]interface{}{"apiVersion": "cel.tabula.test/v1", "kind": "Thing", "metadata": map[string]interface{}{"name": "t"}, "spec": m}
	// Through JSON as a request body is: integers as int64.
	b, _ := json.Marshal(obj)
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	if _, err := typ.Coerce(u); err != nil {
		t.Fatal(err)
	}
	return typ.Validate(u, nil)
}

func quoteJSON(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestCustomResourceDeprecationWarning: a deprecated version's warning as
// kube's custom resource handler words it: the default names the newest
// served version that is not deprecated; the CRD's own text replaces it;
// an empty one sends none.
func TestCustomResourceDeprecationWarning(t *testing.T) {
	crd := &apiextensionsv1.CustomResourceDefinition{
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{Group: "example.com", Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
			{Name: "v1alpha1", Served: true, Deprecated: true},
			{Name: "v1beta1", Served: true},
			{Name: "v1", Served: true},
			{Name: "v2", Served: false},
		}},
		Status: apiextensionsv1.CustomResourceDefinitionStatus{AcceptedNames: apiextensionsv1.CustomResourceDefinitionNames{Kind: "Widget"}},
	}
	empty, own := "", "use v1, please"
	for _, c := range []struct {
		version string
		warning *string
		want    string
	}{
		{"v1alpha1", nil, "example.com/v1alpha1 Widget is deprecated; use example.com/v1 Widget"},
		{"v1", nil, "example.com/v1 Widget is deprecated"},
		{"v1alpha1", &own, "use v1, please"},
		{"v1alpha1", &empty, ""},
	} {
		ty := &Type{Deprecation: crDeprecation(crd, c.version, c.warning)}
		if got := ty.DeprecationWarning(); got != c.want {
			t.Errorf("%s: %q, want %q", c.version, got, c.want)
		}
	}
}
