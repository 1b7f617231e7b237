// Package text shapes messages drover writes into statuses, conditions and Events.
package text

import "unicode/utf8"

// Clip cuts s to at most n bytes, on a rune boundary, marking the cut with "...". Status
// fields have size limits; a cut in the middle of a rune would write invalid UTF-8.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}
