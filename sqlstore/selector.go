package sqlstore

import (
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/selection"

	"github.com/tabula-dev/tabula/sqlstore/kv"
)

// indexValueLen is how much of a label or field value tabula_index keeps.
const indexValueLen = 255

// indexRows returns the (name, value) pairs stored in tabula_index for an
// entry, in a stable order.
func indexRows(e kv.Entry) [][2]string {
	var out [][2]string
	add := func(prefix string, m map[string]string) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			out = append(out, [2]string{prefix + k, truncateIndexValue(m[k])})
		}
	}
	add("l:", e.Labels)
	add("f:", e.Fields)
	return out
}

// truncateIndexValue cuts a value to indexValueLen characters (runes, as
// the databases count them).
func truncateIndexValue(v string) string {
	if len(v) <= indexValueLen {
		return v
	}
	r := []rune(v)
	if len(r) <= indexValueLen {
		return v
	}
	return string(r[:indexValueLen])
}

// predicateSQL compiles what it can of a selector into conditions on the
// log row aliased l, as constant SQL fragments with bound arguments. It
// narrows the rows read; the caller still checks every row with the
// predicate itself, so a condition may match too much but never too
// little.
//
// Positive conditions are written as "<rev> IN (SELECT rev FROM
// tabula_index …)" so the database can drive the query from the index
// (a selective list reads only matching rows); revCol names the revision
// column to constrain (c.rev for latest lists, which tabula_current_rev
// indexes, l.rev for history).
func predicateSQL(p kv.Predicate, revCol string) (string, []any) {
	var b strings.Builder
	var args []any
	exists := func(negate bool, name string, values []string) {
		if negate {
			b.WriteString(" AND NOT EXISTS (SELECT 1 FROM tabula_index x WHERE x.rev = l.rev AND x.name = ?")
		} else {
			b.WriteString(" AND " + revCol + " IN (SELECT x.rev FROM tabula_index x WHERE x.name = ?")
		}
		args = append(args, name)
		if len(values) > 0 {
			b.WriteString(" AND x.value IN (" + strings.TrimSuffix(strings.Repeat("?,", len(values)), ",") + ")")
			for _, v := range values {
				args = append(args, truncateIndexValue(v))
			}
		}
		b.WriteString(")")
	}
	// A negated condition on a truncated value could exclude an object
	// whose full value differs: only push it down for short values.
	short := func(values []string) bool {
		for _, v := range values {
			if len(v) >= indexValueLen {
				return false
			}
		}
		return true
	}
	if p.Label != nil {
		reqs, _ := p.Label.Requirements()
		for _, r := range reqs {
			vals := r.Values().UnsortedList()
			sort.Strings(vals)
			name := "l:" + r.Key()
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
				exists(false, name, vals)
			case selection.NotEquals, selection.NotIn:
				if short(vals) {
					exists(true, name, vals)
				}
			case selection.Exists:
				exists(false, name, nil)
			case selection.DoesNotExist:
				exists(true, name, nil)
			case selection.GreaterThan, selection.LessThan:
				exists(false, name, nil) // the label must exist; the value is checked in Go
			}
		}
	}
	if p.Field != nil {
		for _, r := range p.Field.Requirements() {
			col := ""
			switch r.Field {
			case "metadata.name":
				col = "l.name"
			case "metadata.namespace":
				col = "l.namespace"
			}
			eq := r.Operator == selection.Equals || r.Operator == selection.DoubleEquals
			switch {
			case col != "" && eq:
				b.WriteString(" AND " + col + " = ?")
				args = append(args, r.Value)
			case col != "" && r.Operator == selection.NotEquals:
				b.WriteString(" AND " + col + " <> ?")
				args = append(args, r.Value)
			case eq:
				exists(false, "f:"+r.Field, []string{r.Value})
			case r.Operator == selection.NotEquals && short([]string{r.Value}):
				exists(true, "f:"+r.Field, []string{r.Value})
			}
		}
	}
	return b.String(), args
}
