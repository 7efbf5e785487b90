package server

import (
	"fmt"

	"encoding/json"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"
)

var emptyGVK runtimeschema.GroupVersionKind

// defaultColumns are kube-apiserver's columns for kinds without their own.
var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

// table renders objects as a meta.k8s.io Table; includeObject says what
// each row carries (Metadata by default, Object, or None).
func (r *request) table(objs []runtime.Object, includeObject string) (*metav1.Table, error) {
	switch includeObject {
	case "", "Metadata", "Object", "None":
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: includeObject: Invalid value: %q: must be 'Metadata', 'Object', 'None', or empty", includeObject))
	}
	tbl := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	tbl.ColumnDefinitions = r.t.Columns
	if tbl.ColumnDefinitions == nil {
		tbl.ColumnDefinitions = defaultColumns
	}
	for _, obj := range objs {
		var cells []interface{}
		if r.t.Row != nil {
			var err error
			if cells, err = r.t.Row(obj); err != nil {
				return nil, err
			}
		} else {
			acc, err := meta.Accessor(obj)
			if err != nil {
				return nil, err
			}
			cells = []interface{}{acc.GetName(), acc.GetCreationTimestamp().UTC().Format(time.RFC3339)}
		}
		row := metav1.TableRow{Cells: cells}
		switch includeObject {
		case "", "Metadata":
			row.Object = rawJSON(partialMetadata(obj, "v1"))
		case "Object":
			obj.GetObjectKind().SetGroupVersionKind(r.t.GroupVersionKind())
			row.Object = rawJSON(obj)
		}
		tbl.Rows = append(tbl.Rows, row)
	}
	if tbl.Rows == nil {
		tbl.Rows = []metav1.TableRow{}
	}
	return tbl, nil
}

// rawJSON embeds an object in a Table row; RawExtension only marshals Raw.
func rawJSON(obj runtime.Object) runtime.RawExtension {
	b, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Raw: b}
}
