// Package wrap formats plain text for fixed-width terminals.
package wrap

import (
	"strings"
	"unicode/utf8"
)

// Wrap re-flows text into lines of at most width characters, breaking only between words.
// Runs of whitespace (including line breaks) collapse to one space. A word longer than width
// sits alone on its own line rather than being split.
func Wrap(text string, width int) string {
	words := strings.Fields(text)
	var b strings.Builder
	lineLen := 0
	for _, w := range words {
		n := utf8.RuneCountInString(w)
		if lineLen > 0 && lineLen+1+n > width {
			b.WriteByte('\n')
			lineLen = 0
		}
		if lineLen > 0 {
			b.WriteByte(' ')
			lineLen++
		}
		b.WriteString(w)
		lineLen += n
	}
	return b.String()
}

// Indent prefixes every line of text with prefix.
func Indent(text, prefix string) string {
	if text == "" {
		return ""
	}
	return prefix + strings.ReplaceAll(text, "\n", "\n"+prefix)
}
