package codecs_test

import (
	"bytes"
	"encoding/json"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/codecs"
)

// The streaming Table writer produces json.Marshal's bytes (what the
// codec writes for a Table), for rows with every kind of cell and object.
func TestWriteTableJSONMatchesMarshal(t *testing.T) {
	four := int64(4)
	obj := func(v any) runtime.RawExtension {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a<b>&c", Namespace: "ns", Labels: map[string]string{"x": "ü\u2028"}}}
	rows := []metav1.TableRow{
		{Cells: []any{"a<b>&c", int64(3), 1.5, true, nil, "2026-11-27T10:00:00Z"}, Object: obj(cm)},
		{Cells: []any{"plain"}, Conditions: []metav1.TableRowCondition{{Type: metav1.RowCompleted, Status: metav1.ConditionTrue, Reason: "Done", Message: "<ok>"}}, Object: obj(map[string]any{"k": "v"})},
		{Cells: nil},
		// Cells written without json.Marshal, and strings it escapes.
		{Cells: []any{"cm-000123", int64(-1), int32(7), 12, false, nil, "5m12s"}},
		{Cells: []any{"tab\there", int32(1)}},
		{Cells: []any{"quote\"", "back\\slash", "del\x7f", "ü", "\u2028", "bad\xff"}},
		{Cells: []any{}, Object: runtime.RawExtension{Object: cm}},
	}
	for _, tc := range []struct {
		name string
		tbl  metav1.Table
	}{
		{"rows", metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"},
			ListMeta:          metav1.ListMeta{ResourceVersion: "42", Continue: "tok", RemainingItemCount: &four},
			ColumnDefinitions: []metav1.TableColumnDefinition{{Name: "Name", Type: "string", Format: "name", Description: "the <name>"}},
			Rows:              rows}},
		{"no rows", metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1beta1"}, Rows: []metav1.TableRow{}}},
		{"nil rows", metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := json.Marshal(&tc.tbl)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, '\n')
			var got bytes.Buffer
			if err := codecs.WriteTableJSON(&got, &tc.tbl); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want) {
				t.Fatalf("WriteTableJSON:\n%s\njson.Marshal:\n%s", got.Bytes(), want)
			}
		})
	}
}

// A row's cells are written as json.Marshal writes them, whatever the
// strings and numbers in them.
func FuzzTableRowCells(f *testing.F) {
	f.Add("cm-000123", int64(3), "5m", true)
	f.Add("a<b>", int64(-9), "\u2028", false)
	f.Add("ü\xff", int64(0), "\x7f\"\\", true)
	f.Fuzz(func(t *testing.T, a string, n int64, b string, ok bool) {
		row := metav1.TableRow{Cells: []any{a, n, int32(n), int(n), b, ok, nil}, Object: runtime.RawExtension{Raw: []byte(`{}`)}}
		tbl := metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, Rows: []metav1.TableRow{row}}
		want, err := json.Marshal(&tbl)
		if err != nil {
			t.Fatal(err)
		}
		var got bytes.Buffer
		if err := codecs.WriteTableJSON(&got, &tbl); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got.Bytes(), append(want, '\n')) {
			t.Fatalf("WriteTableJSON:\n%s\njson.Marshal:\n%s", got.Bytes(), want)
		}
	})
}
