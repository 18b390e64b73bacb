package rdb

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

func TestLogMessagesVerbatim(t *testing.T) {
	// enums.js of the original library
	want := map[string]string{
		job.MessageAdded:         "Job added to the queue",
		job.MessageActive:        "Job retrieved and active",
		job.MessageCompleted:     "completed", // job-completed.js passes the status name
		job.MessageFailed:        "Job processing failed",
		job.MessageCancel:        "Job cancelled by Queue process handler",
		job.MessageSeeLogData:    "See the data attached to this log entry",
		job.MessageUpdated:       "Job updated. Old values in log data",
		job.MessagePassBack:      "Job has not been processed to completion and is being placed back into the queue",
		job.MessageProgress:      "Job progress updated. Old value in log data",
		job.MessageReanimated:    "Job has been reanimated",
		job.MessageLogsTruncated: "Job logs have been truncated",
		job.MessageNoErrorStack:  "The error has no stack detail",
		job.MessageNoErrorMsg:    "The error has no message",
	}
	for got, w := range want {
		assert.Equal(t, w, got)
	}
}

func TestNewLog(t *testing.T) {
	j := job.New(nil, job.DefaultOptions())
	j.Status = job.Active
	j.RetryCount = 1
	j.ProcessCount = 2

	tests := []struct {
		name     string
		data     any
		message  string
		typ      job.LogType
		status   job.Status
		wantMsg  string
		wantType job.LogType
		wantStat job.Status
	}{
		{"defaults", nil, "", "", "", job.MessageSeeLogData, job.Information, job.Active},
		{"given", "d", "msg", job.Error, job.Failed, "msg", job.Error, job.Failed},
		{"only type", 1, "", job.Warning, "", job.MessageSeeLogData, job.Warning, job.Active},
		{"only status", nil, "", "", job.Completed, job.MessageSeeLogData, job.Information, job.Completed},
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
	j := job.New(nil, job.DefaultOptions())
	j.Status = job.Active
	tests := []struct {
		limit  int
		status job.Status
		data   string
		want   job.Status
	}{
		{1000, job.Completed, "Retaining 1000 log entries", job.Completed},
		{3, job.Failed, "Retaining 3 log entries", job.Failed},
		{1, "", "Retaining 1 log entries", job.Active},
	}
	for _, tt := range tests {
		e := TruncatedLog(j, "qid", tt.limit, tt.status)
		assert.Equal(t, tt.data, e.Data)
		assert.Equal(t, job.MessageLogsTruncated, e.Message)
		assert.Equal(t, job.Information, e.Type)
		assert.Equal(t, tt.want, e.Status)
		assert.Equal(t, "qid", e.QueueID)
	}
}

func entries(msgs ...string) []job.LogEntry {
	log := make([]job.LogEntry, len(msgs))
	for i, m := range msgs {
		log[i] = job.LogEntry{Message: m}
	}
	return log
}

func messages(log []job.LogEntry) []string {
	out := make([]string, len(log))
	for i, e := range log {
		out[i] = e.Message
	}
	return out
}

func TestAppendLog(t *testing.T) {
	e := job.LogEntry{Message: "e"}
	trunc := job.LogEntry{Message: "t"}
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
	var log []job.LogEntry
	const limit = 5
	for i := range 20 {
		log = AppendLog(log, job.LogEntry{Message: "e", RetryCount: i}, limit, job.LogEntry{Message: "t", RetryCount: i})
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
		log  []job.LogEntry
		want string // "" → nil
	}{
		{"nil log", nil, ""},
		{"empty log", []job.LogEntry{}, ""},
		{"one", []job.LogEntry{{Date: t1, Message: "a"}}, "a"},
		{"in order", []job.LogEntry{{Date: t1, Message: "a"}, {Date: t2, Message: "b"}, {Date: t3, Message: "c"}}, "c"},
		{"newest first", []job.LogEntry{{Date: t3, Message: "c"}, {Date: t2, Message: "b"}, {Date: t1, Message: "a"}}, "c"},
		{"newest in the middle", []job.LogEntry{{Date: t2, Message: "b"}, {Date: t3, Message: "c"}, {Date: t1, Message: "a"}}, "c"},
		{"equal dates: the later entry", []job.LogEntry{{Date: t2, Message: "first"}, {Date: t2, Message: "second"}}, "second"},
		{"equal newest after older", []job.LogEntry{{Date: t3, Message: "x"}, {Date: t1, Message: "a"}, {Date: t3, Message: "y"}}, "y"},
		{"different zones compared as instants", []job.LogEntry{
			{Date: t3.In(time.FixedZone("+05:00", 5*3600)), Message: "newest"},
			{Date: t2.In(time.FixedZone("-08:00", -8*3600)), Message: "older"},
		}, "newest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := &job.Job{Log: tt.log}
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

func assertMillisUTC(t *testing.T, tm time.Time) {
	t.Helper()
	assert.Equal(t, time.UTC, tm.Location())
	assert.Equal(t, 0, tm.Nanosecond()%int(time.Millisecond))
}

func TestRowLogEntryCarriesTheOriginalsFields(t *testing.T) {
	// The constant part of an in-query entry is the entry's Document, without data when
	// asked.
	var none job.Job
	e := NewLog(&none, "q1", nil, job.MessageReanimated, job.Information, "").WithoutData()
	doc := e.Document()
	assert.NotContains(t, doc, "data")
	for _, k := range []string{"date", "queueId", "message", "type", "status", "retryCount", "processCount"} {
		assert.Contains(t, doc, k)
	}
	assert.Contains(t, NewLog(&none, "q1", nil, "", "", "").Document(), "data", "data: null unless left out")
}
