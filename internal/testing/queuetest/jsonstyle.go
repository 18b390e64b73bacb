package queuetest

import (
	"encoding/json"
	"regexp"
	"testing"
	"time"
	"unicode"
)

// payloadKeys hold a user's values (payloads, results, log data), whose names are theirs.
var payloadKeys = map[string]bool{"data": true, "result": true, "counts": true}

// timeLike is a string that means to be a time.
var timeLike = regexp.MustCompile(`^\d{4}-\d\d-\d\d[T ]\d\d:\d\d`)

// durationKeys are the job fields that hold durations: stored in milliseconds, so a value
// a thousand times too big (nanoseconds) is a Go time.Duration that leaked out.
var durationKeys = map[string]bool{"timeout": true, "retryDelay": true, "repeatDelay": true, "duration": true, "durationMs": true, "perMs": true}

// CheckJSONStyle fails tb unless body, the JSON output of a tool (rjq --json, the
// dashboard's API), follows the one style of the tools: the database's camelCase names
// (no Go field names), times in RFC 3339 UTC, durations in milliseconds. Values under the
// keys of a user's payload are theirs and not looked at.
func CheckJSONStyle(tb testing.TB, label string, body []byte) {
	tb.Helper()
	var v any
	if err := json.Unmarshal(body, &v); err != nil {
		tb.Errorf("%s: not JSON: %v: %s", label, err, body)
		return
	}
	walkStyle(tb, label, "", v)
}

func walkStyle(tb testing.TB, label, path string, v any) {
	tb.Helper()
	switch v := v.(type) {
	case map[string]any:
		for k, e := range v {
			if r := []rune(k); len(r) > 0 && unicode.IsUpper(r[0]) {
				tb.Errorf("%s: key %s.%s is a Go field name, not the database's camelCase", label, path, k)
			}
			if durationKeys[k] {
				if n, ok := e.(float64); ok && n >= 1e11 {
					tb.Errorf("%s: %s.%s = %v: a duration in nanoseconds, not milliseconds", label, path, k, n)
				}
			}
			if payloadKeys[k] {
				continue
			}
			walkStyle(tb, label, path+"."+k, e)
		}
	case []any:
		for _, e := range v {
			walkStyle(tb, label, path+"[]", e)
		}
	case string:
		if !timeLike.MatchString(v) {
			return
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil || t.Location() != time.UTC || v[len(v)-1] != 'Z' {
			tb.Errorf("%s: %s = %q: want a time in RFC 3339 UTC (…Z)", label, path, v)
		}
	}
}
