// Package errtext formats what error messages echo of the input they refuse: keys and
// names quoted and shortened, so that a 1,000-byte key does not fill a log line, and times
// in RFC 3339, without the monotonic clock reading that fmt's %v prints.
package errtext

import (
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"
)

// keyMax is the longest key Key quotes whole, in bytes; a longer one is cut to its first
// keyHead bytes.
const (
	keyMax  = 48
	keyHead = 40
)

// Key is s quoted as %q quotes it; one longer than 48 bytes is cut to its first 40 bytes
// (at a character's start), followed by "…" and its length: "abc…"… (1000 bytes).
func Key(s string) string {
	if len(s) <= keyMax {
		return strconv.Quote(s)
	}
	cut := keyHead
	for i := keyHead; i > keyHead-utf8.UTFMax; i-- {
		if utf8.RuneStart(s[i]) {
			cut = i
			break
		}
	}
	return fmt.Sprintf("%q… (%d bytes)", s[:cut], len(s))
}

// Time is t in RFC 3339 with its fraction of a second, as given (its zone kept): no
// monotonic clock reading, no Go-only notation.
func Time(t time.Time) string { return t.Format(time.RFC3339Nano) }
