package openapi

import (
	"reflect"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kube-openapi/pkg/common"
)

// param is one request parameter of a route (common.Parameter).
type param struct {
	name, description string
	kind              common.ParameterKind
	dataType          string
	required          bool
}

func (p *param) Name() string               { return p.name }
func (p *param) Description() string        { return p.description }
func (p *param) Required() bool             { return p.required }
func (p *param) Kind() common.ParameterKind { return p.kind }
func (p *param) DataType() string           { return p.dataType }
func (p *param) AllowMultiple() bool        { return false }

const (
	prettyDescription    = "If 'true', then the output is pretty printed. Defaults to 'false' unless the user-agent indicates a browser or command-line HTTP tool (curl and wget)."
	namespaceDescription = "object name and auth scope, such as for teams and projects"
)

func prettyParam() common.Parameter {
	return &param{name: "pretty", description: prettyDescription, kind: common.QueryParameterKind, dataType: "string"}
}

func namespaceParam() common.Parameter {
	return &param{name: "namespace", description: namespaceDescription, kind: common.PathParameterKind, dataType: "string", required: true}
}

func nameParam(kind string) common.Parameter {
	return &param{name: "name", description: "name of the " + kind, kind: common.PathParameterKind, dataType: "string", required: true}
}

// bodyParam marks a route as taking a request body; the body's schema comes
// from the route's RequestPayloadSample.
func bodyParam(required bool) common.Parameter {
	return &param{name: "body", kind: common.BodyParameterKind, dataType: "object", required: required}
}

// swaggerDocer is implemented by the meta/v1 option types: field
// documentation keyed by JSON name.
type swaggerDocer interface {
	SwaggerDoc() map[string]string
}

// optionParams turns the fields of an options struct (ListOptions,
// PatchOptions, …) into query parameters, the way kube-apiserver documents
// them: one parameter per JSON field of a scalar (or string slice) type,
// described by the type's SwaggerDoc. Nested structs (DeleteOptions'
// preconditions) and the inlined TypeMeta are not query parameters.
func optionParams(opts swaggerDocer, exclude ...string) []common.Parameter {
	docs := opts.SwaggerDoc()
	skip := map[string]bool{}
	for _, e := range exclude {
		skip[e] = true
	}
	var out []common.Parameter
	t := reflect.TypeOf(opts)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		if f.Anonymous || !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" || skip[name] {
			continue
		}
		dataType := queryDataType(f.Type)
		if dataType == "" {
			continue
		}
		out = append(out, &param{name: name, description: docs[name], kind: common.QueryParameterKind, dataType: dataType})
	}
	return out
}

// queryDataType maps a Go field type to the OpenAPI type of its query
// parameter; "" means it cannot be one.
func queryDataType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "string"
	case reflect.Bool:
		return "boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer"
	case reflect.Slice:
		// Repeated values (dryRun) are documented as a single string.
		if t.Elem().Kind() == reflect.String {
			return "string"
		}
	}
	return ""
}

// The query parameters of each kind of operation.
var (
	listQueryParams   = optionParams(&metav1.ListOptions{})
	createQueryParams = optionParams(&metav1.CreateOptions{})
	updateQueryParams = optionParams(&metav1.UpdateOptions{})
	patchQueryParams  = optionParams(&metav1.PatchOptions{})
	deleteQueryParams = optionParams(&metav1.DeleteOptions{})
	// DELETE on a collection takes DeleteOptions and the selecting part of
	// ListOptions.
	deleteCollectionQueryParams = append(optionParams(&metav1.DeleteOptions{}),
		optionParams(&metav1.ListOptions{}, "watch", "allowWatchBookmarks")...)
)

// params concatenates parameter lists into a new slice.
func params(lists ...[]common.Parameter) []common.Parameter {
	var out []common.Parameter
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}
