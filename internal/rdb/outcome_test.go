package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestSameEntry(t *testing.T) {
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	base := func() map[string]any {
		return map[string]any{"date": at, "queueId": "q", "message": "completed", "data": nil, "retryCount": 0, "processCount": int64(1)}
	}
	with := func(k string, v any) map[string]any {
		m := base()
		m[k] = v
		return m
	}
	for _, tc := range []struct {
		name string
		b    map[string]any
		want bool
	}{
		{"equal", base(), true},
		{"the same time in another zone", with("date", at.In(time.FixedZone("x", 3600))), true},
		{"another time", with("date", at.Add(time.Millisecond)), false},
		{"another message", with("message", "failed"), false},
		{"a field more", with("duration", int64(3)), false},
		{"another number", with("retryCount", 1), false},
		{"a result", with("data", map[string]any{"a": 1}), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, sameEntry(base(), tc.b))
		})
	}
	// An entry holding a value that is not plain is never shared, not even with itself.
	assert.False(t, sameEntry(with("data", []any{1}), with("data", []any{1})))
}

// The outcomes of one key whose entries differ by their duration alone make one group
// that holds the entry once; the others of the key, one group that looks entries up.
func TestOutcomeGroupsShareTheEntry(t *testing.T) {
	tbl := &Table{QueueID: "q", LimitJobLogs: 100}
	at := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	var none job.Job
	none.ProcessCount = 1
	out := func(id string, e job.LogEntry) Outcome {
		e.Date = at
		return Outcome{ID: id, ProcessCount: 1, Status: job.Completed, DateFinished: at, Entry: e}
	}
	done := func(d time.Duration) job.LogEntry {
		return NewLog(&none, "q", nil, job.MessageCompleted, job.Information, job.Completed).WithDuration(d)
	}
	groups := tbl.outcomeGroups([]Outcome{
		out("a", done(time.Millisecond)),
		out("b", done(2*time.Second)),
		out("c", done(time.Millisecond).WithError("boom", "")),
		out("d", done(5*time.Millisecond)),
		out("e", NewLog(&none, "q", map[string]any{"rows": 1}, job.MessageCompleted, job.Information, job.Completed).WithDuration(time.Millisecond)),
	})
	if assert.Len(t, groups, 2) {
		shared, whole := groups[0], groups[1]
		assert.True(t, shared.shared)
		assert.Equal(t, []any{"a", "b", "d"}, shared.ids)
		assert.Equal(t, map[string]any{"a": int64(1), "b": int64(2000), "d": int64(5)}, shared.lookup["u"])
		assert.NotContains(t, shared.entry, "duration")
		assert.NotContains(t, shared.lookup, "e")
		assert.False(t, whole.shared)
		assert.Equal(t, []any{"c", "e"}, whole.ids)
		assert.Equal(t, int64(1), whole.lookup["e"]["c"].(map[string]any)["duration"])
		assert.NotContains(t, whole.lookup, "u")
	}
}
