package server

import (
	"k8s.io/apimachinery/pkg/fields"
)

// andName narrows a field selector to one object name.
func andName(sel fields.Selector, name string) fields.Selector {
	byName := fields.OneTermEqualSelector("metadata.name", name)
	if sel == nil || sel.Empty() {
		return byName
	}
	return fields.AndSelectors(sel, byName)
}
