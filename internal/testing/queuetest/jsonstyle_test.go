package queuetest

import (
	"fmt"
	"testing"
)

// recorder is a testing.TB that keeps the errors it is given.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

func TestCheckJSONStyle(t *testing.T) {
	for _, c := range []struct {
		body string
		bad  bool
	}{
		{`{"id":"x","dateCreated":"2026-11-25T10:00:00.123Z","timeout":300000,"log":[{"date":"2026-11-25T10:00:00Z"}]}`, false},
		{`{"data":{"ID":1,"When":"2026-11-25T10:00:00+01:00"},"result":{"X":1}}`, false},
		{`[{"ID":"x"}]`, true},
		{`{"log":[{"Date":"2026-11-25T10:00:00Z"}]}`, true},
		{`{"started":"2026-11-25T10:00:00+00:00"}`, true},
		{`{"next":"2026-11-25 10:00:00"}`, true},
		{`{"timeout":300000000000}`, true},
		{`not json`, true},
	} {
		r := &recorder{TB: t}
		CheckJSONStyle(r, "test", []byte(c.body))
		if got := len(r.errs) > 0; got != c.bad {
			t.Errorf("%s: errors %q, want bad=%v", c.body, r.errs, c.bad)
		}
	}
}
