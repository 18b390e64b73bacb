package job

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// The document vocabulary is the storage layer's (package internal/docfmt): one list of
// field names for the library.

// The extra fields this library adds to a job document; the Node.js library ignores them.
const (
	// fieldUniqueKey holds the key of a job made unique by SetUniqueKey.
	fieldUniqueKey = "rjqUniqueKey"
	// fieldBackoff holds the retry policy set by SetBackoff.
	fieldBackoff = "rjqBackoff"
)

// reservedField reports whether name is one of the job fields the Node.js library defines,
// which Fields must not hold: they are written from the Job struct.
func reservedField(name string) bool { return docfmt.Reserved(name) }

// number reads any of the forms a stored number takes after decoding.
func number(v any) (float64, bool) { return docfmt.Number(v) }

// toMillis is t in UTC cut to whole milliseconds, as RethinkDB keeps times.
func toMillis(t time.Time) time.Time { return docfmt.Millis(t) }
