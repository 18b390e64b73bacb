package job

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLogMessagesVerbatim(t *testing.T) {
	// enums.js of the original library
	want := map[string]string{
		MessageAdded:         "Job added to the queue",
		MessageActive:        "Job retrieved and active",
		MessageCompleted:     "completed", // job-completed.js passes the status name
		MessageFailed:        "Job processing failed",
		MessageCancel:        "Job cancelled by Queue process handler",
		MessageSeeLogData:    "See the data attached to this log entry",
		MessageUpdated:       "Job updated. Old values in log data",
		MessagePassBack:      "Job has not been processed to completion and is being placed back into the queue",
		MessageProgress:      "Job progress updated. Old value in log data",
		MessageReanimated:    "Job has been reanimated",
		MessageLogsTruncated: "Job logs have been truncated",
		MessageNoErrorStack:  "The error has no stack detail",
		MessageNoErrorMsg:    "The error has no message",
	}
	for got, w := range want {
		assert.Equal(t, w, got)
	}
}

func TestNewLog(t *testing.T) {
	j := New(nil, nil, DefaultOptions())
	j.Status = Active
	j.RetryCount = 1
	j.ProcessCount = 2

	tests := []struct {
		name     string
		data     any
		message  string
		typ      LogType
		status   Status
		wantMsg  string
		wantType LogType
		wantStat Status
	}{
		{"defaults", nil, "", "", "", MessageSeeLogData, Information, Active},
		{"given", "d", "msg", Error, Failed, "msg", Error, Failed},
		{"only type", 1, "", Warning, "", MessageSeeLogData, Warning, Active},
		{"only status", nil, "", "", Completed, MessageSeeLogData, Information, Completed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := time.Now().Add(-time.Millisecond)
			e := NewLog(j, "qid", tt.data, tt.message, tt.typ, tt.status)
			assert.Equal(t, tt.data, e.Data)
			assert.Equal(t, tt.wantMsg, e.Message)
			assert.Equal(t, tt.wantType, e.Type)
			assert.Equal(t, tt.wantStat, e.Status)
			assert.Equal(t, "qid", e.QueueID)
			assert.Equal(t, 1, e.RetryCount)
			assert.Equal(t, 2, e.ProcessCount)
			assert.Equal(t, time.Duration(0), e.Duration)
			assert.Empty(t, e.ErrorMessage)
			assert.Empty(t, e.ErrorStack)
			assertMillisUTC(t, e.Date)
			assert.False(t, e.Date.Before(before.Truncate(time.Millisecond)))
			assert.False(t, e.Date.After(time.Now()))
			doc := e.Document()
			assert.NotContains(t, doc, "duration")
			assert.NotContains(t, doc, "errorMessage")
			assert.NotContains(t, doc, "errorStack")
		})
	}
}

func TestTruncatedLog(t *testing.T) {
	j := New(nil, nil, DefaultOptions())
	j.Status = Active
	tests := []struct {
		limit  int
		status Status
		data   string
		want   Status
	}{
		{1000, Completed, "Retaining 1000 log entries", Completed},
		{3, Failed, "Retaining 3 log entries", Failed},
		{1, "", "Retaining 1 log entries", Active},
	}
	for _, tt := range tests {
		e := TruncatedLog(j, "qid", tt.limit, tt.status)
		assert.Equal(t, tt.data, e.Data)
		assert.Equal(t, MessageLogsTruncated, e.Message)
		assert.Equal(t, Information, e.Type)
		assert.Equal(t, tt.want, e.Status)
		assert.Equal(t, "qid", e.QueueID)
	}
}

func entries(msgs ...string) []LogEntry {
	log := make([]LogEntry, len(msgs))
	for i, m := range msgs {
		log[i] = LogEntry{Message: m}
	}
	return log
}

func messages(log []LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Message
	}
	return out
}

func TestAppendLog(t *testing.T) {
	e := LogEntry{Message: "e"}
	trunc := LogEntry{Message: "t"}
	tests := []struct {
		name  string
		log   []string
		limit int
		want  []string
	}{
		{"empty", nil, 3, []string{"e"}},
		{"below limit", []string{"e1", "e2"}, 3, []string{"e1", "e2", "e"}},
		// the original: log.length >= limit → append(e).append(trunc).slice(-limit)
		{"at limit", []string{"e1", "e2", "e3"}, 3, []string{"e3", "e", "t"}},
		{"above limit", []string{"e1", "e2", "e3", "e4", "e5"}, 3, []string{"e5", "e", "t"}},
		{"limit 2 at limit", []string{"e1", "e2"}, 2, []string{"e", "t"}},
		{"limit 1", []string{"e1"}, 1, []string{"t"}},
		{"limit 1 empty", nil, 1, []string{"e"}},
		{"limit 4 at limit", []string{"e1", "e2", "e3", "e4"}, 4, []string{"e3", "e4", "e", "t"}},
		{"limit 0 keeps all", []string{"e1", "e2", "e3", "e4", "e5"}, 0, []string{"e1", "e2", "e3", "e4", "e5", "e"}},
		{"negative limit keeps all", []string{"e1", "e2"}, -1, []string{"e1", "e2", "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			log := entries(tt.log...)
			got := AppendLog(log, e, tt.limit, trunc)
			assert.Equal(t, tt.want, messages(got))
			if tt.limit > 0 {
				assert.LessOrEqual(t, len(got), tt.limit)
			}
			// the entries the caller had are untouched
			assert.Equal(t, tt.log, nilIfEmpty(messages(log)))
		})
	}
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}

