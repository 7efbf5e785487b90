package schema_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/tabula-dev/tabula/schema"
)

// The README's "What is served" table lists exactly the kinds the registry
// serves, per group-version, so it stays true as kinds are added.
func TestReadmeListsServedKinds(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "\n## What is served\n")
	if !ok {
		t.Fatal(`README.md has no "## What is served" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	listed := map[string][]string{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\| ([^|]+) \\|$").FindAllStringSubmatch(section, -1) {
		for _, k := range strings.Split(m[2], ",") {
			listed[m[1]] = append(listed[m[1]], strings.TrimSpace(k))
		}
	}
	served := map[string][]string{}
	for _, typ := range schema.NewBuiltin().Types() {
		gv := typ.GroupVersion().String()
		served[gv] = append(served[gv], typ.Kind)
	}
	for gv, kinds := range served {
		slices.Sort(kinds)
		got := slices.Sorted(slices.Values(listed[gv]))
		if !slices.Equal(got, kinds) {
			t.Errorf("README lists %s as %v; the registry serves %v", gv, got, kinds)
		}
	}
	for gv := range listed {
		if _, ok := served[gv]; !ok {
			t.Errorf("README lists %s, which is not served", gv)
		}
	}
}
