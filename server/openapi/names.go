package openapi

import (
	"reflect"
	"sort"
	"strings"
	"unicode"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

const (
	extGVK    = "x-kubernetes-group-version-kind"
	extAction = "x-kubernetes-action"
)

// modelName is the OpenAPI definition name of a Go value: the name its
// OpenAPIModelName method gives (io.k8s.api.core.v1.ConfigMap), or the
// REST-friendly form of its Go package path and type name.
func modelName(v interface{}) string {
	return friendlyName(util.GetCanonicalTypeName(v))
}

// friendlyName turns a Go canonical name (k8s.io/api/core/v1.ConfigMap)
// into kube's definition name (io.k8s.api.core.v1.ConfigMap); names that
// are already in that form are returned unchanged.
func friendlyName(name string) string {
	if strings.Contains(name, "/") {
		return util.ToRESTFriendlyName(name)
	}
	return name
}

// definitionNamer names definitions and tags every definition whose Go type
// the scheme knows with the x-kubernetes-group-version-kind extension, the
// list of group-version-kinds it is registered as.
type definitionNamer struct {
	gvks map[string][]schema.GroupVersionKind
}

func newDefinitionNamer(scheme *runtime.Scheme) *definitionNamer {
	n := &definitionNamer{gvks: map[string][]schema.GroupVersionKind{}}
	if scheme == nil {
		return n
	}
	for gvk, t := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := modelName(reflect.New(t).Interface())
		n.gvks[name] = append(n.gvks[name], gvk)
	}
	for _, list := range n.gvks {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.Group != b.Group {
				return a.Group < b.Group
			}
			if a.Version != b.Version {
				return a.Version < b.Version
			}
			return a.Kind < b.Kind
		})
	}
	return n
}

// name implements GetDefinitionName of the kube-openapi builders.
func (n *definitionNamer) name(name string) (string, spec.Extensions) {
	name = friendlyName(name)
	gvks := n.gvks[name]
	if len(gvks) == 0 {
		return name, nil
	}
	list := make([]interface{}, 0, len(gvks))
	for _, gvk := range gvks {
		list = append(list, map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind})
	}
	return name, spec.Extensions{extGVK: list}
}

// groupID is the group as it appears inside operation IDs: "Core" for the
// legacy group, otherwise the group without ".k8s.io" in upper camel case
// ("coordination.k8s.io" → "Coordination", "rbac.authorization.k8s.io" →
// "RbacAuthorization", "stable.example.com" → "StableExampleCom").
func groupID(group string) string {
	if group == "" {
		return "Core"
	}
	group = strings.TrimSuffix(group, ".k8s.io")
	var b strings.Builder
	upper := true
	for _, r := range group {
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			upper = true
			continue
		}
		if upper {
			r = unicode.ToUpper(r)
			upper = false
		}
		b.WriteRune(r)
	}
	return b.String()
}

// groupTag is the tag of a group's discovery operation ("core",
// "coordination", "rbacAuthorization").
func groupTag(group string) string {
	id := []rune(groupID(group))
	id[0] = unicode.ToLower(id[0])
	return string(id)
}

// gvID is the group-version inside operation IDs ("CoreV1").
func gvID(gv schema.GroupVersion) string {
	return groupID(gv.Group) + upperFirst(gv.Version)
}

// gvTag is the tag of a group-version's operations ("core_v1",
// "coordination_v1").
func gvTag(gv schema.GroupVersion) string {
	return groupTag(gv.Group) + "_" + gv.Version
}

// gvPath is the URL prefix of a group-version ("/api/v1",
// "/apis/coordination.k8s.io/v1") and, without the slash, its name in the
// /openapi/v3 index.
func gvPath(gv schema.GroupVersion) string {
	if gv.Group == "" {
		return "/api/" + gv.Version
	}
	return "/apis/" + gv.Group + "/" + gv.Version
}

func upperFirst(s string) string {
	if s == "" {
		return s
	}
	r := []rune(s)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// article is the indefinite article kube puts before a kind in operation
// descriptions ("create a ConfigMap", "create an Event", "create
// Endpoints"), with a trailing space, or "" for plural-looking kinds.
func article(kind string) string {
	if strings.HasSuffix(kind, "s") && !strings.HasSuffix(kind, "ss") {
		return ""
	}
	if kind != "" && strings.ContainsRune("AEIOU", unicode.ToUpper([]rune(kind)[0])) {
		return "an "
	}
	return "a "
}