func TestAppendLogRepeatedKeepsNewest(t *testing.T) {
	var log []LogEntry
	const limit = 5
	for i := range 20 {
		log = AppendLog(log, LogEntry{Message: "e", RetryCount: i}, limit, LogEntry{Message: "t", RetryCount: i})
		require.LessOrEqual(t, len(log), limit)
	}
	last := log[len(log)-1]
	assert.Equal(t, "t", last.Message)
	assert.Equal(t, 19, last.RetryCount)
	assert.Equal(t, "e", log[len(log)-2].Message)
	assert.Equal(t, 19, log[len(log)-2].RetryCount)
}

func TestGetLastLog(t *testing.T) {
	t1 := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	t2 := t1.Add(time.Second)
	t3 := t1.Add(time.Minute)
	tests := []struct {
		name string
		log  []LogEntry
		want string // "" → nil
	}{
		{"nil log", nil, ""},
		{"empty log", []LogEntry{}, ""},
		{"one", []LogEntry{{Date: t1, Message: "a"}}, "a"},
		{"in order", []LogEntry{{Date: t1, Message: "a"}, {Date: t2, Message: "b"}, {Date: t3, Message: "c"}}, "c"},
		{"newest first", []LogEntry{{Date: t3, Message: "c"}, {Date: t2, Message: "b"}, {Date: t1, Message: "a"}}, "c"},
		{"newest in the middle", []LogEntry{{Date: t2, Message: "b"}, {Date: t3, Message: "c"}, {Date: t1, Message: "a"}}, "c"},
		{"equal dates: the later entry", []LogEntry{{Date: t2, Message: "first"}, {Date: t2, Message: "second"}}, "second"},
		{"equal newest after older", []LogEntry{{Date: t3, Message: "x"}, {Date: t1, Message: "a"}, {Date: t3, Message: "y"}}, "y"},
		{"different zones compared as instants", []LogEntry{
			{Date: t3.In(time.FixedZone("+05:00", 5*3600)), Message: "newest"},
			{Date: t2.In(time.FixedZone("-08:00", -8*3600)), Message: "older"},
		}, "newest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &Job{Log: tt.log}
			got := j.GetLastLog()
			if tt.want == "" {
				assert.Nil(t, got)
				return
			}
			require.NotNil(t, got)
			assert.Equal(t, tt.want, got.Message)
		})
	}
}

func TestLogEntryOptionalFields(t *testing.T) {
	base := LogEntry{
		Date: time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC), QueueID: "q", Message: "m",
		Type: Information, Status: Completed,
	}
	tests := []struct {
		name  string
		entry LogEntry
		want  map[string]any // expected optional keys; absent keys must not be present
	}{
		{"none", base, map[string]any{}},
		{"zero duration", base.WithDuration(0), map[string]any{"duration": int64(0)}},
		{"duration in ms", base.WithDuration(1500*time.Millisecond + 999*time.Microsecond), map[string]any{"duration": int64(1500)}},
		{"empty error", base.WithError("", ""), map[string]any{"errorMessage": "", "errorStack": ""}},
		{"error", base.WithError("boom", "Error: boom\n    at x"), map[string]any{"errorMessage": "boom", "errorStack": "Error: boom\n    at x"}},
		{"failure entry", base.WithDuration(0).WithError("", ""), map[string]any{"duration": int64(0), "errorMessage": "", "errorStack": ""}},
		{"fields set directly", func() LogEntry {
			e := base
			e.Duration = 2 * time.Second
			e.ErrorMessage = "m"
			return e
		}(), map[string]any{"duration": int64(2000), "errorMessage": "m"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := tt.entry.Document()
			for _, k := range []string{"duration", "errorMessage", "errorStack"} {
				if w, ok := tt.want[k]; ok {
					assert.Contains(t, doc, k)
					assert.Equal(t, w, doc[k], k)
				} else {
					assert.NotContains(t, doc, k)
				}
			}
		})
	}
	// With* do not modify the receiver
	_ = base.WithDuration(time.Second)
	assert.NotContains(t, base.Document(), "duration")
}
