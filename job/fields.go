package job

import (
	"encoding/json"
	"time"
)

// The document vocabulary this package needs. The storage layer has its own (package
// internal/docfmt); these are private copies so that package job imports no internal
// package and its dependencies are what its users see. fields_test.go checks that the
// copies agree.

// The extra fields this library adds to a job document; the Node.js library ignores them.
const (
	// fieldUniqueKey holds the key of a job made unique by SetUniqueKey.
	fieldUniqueKey = "rjqUniqueKey"
	// fieldBackoff holds the retry policy set by SetBackoff.
	fieldBackoff = "rjqBackoff"
)

// reservedField reports whether name is one of the job fields the Node.js library defines,
// which Fields must not hold: they are written from the Job struct.
func reservedField(name string) bool {
	switch name {
	case "id", "name", "priority", "timeout", "retryDelay", "repeatDelay", "retryMax",
		"retryCount", "processCount", "repeat", "progress", "status", "log", "dateCreated",
		"dateEnable", "dateStarted", "dateFinished", "queueId", "data":
		return true
	}
	return false
}

// number reads any of the forms a stored number takes after decoding: float64 by default,
// json.Number when the session was opened with UseJSONNumber, Go integers for documents
// built in memory.
func number(v any) (float64, bool) {
	switch n := v.(type) {
	case float64:
		return n, true
	case float32:
		return float64(n), true
	case int:
		return float64(n), true
	case int64:
		return float64(n), true
	case int32:
		return float64(n), true
	case json.Number:
		f, err := n.Float64()
		return f, err == nil
	}
	return 0, false
}

// toMillis is t in UTC cut to whole milliseconds, as RethinkDB keeps times: what is read
// back is then equal to what was written.
func toMillis(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }
