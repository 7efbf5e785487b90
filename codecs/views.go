package codecs

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	metav1beta1 "k8s.io/apimachinery/pkg/apis/meta/v1beta1"
	"k8s.io/apimachinery/pkg/runtime"
	runtimeschema "k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/tabula-dev/tabula/schema"
)

// The views of objects a client can ask for (Accept's as=…): the object
// itself, a meta.k8s.io Table, or PartialObjectMetadata. A View is what
// gets encoded, in whichever media type was negotiated.

// defaultColumns are kube-apiserver's columns for kinds without their own.
var defaultColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: metav1.ObjectMeta{}.SwaggerDoc()["name"]},
	{Name: "Created At", Type: "date", Description: metav1.ObjectMeta{}.SwaggerDoc()["creationTimestamp"]},
}

// ObjectView is one object of t in out's view; includeObject is the
// request's Table option (Metadata by default, Object, or None).
func ObjectView(out Output, t *schema.Type, obj runtime.Object, includeObject string) (runtime.Object, error) {
	switch out.View {
	case ViewTable:
		tbl, err := table(out, t, []runtime.Object{obj}, includeObject, nil)
		if err != nil {
			return nil, err
		}
		if acc, err := meta.Accessor(obj); err == nil {
			tbl.ResourceVersion = acc.GetResourceVersion()
		}
		return tbl, nil
	case ViewPartialObjectMetadata:
		return PartialMetadata(obj, out.ViewVersion), nil
	}
	return obj, nil
}

// ListView is a page of objects of t in out's view, with the page's list
// metadata. rowMeta, if set, gives a Table row's object for
// includeObject=Metadata (MetadataJSON of objs[i]), as the caller keeps
// them.
func ListView(out Output, t *schema.Type, objs []runtime.Object, lm metav1.ListMeta, includeObject string, rowMeta func(i int) ([]byte, error)) (runtime.Object, error) {
	switch out.View {
	case ViewTable:
		tbl, err := table(out, t, objs, includeObject, rowMeta)
		if err != nil {
			return nil, err
		}
		tbl.ListMeta = lm
		return tbl, nil
	case ViewPartialObjectMetadataList:
		if out.ViewVersion == "v1beta1" {
			// Its own type: its Protobuf fields are numbered otherwise.
			l := &metav1beta1.PartialObjectMetadataList{
				TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/v1beta1"},
				ListMeta: lm,
			}
			for _, o := range objs {
				l.Items = append(l.Items, *PartialMetadata(o, out.ViewVersion))
			}
			return l, nil
		}
		l := &metav1.PartialObjectMetadataList{
			TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + out.ViewVersion},
			ListMeta: lm,
		}
		for _, o := range objs {
			l.Items = append(l.Items, *PartialMetadata(o, out.ViewVersion))
		}
		return l, nil
	}
	list := t.NewList()
	if ul, ok := list.(*unstructured.UnstructuredList); ok {
		// Items of an unstructured list keep their kind and apiVersion.
		ul.SetResourceVersion(lm.ResourceVersion)
		ul.SetContinue(lm.Continue)
		ul.SetRemainingItemCount(lm.RemainingItemCount)
		ul.Items = make([]unstructured.Unstructured, 0, len(objs))
		for _, o := range objs {
			if u, ok := o.(*unstructured.Unstructured); ok {
				ul.Items = append(ul.Items, *u)
			}
		}
		return ul, nil
	}
	if lo, ok := list.(metav1.ListInterface); ok {
		lo.SetResourceVersion(lm.ResourceVersion)
		lo.SetContinue(lm.Continue)
		lo.SetRemainingItemCount(lm.RemainingItemCount)
	}
	list.GetObjectKind().SetGroupVersionKind(t.GroupVersion().WithKind(t.ListKind))
	for _, o := range objs {
		// Items of a typed list carry no kind and apiVersion.
		o.GetObjectKind().SetGroupVersionKind(runtimeschema.GroupVersionKind{})
	}
	if err := SetList(list, objs); err != nil {
		return nil, err
	}
	return list, nil
}

// table renders objects as a Table of the negotiated version.
func table(out Output, t *schema.Type, objs []runtime.Object, includeObject string, rowMeta func(i int) ([]byte, error)) (*metav1.Table, error) {
	if err := CheckIncludeObject(includeObject); err != nil {
		return nil, err
	}
	tbl := tableEnvelope(out, t)
	if rowMeta == nil {
		rowMeta = func(i int) ([]byte, error) { return MetadataJSON(out, objs[i]), nil }
	}
	tbl.Rows = make([]metav1.TableRow, len(objs))
	err := Each(len(objs), func(i int) (err error) {
		tbl.Rows[i], err = tableRow(t, objs[i], includeObject, func() ([]byte, error) { return rowMeta(i) })
		return err
	})
	if err != nil {
		return nil, err
	}
	return tbl, nil
}

// CheckIncludeObject refuses a Table option other than kube-apiserver's.
func CheckIncludeObject(includeObject string) error {
	switch includeObject {
	case "", "Metadata", "Object", "None":
		return nil
	}
	return apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: includeObject: Invalid value: %q: must be 'Metadata', 'Object', 'None', or empty", includeObject))
}

// tableEnvelope is a Table of t in out's version, without rows.
func tableEnvelope(out Output, t *schema.Type) *metav1.Table {
	tbl := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/" + tableVersion(out)}}
	tbl.ColumnDefinitions = t.Columns
	if tbl.ColumnDefinitions == nil {
		tbl.ColumnDefinitions = defaultColumns
	}
	return tbl
}

// tableRow is obj's row; rowMeta gives its object for
// includeObject=Metadata (MetadataJSON of obj).
func tableRow(t *schema.Type, obj runtime.Object, includeObject string, rowMeta func() ([]byte, error)) (metav1.TableRow, error) {
	cellsOf := t.Row
	if cellsOf == nil {
		cellsOf = schema.DefaultRow
	}
	cells, err := cellsOf(obj)
	if err != nil {
		return metav1.TableRow{}, err
	}
	row := metav1.TableRow{Cells: cells}
	if t.RowConditions != nil {
		row.Conditions = t.RowConditions(obj)
	}
	switch includeObject {
	case "", "Metadata":
		b, err := rowMeta()
		if err != nil {
			return metav1.TableRow{}, err
		}
		row.Object = runtime.RawExtension{Raw: b}
	case "Object":
		obj.GetObjectKind().SetGroupVersionKind(t.GroupVersionKind())
		row.Object = rawJSON(obj)
	}
	return row, nil
}

// TableRowJSON is obj's row as WriteTableRowsJSON writes it (rowMeta as
// for ListView): a large list's rows are made one object at a time, so
// its objects need not all be held decoded at once.
func TableRowJSON(t *schema.Type, obj runtime.Object, includeObject string, rowMeta func() ([]byte, error)) ([]byte, error) {
	row, err := tableRow(t, obj, includeObject, rowMeta)
	if err != nil {
		return nil, err
	}
	return appendTableRow(nil, &row)
}

// MetadataJSON is the object of obj's row in a Table for out with
// includeObject=Metadata (its PartialObjectMetadata), as table writes it.
func MetadataJSON(out Output, obj runtime.Object) []byte {
	return rawJSON(PartialMetadata(obj, tableVersion(out))).Raw
}

// tableVersion is the meta.k8s.io version of a Table for out, which its
// rows' PartialObjectMetadata share (as kube-apiserver writes them).
func tableVersion(out Output) string {
	if out.ViewVersion == "v1beta1" {
		return "v1beta1"
	}
	return "v1"
}

// rawJSON embeds an object in a Table row; RawExtension only marshals Raw.
func rawJSON(obj runtime.Object) runtime.RawExtension {
	b, err := json.Marshal(obj)
	if err != nil {
		return runtime.RawExtension{}
	}
	return runtime.RawExtension{Raw: b}
}

// PartialMetadata is obj's PartialObjectMetadata view.
func PartialMetadata(obj runtime.Object, version string) *metav1.PartialObjectMetadata {
	pm := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/" + version}}
	if acc, err := meta.Accessor(obj); err == nil {
		pm.ObjectMeta = ObjectMetaOf(acc)
	}
	return pm
}

// ObjectMetaOf copies an object's metadata into an ObjectMeta.
func ObjectMetaOf(a metav1.Object) metav1.ObjectMeta {
	if m, ok := a.(*metav1.ObjectMeta); ok {
		return *m
	}
	return metav1.ObjectMeta{
		Name: a.GetName(), GenerateName: a.GetGenerateName(), Namespace: a.GetNamespace(), UID: a.GetUID(),
		ResourceVersion: a.GetResourceVersion(), Generation: a.GetGeneration(), CreationTimestamp: a.GetCreationTimestamp(),
		DeletionTimestamp: a.GetDeletionTimestamp(), DeletionGracePeriodSeconds: a.GetDeletionGracePeriodSeconds(),
		Labels: a.GetLabels(), Annotations: a.GetAnnotations(), OwnerReferences: a.GetOwnerReferences(),
		Finalizers: a.GetFinalizers(), ManagedFields: a.GetManagedFields(),
	}
}

// WriteTableJSON writes tbl as compact JSON, the bytes json.Marshal makes
// of it, a row at a time. Marshalling the whole Table would scan every
// row's object again (encoding/json compacts each RawExtension it is
// given): a quarter of a large Table's time, for JSON that is compact
// already (rawJSON made it).
func WriteTableJSON(w io.Writer, tbl *metav1.Table) error {
	return writeTableJSON(w, tbl, len(tbl.Rows), func(b []byte, i int) ([]byte, error) {
		return appendTableRow(b, &tbl.Rows[i])
	})
}

// WriteTableRowsJSON writes, as WriteTableJSON, a Table of t in out's
// version with list metadata lm around n rows, each appended by row when
// it is written (a row of TableRowJSON, or AppendKeptRow's).
func WriteTableRowsJSON(w io.Writer, out Output, t *schema.Type, lm metav1.ListMeta, n int, row func(b []byte, i int) ([]byte, error)) error {
	tbl := tableEnvelope(out, t)
	tbl.ListMeta = lm
	tbl.Rows = []metav1.TableRow{} // "rows":[], as a Table of no objects is written
	return writeTableJSON(w, tbl, n, row)
}

// writeTableJSON writes tbl's envelope around n rows, each appended by
// appendRow and written with its comma in one write; tbl's own Rows only
// say whether there are rows at all (nil: "rows":null).
func writeTableJSON(w io.Writer, tbl *metav1.Table, n int, appendRow func(b []byte, i int) ([]byte, error)) error {
	envelope := *tbl
	envelope.Rows = nil
	head, err := json.Marshal(&envelope)
	if err != nil {
		return err
	}
	// Rows is the Table's last field.
	const nullRows = `"rows":null}`
	if !bytes.HasSuffix(head, []byte(nullRows)) {
		return fmt.Errorf("codecs: unexpected Table envelope %.40q", head)
	}
	head = append(head[:len(head)-len(nullRows)], `"rows":[`...)
	if tbl.Rows == nil {
		head = append(head[:len(head)-1], "null"...)
	}
	if _, err := w.Write(head); err != nil {
		return err
	}
	var b []byte
	for i := range n {
		b = b[:0]
		if i > 0 {
			b = append(b, ',')
		}
		if b, err = appendRow(b, i); err != nil {
			return err
		}
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	tail := "]}\n"
	if tbl.Rows == nil {
		tail = "}\n"
	}
	_, err = io.WriteString(w, tail)
	return err
}

// appendTableRow appends r as json.Marshal writes a TableRow: cells,
// conditions when there are any, and the object's JSON as it is.
func appendTableRow(b []byte, r *metav1.TableRow) ([]byte, error) {
	b, err := appendCells(append(b, `{"cells":`...), r.Cells)
	if err != nil {
		return nil, err
	}
	if len(r.Conditions) > 0 {
		conds, err := json.Marshal(r.Conditions)
		if err != nil {
			return nil, err
		}
		b = append(append(b, `,"conditions":`...), conds...)
	}
	b = append(b, `,"object":`...)
	if r.Object.Raw == nil {
		obj, err := json.Marshal(r.Object)
		if err != nil {
			return nil, err
		}
		b = append(b, obj...)
	} else {
		b = append(b, r.Object.Raw...)
	}
	return append(b, '}'), nil
}

// appendCells appends a row's cells as json.Marshal writes them.
func appendCells(b []byte, cells []any) ([]byte, error) {
	if cells == nil {
		return append(b, "null"...), nil
	}
	b = append(b, '[')
	for i, c := range cells {
		if i > 0 {
			b = append(b, ',')
		}
		var err error
		if b, err = appendCell(b, c); err != nil {
			return nil, err
		}
	}
	return append(b, ']'), nil
}

// appendCell appends a cell as json.Marshal writes it. Most cells are
// integers and strings that JSON takes as they are; those are written
// here, and any other (a float, a string json.Marshal would escape) goes
// through json.Marshal, whose reflection was most of a row's time.
func appendCell(b []byte, c any) ([]byte, error) {
	switch v := c.(type) {
	case string:
		if plainJSONString(v) {
			return append(append(append(b, '"'), v...), '"'), nil
		}
	case int64:
		return strconv.AppendInt(b, v, 10), nil
	case int32:
		return strconv.AppendInt(b, int64(v), 10), nil
	case int:
		return strconv.AppendInt(b, int64(v), 10), nil
	case bool:
		return strconv.AppendBool(b, v), nil
	case nil:
		return append(b, "null"...), nil
	}
	return appendMarshaled(b, c)
}

// plainJSONString says whether json.Marshal writes s as it is between
// quotes: printable ASCII, without the characters it escapes.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c > 0x7e, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

func appendMarshaled(b []byte, v any) ([]byte, error) {
	out, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return append(b, out...), nil
}

// WriteJSONList writes {"kind":…,"apiVersion":…,"metadata":…,"items":[…]}
// around n items that are JSON already (stored bytes), asking item for
// each in turn so that a large list is never held twice. An item's
// nonzero id names its bytes for a KeptWriter.
func WriteJSONList(w io.Writer, t *schema.Type, lm *metav1.ListMeta, n int, item func(i int) ([]byte, uint64, error)) error {
	var meta any = lm
	if t.Unstructured {
		// An unstructured list always says continue, empty or not.
		m := map[string]any{"continue": lm.Continue, "resourceVersion": lm.ResourceVersion}
		if lm.RemainingItemCount != nil {
			m["remainingItemCount"] = *lm.RemainingItemCount
		}
		meta = m
	}
	return writeJSONList(w, t.ListKind, t.APIVersion(), meta, n, item)
}

// WriteMetadataListJSON writes a PartialObjectMetadataList of out's
// version around n items, each its PartialObjectMetadata JSON
// (MetadataJSON's), as WriteJSONList writes a list.
func WriteMetadataListJSON(w io.Writer, out Output, lm *metav1.ListMeta, n int, item func(i int) ([]byte, uint64, error)) error {
	if n == 0 {
		// Items is not omitted when empty: a list of none is null.
		b, err := json.Marshal(&metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{Kind: "PartialObjectMetadataList", APIVersion: "meta.k8s.io/" + out.ViewVersion}, ListMeta: *lm})
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	return writeJSONList(w, "PartialObjectMetadataList", "meta.k8s.io/"+out.ViewVersion, lm, n, item)
}

// MetadataProtobuf is obj's PartialObjectMetadata in Protobuf, as an item
// of a PartialObjectMetadataList (of either version: their items are the
// same message, which carries no kind).
func MetadataProtobuf(obj runtime.Object) ([]byte, error) {
	return PartialMetadata(obj, "v1").Marshal()
}

func writeJSONList(w io.Writer, kind, apiVersion string, meta any, n int, item func(i int) ([]byte, uint64, error)) error {
	head := []byte(`{"kind":` + strconv.Quote(kind) + `,"apiVersion":` + strconv.Quote(apiVersion) + `,"metadata":`)
	m, err := json.Marshal(meta)
	if err != nil {
		return err
	}
	head = append(append(head, m...), `,"items":[`...)
	if _, err := w.Write(head); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		b, id, err := item(i)
		if err != nil {
			return err
		}
		if i > 0 {
			if _, err := w.Write([]byte{','}); err != nil {
				return err
			}
		}
		if err := writeItem(w, b, id); err != nil {
			return err
		}
	}
	_, err = w.Write([]byte("]}\n"))
	return err
}
