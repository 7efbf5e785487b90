package codecs

import (
	"encoding/json"
	"testing"
)

// TestTypeMetaParts: the two parts join into what WithTypeMeta answers,
// the object's bytes are the stored ones (not a copy), and kinds and API
// versions are quoted as encoding/json quotes them.
func TestTypeMetaParts(t *testing.T) {
	for _, c := range []struct{ stored, want string }{
		{`{"metadata":{"name":"a"},"data":{"k":"v"}}`, `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"},"data":{"k":"v"}}`},
		{`{}`, `{"kind":"ConfigMap","apiVersion":"v1"}`},
		{"{ \n}", `{"kind":"ConfigMap","apiVersion":"v1"}`},
		{``, `{"kind":"ConfigMap","apiVersion":"v1"}`},
		{`[]`, `{"kind":"ConfigMap","apiVersion":"v1"}`},
		{`{ "a":1}`, `{"kind":"ConfigMap","apiVersion":"v1", "a":1}`},
	} {
		stored := []byte(c.stored)
		head, rest := TypeMetaParts(stored, "v1", "ConfigMap")
		if got := string(head) + string(rest); got != c.want {
			t.Errorf("parts of %q: %q; want %q", c.stored, got, c.want)
		}
		if whole := string(WithTypeMeta(stored, "v1", "ConfigMap")); whole != c.want {
			t.Errorf("WithTypeMeta(%q) = %q; want %q", c.stored, whole, c.want)
		}
		if rest != nil && &rest[0] != &stored[1] {
			t.Errorf("parts of %q: the object was copied", c.stored)
		}
	}
	for _, s := range []string{"example.com/v1", "Widget", `we"ird`, `back\slash`, "<tag>&", "ünïcode", "tab\there", "line\u2028sep"} {
		want, _ := json.Marshal(s)
		if got := quote(s); got != string(want) {
			t.Errorf("quote(%q) = %s; want %s", s, got, want)
		}
	}
}
