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
		for k, v := range m {
			// A value holding a NUL has no entry: PostgreSQL's text
			// cannot hold it, and indexTerms never asks for one.
			if hasNUL(v) {
				continue
			}
			// Name and namespace are the log row's own key columns, which
			// predicateSQL queries directly: index rows would only cost
			// writes.
			if prefix == "f:" && (k == "metadata.name" || k == "metadata.namespace") {
				continue
			}
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

// indexTerm is one condition a selector puts on tabula_index: the entry
// name must be present (negate: absent), with one of values if any.
type indexTerm struct {
	negate bool
	name   string
	values []string
}

// indexTerms lists what of a selector tabula_index can answer. Terms may
// match too much but never too little: callers still check every row with
// the predicate itself. A term on a value holding a NUL, which has no
// entries (indexRows), is left to that check.
func indexTerms(p kv.Predicate) []indexTerm {
	var out []indexTerm
	indexed := func(values []string) bool {
		for _, v := range values {
			if hasNUL(v) {
				return false
			}
		}
		return true
	}
	// A negated condition on a truncated value could exclude an object
	// whose full value differs: only push it down for short values.
	short := func(values []string) bool {
		for _, v := range values {
			if len(v) >= indexValueLen {
				return false
			}
		}
		return indexed(values)
	}
	if p.Label != nil {
		reqs, _ := p.Label.Requirements()
		for _, r := range reqs {
			vals := r.Values().UnsortedList()
			sort.Strings(vals)
			name := "l:" + r.Key()
			switch r.Operator() {
			case selection.Equals, selection.DoubleEquals, selection.In:
				if indexed(vals) {
					out = append(out, indexTerm{name: name, values: vals})
				}
			case selection.NotEquals, selection.NotIn:
				if short(vals) {
					out = append(out, indexTerm{negate: true, name: name, values: vals})
				}
			case selection.Exists:
				out = append(out, indexTerm{name: name})
			case selection.DoesNotExist:
				out = append(out, indexTerm{negate: true, name: name})
			case selection.GreaterThan, selection.LessThan:
				out = append(out, indexTerm{name: name}) // the label must exist; the value is checked in Go
			}
		}
	}
	if p.Field != nil {
		for _, r := range p.Field.Requirements() {
			if r.Field == "metadata.name" || r.Field == "metadata.namespace" {
				continue // columns of the log row, see predicateSQL
			}
			switch r.Operator {
			case selection.Equals, selection.DoubleEquals:
				if indexed([]string{r.Value}) {
					out = append(out, indexTerm{name: "f:" + r.Field, values: []string{r.Value}})
				}
			case selection.NotEquals:
				if short([]string{r.Value}) {
					out = append(out, indexTerm{negate: true, name: "f:" + r.Field, values: []string{r.Value}})
				}
			}
		}
	}
	return out
}

// predicateSQL compiles what it can of a selector into conditions on the
// log row aliased l, as constant SQL fragments with bound arguments. It
// narrows the rows read; the caller still checks every row with the
// predicate itself, so a condition may match too much but never too
// little.
//
// Positive conditions are written as "<rev> IN (SELECT rev FROM
// tabula_index …)", within resource and namespace (if any) the list's;
// revCol names the revision column to constrain (c.rev for latest lists,
// l.rev for history).
func predicateSQL(p kv.Predicate, resource, namespace, revCol string, probe bool) (string, []any) {
	var b strings.Builder
	var args []any
	if p.Field != nil {
		for _, r := range p.Field.Requirements() {
			col := ""
			switch r.Field {
			case "metadata.name":
				col = "l.name"
			case "metadata.namespace":
				col = "l.namespace"
			default:
				continue
			}
			if hasNUL(r.Value) {
				continue // no stored name holds one where text cannot
			}
			switch r.Operator {
			case selection.Equals, selection.DoubleEquals:
				b.WriteString(" AND " + col + " = ?")
				args = append(args, r.Value)
			case selection.NotEquals:
				b.WriteString(" AND " + col + " <> ?")
				args = append(args, r.Value)
			}
		}
	}
	for _, t := range indexTerms(p) {
		// probe: the row's own entry is looked up (the primary key), so
		// the walk costs the rows it walks, not the term's matches
		// elsewhere (a 1% label in one namespace of a million objects
		// took 27 ms on PostgreSQL, which hashed every match first). A
		// scalar subquery, which no planner turns into a join. Otherwise
		// the matches are gathered once per query, cheaper per row when
		// the walk covers more rows than the term has matches.
		switch {
		case t.negate:
			b.WriteString(" AND NOT EXISTS (SELECT 1 FROM tabula_index x WHERE x.rev = " + revCol + " AND x.name = ?")
		case probe:
			b.WriteString(" AND (SELECT 1 FROM tabula_index x WHERE x.rev = " + revCol + " AND x.name = ?")
		default:
			// The matches gathered are the range's only.
			cond, cargs := termCondition(t, resource, namespace)
			b.WriteString(" AND " + revCol + " IN (SELECT x.rev FROM tabula_index x WHERE " + cond + ")")
			args = append(args, cargs...)
			continue
		}
		args = append(args, t.name)
		if len(t.values) > 0 {
			b.WriteString(" AND x.value IN (" + placeholders(len(t.values)) + ")")
			for _, v := range t.values {
				args = append(args, truncateIndexValue(v))
			}
		}
		if probe && !t.negate {
			b.WriteString(") IS NOT NULL")
		} else {
			b.WriteString(")")
		}
	}
	return b.String(), args
}

// placeholders returns n comma-separated bind markers.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}

// hasNUL says whether v holds a NUL character.
func hasNUL(v string) bool { return strings.IndexByte(v, 0) >= 0 }

// unstorable says whether any of vs is a name the database cannot hold,
// so that nothing can be stored or found under it.
func (s *Store) unstorable(vs ...string) bool {
	if !s.noNUL {
		return false
	}
	for _, v := range vs {
		if hasNUL(v) {
			return true
		}
	}
	return false
}
