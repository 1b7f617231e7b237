package cli

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// terminalSafe writes to w with control characters other than newline, tab and carriage return
// (C0, DEL, C1, and bytes that are not UTF-8) written out as escapes (\x1b, \u009b): drover
// prints text that other identities write — an agent writes its Cluster's status, condition
// messages come from clouds and downstream clusters — and that text must not drive the
// reader's terminal (set its title, rewrite earlier lines, hide output). JSON and YAML output
// escape these characters themselves, so they pass unchanged.
type terminalSafe struct{ w io.Writer }

func (t terminalSafe) Write(p []byte) (int, error) {
	if !needsEscape(p) {
		return t.w.Write(p)
	}
	var b bytes.Buffer
	b.Grow(len(p) + 16)
	for rest := p; len(rest) > 0; {
		r, size := utf8.DecodeRune(rest)
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, rest[0])
		case isControl(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.Write(rest[:size])
		}
		rest = rest[size:]
	}
	if _, err := t.w.Write(b.Bytes()); err != nil {
		return 0, err
	}
	return len(p), nil
}

// oneLine keeps text other identities write (condition, resource and Event messages) on its
// one line of a human view: its line breaks are written out and its tabs made spaces, so that
// it cannot forge lines ("Condition Ready: True") or table columns.
func oneLine(s string) string { return oneLineReplacer.Replace(s) }

var oneLineReplacer = strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", " ")

func isControl(r rune) bool {
	return (r < 0x20 && r != '\n' && r != '\t' && r != '\r') || r == 0x7f || (r >= 0x80 && r <= 0x9f)
}

// needsEscape is the fast path: most output has nothing to escape.
func needsEscape(p []byte) bool {
	for i := 0; i < len(p); {
		c := p[i]
		if c < utf8.RuneSelf {
			if isControl(rune(c)) {
				return true
			}
			i++
			continue
		}
		r, size := utf8.DecodeRune(p[i:])
		if (r == utf8.RuneError && size == 1) || isControl(r) {
			return true
		}
		i += size
	}
	return false
}
