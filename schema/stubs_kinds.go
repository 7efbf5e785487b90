package schema

// Placeholders replaced by fields.go, columns.go, strategy.go and events.go.

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

func builtinFields(t *Type) ([]string, func(runtime.Object) map[string]string) { return nil, nil }

func builtinColumns(t *Type) ([]metav1.TableColumnDefinition, func(runtime.Object) ([]interface{}, error)) {
	return nil, nil
}

func builtinStrategy(t *Type) (func(runtime.Object), func(obj, old runtime.Object), func(obj, old runtime.Object) field.ErrorList) {
	return nil, nil, nil
}

func eventToCore(obj runtime.Object) (runtime.Object, error)   { return obj, nil }
func eventFromCore(obj runtime.Object) (runtime.Object, error) { return obj, nil }
