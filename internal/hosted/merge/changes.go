package merge

import (
	"slices"
	"strings"
)

// Under returns the changes whose path starts with the top-level field.
func Under(changes []Change, field string) []Change {
	var out []Change
	for _, c := range changes {
		if c.Path.Top() == field {
			out = append(out, c)
		}
	}
	return out
}

// Has reports whether changes include one at path p.
func Has(changes []Change, p Path) bool {
	s := p.String()
	return slices.ContainsFunc(changes, func(c Change) bool { return c.Path.String() == s })
}

// Describe lists the changes' paths for messages: "tags[env], nodeGroups[a].desiredSize".
func Describe(changes []Change) string {
	out := make([]string, 0, len(changes))
	for _, c := range changes {
		out = append(out, c.Path.String())
	}
	return strings.Join(out, ", ")
}
