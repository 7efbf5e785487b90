package codecs

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/tabula-dev/tabula/schema"
)

// A kept row is a Table row's JSON, made once for a revision of an object
// whose kind has Cells, with the ages of its Age-style cells (Since, Ago)
// left out and the times they show beside it: serving it fills them in
// (AppendKeptRow), so a Table of such objects is made without decoding
// any of them again.
//
// Its bytes: the number of open ages (uvarint); for each, where it goes
// in the JSON (uvarint, inside its cell's string) and its time (Unix
// seconds, varint; nanoseconds, uvarint); then the row's JSON without
// those ages.

// KeptRow is obj's row for a Table of t, object being the row's object
// (its PartialObjectMetadata for includeObject=Metadata).
func KeptRow(t *schema.Type, obj runtime.Object, object []byte) ([]byte, error) {
	cells, err := t.Cells(obj)
	if err != nil {
		return nil, err
	}
	// The cells are written first, then the kept row in one piece: the
	// object is most of it.
	var open []int
	var times []schema.Since
	row := make([]byte, 0, 256)
	row = append(row, `{"cells":`...)
	if cells == nil {
		row = append(row, "null"...)
	} else {
		row = append(row, '[')
	}
	for i, c := range cells {
		if i > 0 {
			row = append(row, ',')
		}
		// An age goes between the quotes of its string, after the text
		// before it: JSON escapes a string a character at a time, so the
		// parts' escapes are the whole's.
		switch s := c.(type) {
		case schema.Since:
			row = append(row, '"')
			open, times = append(open, len(row)), append(times, s)
			row = append(row, '"')
			continue
		case schema.Ago:
			row = appendStringContent(append(row, '"'), s.Before)
			open, times = append(open, len(row)), append(times, s.At)
			row = append(appendStringContent(row, s.After), '"')
			continue
		}
		if row, err = appendCell(row, c); err != nil {
			return nil, err
		}
	}
	if cells != nil {
		row = append(row, ']')
	}
	if t.RowConditions != nil {
		if conds := t.RowConditions(obj); len(conds) > 0 {
			b, err := json.Marshal(conds)
			if err != nil {
				return nil, err
			}
			row = append(append(row, `,"conditions":`...), b...)
		}
	}
	row = append(row, `,"object":`...)
	if object == nil {
		object = []byte("null")
	}

	head := binary.AppendUvarint(make([]byte, 0, 64), uint64(len(open)))
	for i, at := range open {
		ts := time.Time(times[i])
		head = binary.AppendUvarint(head, uint64(at))
		head = binary.AppendVarint(head, ts.Unix())
		head = binary.AppendUvarint(head, uint64(ts.Nanosecond()))
	}
	k := make([]byte, 0, len(head)+len(row)+len(object)+1)
	return append(append(append(append(k, head...), row...), object...), '}'), nil
}

// AppendKeptRow appends the row kept in k (KeptRow) as it reads at the
// time at.
func AppendKeptRow(b, k []byte, at time.Time) ([]byte, error) {
	n, w := binary.Uvarint(k)
	if w <= 0 || n > uint64(len(k)) {
		return nil, errKeptRow
	}
	open := k[w:]
	// The JSON follows the open cells' three numbers each (a varint is
	// as long as a uvarint of the same bytes).
	json := open
	for range 3 * n {
		_, w := binary.Uvarint(json)
		if w <= 0 {
			return nil, errKeptRow
		}
		json = json[w:]
	}
	last := uint64(0)
	for range n {
		off, w := binary.Uvarint(open)
		open = open[w:]
		sec, w := binary.Varint(open)
		open = open[w:]
		nsec, w := binary.Uvarint(open)
		open = open[w:]
		if off < last || off > uint64(len(json)) {
			return nil, errKeptRow
		}
		b = append(b, json[last:off]...)
		b = appendStringContent(b, schema.AgeAt(schema.Since(time.Unix(sec, int64(nsec))), at))
		last = off
	}
	return append(b, json[last:]...), nil
}

// appendStringContent appends s escaped as in a JSON string, without its
// quotes. An age is plain but "<unknown>" and "<invalid>", which are
// escaped as json.Marshal does.
func appendStringContent(b []byte, s string) []byte {
	start := len(b)
	b, _ = appendCell(b, s) // a string always encodes
	copy(b[start:], b[start+1:len(b)-1])
	return b[:len(b)-2]
}

var errKeptRow = errors.New("codecs: malformed kept Table row")
