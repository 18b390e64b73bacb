package rdb

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

const (
	docTestID      = "5127d082-fe7e-4e88-b1de-7093029695c3"
	docTestQueueID = "host:rjqJobQueue:rjqJobList:1234:8d2a4f51-8c1b-4c55-9a0e-1f5c1e9b8a77"
)

// dbZone is the location rethinkdb-go gives the times it reads from a document written
// with UTC times (by this package or by the Node.js library).
var dbZone = time.FixedZone("+00:00", 0)

// fromDB returns v as rethinkdb-go returns it after a write and a read: every number a
// float64, times in a "+00:00" fixed zone, maps and slices as map[string]any and []any.
func fromDB(v any) any {
	switch v := v.(type) {
	case nil, string, bool, float64:
		return v
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case time.Time:
		return v.In(dbZone)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = fromDB(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = fromDB(e)
		}
		return s
	default:
		// anything else (structs, typed slices) goes through JSON
		b, err := json.Marshal(v)
		if err != nil {
			panic(err)
		}
		var out any
		if err := json.Unmarshal(b, &out); err != nil {
			panic(err)
		}
		return out
	}
}

// canon returns a comparable form of a document: numbers as float64, times as tagged
// UTC strings (so that two times are equal when they are the same instant).
func canon(v any) any {
	switch v := v.(type) {
	case int:
		return float64(v)
	case int64:
		return float64(v)
	case int32:
		return float64(v)
	case json.Number:
		f, err := v.Float64()
		if err != nil {
			panic(err)
		}
		return f
	case time.Time:
		return "time:" + v.UTC().Format(time.RFC3339Nano)
	case map[string]any:
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = canon(e)
		}
		return m
	case []any:
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = canon(e)
		}
		return s
	}
	return v
}

// assertWritable checks that a document holds only values that are written as the
// Node.js library writes them: UTC times truncated to the ms, no Go-specific types.
func assertWritable(t *testing.T, path string, v any) {
	t.Helper()
	switch v := v.(type) {
	case nil, string, bool, float64, int, int64:
	case time.Time:
		// Job and log fields are written in UTC; payload and extra values are written back
		// as they were read (a "+00:00" zone then): both are stored as "+00:00".
		_, offset := v.Zone()
		assert.Equal(t, 0, offset, "%s: time not at offset 0", path)
		assert.Equal(t, 0, v.Nanosecond()%int(time.Millisecond), "%s: time finer than ms", path)
	case map[string]any:
		for k, e := range v {
			assertWritable(t, path+"."+k, e)
		}
	case []any:
		for i, e := range v {
			assertWritable(t, fmt.Sprintf("%s[%d]", path, i), e)
		}
	default:
		t.Errorf("%s: unexpected %T in a document", path, v)
	}
}

func assertLogEntriesEqual(t *testing.T, want, got []job.LogEntry) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		w, g := want[i], got[i]
		assert.True(t, w.Date.Equal(g.Date), "log[%d].Date: want %v got %v", i, w.Date, g.Date)
		assert.Equal(t, w.QueueID, g.QueueID, "log[%d].QueueID", i)
		assert.Equal(t, w.Message, g.Message, "log[%d].Message", i)
		assert.Equal(t, canon(w.Data), canon(g.Data), "log[%d].Data", i)
		assert.Equal(t, w.Type, g.Type, "log[%d].Type", i)
		assert.Equal(t, w.Status, g.Status, "log[%d].Status", i)
		assert.Equal(t, w.RetryCount, g.RetryCount, "log[%d].RetryCount", i)
		assert.Equal(t, w.ProcessCount, g.ProcessCount, "log[%d].ProcessCount", i)
		assert.Equal(t, w.Duration, g.Duration, "log[%d].Duration", i)
		assert.Equal(t, w.ErrorMessage, g.ErrorMessage, "log[%d].ErrorMessage", i)
		assert.Equal(t, w.ErrorStack, g.ErrorStack, "log[%d].ErrorStack", i)
		assert.Equal(t, canon(w.Document()), canon(g.Document()), "log[%d].Document()", i)
	}
}

func assertJobsEqual(t *testing.T, want, got *job.Job) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, want.ID, got.ID, "ID")
	assert.Equal(t, want.Name, got.Name, "Name")
	assert.Equal(t, want.Priority, got.Priority, "Priority")
	assert.Equal(t, want.Timeout, got.Timeout, "Timeout")
	assert.Equal(t, want.RetryDelay, got.RetryDelay, "RetryDelay")
	assert.Equal(t, want.RepeatDelay, got.RepeatDelay, "RepeatDelay")
	assert.Equal(t, want.RetryMax, got.RetryMax, "RetryMax")
	assert.Equal(t, want.RetryCount, got.RetryCount, "RetryCount")
	assert.Equal(t, want.ProcessCount, got.ProcessCount, "ProcessCount")
	assert.Equal(t, want.Repeat, got.Repeat, "Repeat")
	assert.Equal(t, want.Progress, got.Progress, "Progress")
	assert.Equal(t, want.Status, got.Status, "Status")
	assert.True(t, want.DateCreated.Equal(got.DateCreated), "DateCreated: want %v got %v", want.DateCreated, got.DateCreated)
	assert.True(t, want.DateEnable.Equal(got.DateEnable), "DateEnable: want %v got %v", want.DateEnable, got.DateEnable)
	assert.True(t, want.DateStarted.Equal(got.DateStarted), "DateStarted: want %v got %v", want.DateStarted, got.DateStarted)
	assert.True(t, want.DateFinished.Equal(got.DateFinished), "DateFinished: want %v got %v", want.DateFinished, got.DateFinished)
	assert.Equal(t, want.QueueID, got.QueueID, "QueueID")
	assert.Equal(t, canon(want.Data), canon(got.Data), "Data")
	assert.Equal(t, canon(map[string]any(want.Fields)), canon(map[string]any(got.Fields)), "Fields")
	assertLogEntriesEqual(t, want.Log, got.Log)
	assert.NoError(t, got.Err())
}

// sampleJob is a job with every field set to a known value.
func sampleJob() *job.Job {
	return &job.Job{
		ID:           docTestID,
		Name:         "report",
		Priority:     job.Normal,
		Timeout:      5 * time.Minute,
		RetryDelay:   10*time.Minute + 700*time.Microsecond, // sub-ms part is dropped
		RepeatDelay:  1500 * time.Millisecond,
		RetryMax:     3,
		RetryCount:   1,
		ProcessCount: 2,
		Repeat:       0,
		Progress:     25.5,
		Status:       job.Active,
		Log: []job.LogEntry{{
			Date:         time.Date(2024, 3, 1, 9, 0, 0, 124000000, time.UTC),
			QueueID:      docTestQueueID,
			Message:      job.MessageAdded,
			Data:         map[string]any{},
			Type:         job.Information,
			Status:       job.Waiting,
			RetryCount:   0,
			ProcessCount: 0,
		}},
		DateCreated: time.Date(2024, 3, 1, 10, 0, 0, 123456789, time.FixedZone("CET", 3600)),
		DateEnable:  time.Date(2024, 3, 1, 9, 5, 0, 0, time.UTC),
		DateStarted: time.Date(2024, 3, 1, 9, 6, 0, 500000000, time.UTC),
		QueueID:     docTestQueueID,
		Data:        "x",
		Fields:      map[string]any{"extra": 1},
	}
}

// TestDocumentLiteral: the document is exactly what the Node.js library stores.
func TestDocumentLiteral(t *testing.T) {
	j := sampleJob()
	want := map[string]any{
		"id":           docTestID,
		"name":         "report",
		"priority":     40,
		"timeout":      int64(300000),
		"retryDelay":   int64(600000),
		"repeatDelay":  int64(1500),
		"retryMax":     3,
		"retryCount":   1,
		"processCount": 2,
		"repeat":       false,
		"progress":     25.5,
		"status":       "active",
		"log": []any{map[string]any{
			"date":         time.Date(2024, 3, 1, 9, 0, 0, 124000000, time.UTC),
			"queueId":      docTestQueueID,
			"message":      "Job added to the queue",
			"data":         map[string]any{},
			"type":         "information",
			"status":       "waiting",
			"retryCount":   0,
			"processCount": 0,
		}},
		"dateCreated":  time.Date(2024, 3, 1, 9, 0, 0, 123000000, time.UTC),
		"dateEnable":   time.Date(2024, 3, 1, 9, 5, 0, 0, time.UTC),
		"dateStarted":  time.Date(2024, 3, 1, 9, 6, 0, 500000000, time.UTC),
		"dateFinished": nil,
		"queueId":      docTestQueueID,
		"data":         "x",
		"extra":        1.0, // stored as a number: float64, as it reads back
	}
	doc := j.Document()
	assert.Equal(t, want, doc)
	assertWritable(t, "doc", doc)
	// the exact key set, independent of value comparison
	assert.Equal(t, slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(doc)))
	assert.Contains(t, doc, "dateFinished", "unset dates are stored as null, not left out")
}

func TestDocumentVariants(t *testing.T) {
	finished := time.Date(2024, 3, 1, 9, 7, 0, 0, time.UTC)
	tests := []struct {
		name   string
		modify func(*job.Job)
		key    string
		want   any
		absent bool
	}{
		{"repeat 0 is false", func(j *job.Job) { j.Repeat = 0 }, "repeat", false, false},
		{"repeat forever is true", func(j *job.Job) { j.Repeat = job.RepeatForever }, "repeat", true, false},
		{"repeat n is n", func(j *job.Job) { j.Repeat = 3 }, "repeat", 3, false},
		{"repeat 1 is 1, not true", func(j *job.Job) { j.Repeat = 1 }, "repeat", 1, false},
		{"empty name is null", func(j *job.Job) { j.Name = "" }, "name", nil, false},
		{"nil data is left out", func(j *job.Job) { j.Data = nil }, "data", nil, true},
		{"zero data kept", func(j *job.Job) { j.Data = 0 }, "data", 0.0, false},
		{"empty string data kept", func(j *job.Job) { j.Data = "" }, "data", "", false},
		{"map data", func(j *job.Job) { j.Data = map[string]any{"a": 1} }, "data", map[string]any{"a": 1.0}, false},
		{"struct data by json names", func(j *job.Job) {
			j.Data = struct {
				To   string    `json:"to"`
				When time.Time `json:"when"`
			}{To: "a"}
		}, "data", map[string]any{"to": "a", "when": nil}, false},
		{"zero dateStarted is null", func(j *job.Job) { j.DateStarted = time.Time{} }, "dateStarted", nil, false},
		{"dateFinished", func(j *job.Job) { j.DateFinished = finished }, "dateFinished", finished, false},
		{"priority highest", func(j *job.Job) { j.Priority = job.Highest }, "priority", 10, false},
		{"priority lowest", func(j *job.Job) { j.Priority = job.Lowest }, "priority", 60, false},
		{"Fields cannot override a job field", func(j *job.Job) { j.Fields = map[string]any{"status": "x"} }, "status", "active", false},
		{"Fields cannot override data", func(j *job.Job) { j.Fields = map[string]any{"data": "y"} }, "data", "x", false},
		{"no log is an empty array", func(j *job.Job) { j.Log = nil }, "log", []any{}, false},
		{"progress", func(j *job.Job) { j.Progress = 100 }, "progress", 100.0, false},
		{"zero durations", func(j *job.Job) { j.Timeout = 0 }, "timeout", int64(0), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			j := sampleJob()
			tt.modify(j)
			doc := j.Document()
			if tt.absent {
				assert.NotContains(t, doc, tt.key)
				return
			}
			require.Contains(t, doc, tt.key)
			assert.Equal(t, tt.want, doc[tt.key])
			assertWritable(t, "doc", doc)
		})
	}
}

func TestRepeatValue(t *testing.T) {
	assert.Equal(t, false, RepeatValue(0))
	assert.Equal(t, true, RepeatValue(job.RepeatForever))
	assert.Equal(t, 5, RepeatValue(5))
}

// roundTripJobs are jobs whose every field survives Document → FromDocument (durations
// in whole ms, times truncated to ms, UTC).
func roundTripJobs() map[string]*job.Job {
	base := func() *job.Job {
		j := sampleJob()
		j.RetryDelay = 10 * time.Minute
		j.DateCreated = time.Date(2024, 3, 1, 9, 0, 0, 123000000, time.UTC)
		return j
	}
	t0 := time.Date(2024, 3, 1, 9, 10, 0, 0, time.UTC)
	out := map[string]*job.Job{"sample": base()}

	j := base()
	j.Repeat = job.RepeatForever
	j.Name = ""
	j.Data = nil
	j.Fields = nil
	j.Log = []job.LogEntry{}
	j.DateStarted = time.Time{}
	j.Status = job.Waiting
	j.Progress = 0
	out["minimal"] = j

	j = base()
	j.Repeat = 7
	j.Status = job.Terminated
	j.Priority = job.Highest
	j.DateFinished = t0
	j.Data = map[string]any{"to": "a@b.c", "n": 3, "nested": map[string]any{"when": t0, "list": []any{1, "two", true, nil}}}
	j.Fields = map[string]any{"extra": 1, "customer": map[string]any{"id": "c1"}, "flag": false, "nothing": nil}
	j.Log = append(j.Log,
		NewLog(j, docTestQueueID, map[string]any{"k": "v"}, job.MessageActive, job.Information, job.Active),
		job.LogEntry{Date: t0, QueueID: docTestQueueID, Message: job.MessageCompleted, Data: "done", Type: job.Information,
			Status: job.Completed, RetryCount: 1, ProcessCount: 2}.WithDuration(0),
		job.LogEntry{Date: t0, QueueID: docTestQueueID, Message: job.MessageFailed, Data: nil, Type: job.Error,
			Status: job.Failed, RetryCount: 1, ProcessCount: 2}.WithDuration(2500*time.Millisecond).WithError("", ""),
		job.LogEntry{Date: t0, QueueID: docTestQueueID, Message: job.MessageFailed, Data: nil, Type: job.Error,
			Status: job.Terminated, RetryCount: 3, ProcessCount: 4}.WithDuration(time.Second).WithError("boom", "Error: boom\n    at f"),
	)
	out["full"] = j
	return out
}

func TestDocumentRoundTrip(t *testing.T) {
	for name, j := range roundTripJobs() {
		t.Run(name, func(t *testing.T) {
			doc := j.Document()
			require.NoError(t, j.Validate())

			// 1. Straight from the Go document.
			got, err := FromDocument(nil, doc)
			require.NoError(t, err)
			assertJobsEqual(t, j, got)
			assert.Equal(t, doc, got.Document())

			// 2. As a real read returns it: float64 numbers, times in "+00:00".
			dbDoc := fromDB(doc).(map[string]any)
			before := canon(dbDoc)
			got, err = FromDocument(nil, dbDoc)
			require.NoError(t, err)
			assert.Equal(t, before, canon(dbDoc), "FromDocument must not modify the document")
			assertJobsEqual(t, j, got)
			require.NoError(t, got.Validate())

			// Written back: the same document, with the same keys.
			doc2 := got.Document()
			assert.Equal(t, canon(doc), canon(doc2))
			assert.Equal(t, slices.Sorted(maps.Keys(doc)), slices.Sorted(maps.Keys(doc2)))
			assertWritable(t, "doc2", doc2)
			// Job fields are written in the Go types, whatever was read.
			assert.IsType(t, 0, doc2["priority"])
			assert.IsType(t, int64(0), doc2["timeout"])
			assert.IsType(t, 0, doc2["retryCount"])

			// And a second read gives the same job again.
			got2, err := FromDocument(nil, fromDB(doc2).(map[string]any))
			require.NoError(t, err)
			assertJobsEqual(t, got, got2)
		})
	}
}

func TestFromDocumentAttachesStore(t *testing.T) {
	s := &progressStore{id: "other-queue"}
	doc := fromDB(sampleJob().Document()).(map[string]any)
	j, err := FromDocument(s, doc)
	require.NoError(t, err)
	assert.Equal(t, docTestQueueID, j.QueueID, "the stored queueId is kept")
	require.NoError(t, j.UpdateProgress(t.Context(), 60))
	assert.Equal(t, []float64{60}, s.progress)
}

// nodeDocument is a job as the Node.js library writes it and rethinkdb-go reads it:
// every number a float64, priority as its number, repeat true, and log entries as the
// original's job-failed.js, db-review.js (Master) and queue-cancel-js write them.
func nodeDocument() map[string]any {
	at := func(min, ms int) time.Time { return time.Date(2024, 5, 6, 7, min, 0, ms*1000000, dbZone) }
	return map[string]any{
		"id":           "9b2e3a0c-5d4f-4e6a-8b7c-1d2e3f4a5b6c",
		"name":         "send-mail",
		"priority":     float64(40),
		"timeout":      float64(300000),
		"retryDelay":   float64(600000),
		"repeatDelay":  float64(300000),
		"retryMax":     float64(3),
		"retryCount":   float64(1),
		"processCount": float64(2),
		"repeat":       true,
		"progress":     float64(0),
		"status":       "cancelled",
		"log": []any{
			map[string]any{
				"date": at(0, 1), "queueId": "node:rjqJobQueue:rjqJobList:99:q1", "message": "Job added to the queue",
				"data": map[string]any{}, "type": "information", "status": "waiting",
				"retryCount": float64(0), "processCount": float64(0),
			},
			map[string]any{
				"date": at(1, 2), "queueId": "node:rjqJobQueue:rjqJobList:99:q1", "message": "Job processing failed",
				"data": map[string]any{"reason": "smtp"}, "type": "warning", "status": "failed",
				"retryCount": float64(0), "processCount": float64(1),
				"duration": float64(0), "errorMessage": "boom", "errorStack": "Error: boom\n    at send (/app/index.js:10:11)",
			},
			map[string]any{
				"date": at(2, 3), "queueId": "node:rjqJobQueue:rjqJobList:99:q2", "type": "warning", "status": "failed",
				"retryCount": float64(1), "processCount": float64(2),
				"message":    "Master: Job processing failed",
				"dateEnable": at(1, 500),
			},
			map[string]any{
				"date": at(3, 4), "queueId": "node:rjqJobQueue:rjqJobList:99:q1", "type": "information", "status": "cancelled",
				"retryCount": float64(1), "processCount": float64(2), "message": "no longer needed",
			},
			map[string]any{
				"date": at(3, 4), "queueId": "node:rjqJobQueue:rjqJobList:99:q1", "message": "completed",
				"data": nil, "type": "information", "status": "completed",
				"retryCount": float64(1), "processCount": float64(2), "duration": float64(1234),
			},
		},
		"dateCreated":  at(0, 0),
		"dateEnable":   at(2, 0),
		"dateStarted":  at(1, 0),
		"dateFinished": at(3, 4),
		"queueId":      "node:rjqJobQueue:rjqJobList:99:q1",
		"data":         map[string]any{"to": "a@b.c", "attempts": float64(2), "tags": []any{"x"}},
		"customer":     "acme",
		"meta":         map[string]any{"source": "web", "n": float64(1)},
	}
}

func TestFromDocumentNode(t *testing.T) {
	doc := nodeDocument()
	j, err := FromDocument(nil, doc)
	require.NoError(t, err)
	require.NoError(t, j.Validate())

	at := func(min, ms int) time.Time { return time.Date(2024, 5, 6, 7, min, 0, ms*1000000, time.UTC) }
	assert.Equal(t, "9b2e3a0c-5d4f-4e6a-8b7c-1d2e3f4a5b6c", j.ID)
	assert.Equal(t, "send-mail", j.Name)
	assert.Equal(t, job.Normal, j.Priority)
	assert.Equal(t, 5*time.Minute, j.Timeout)
	assert.Equal(t, 10*time.Minute, j.RetryDelay)
	assert.Equal(t, 5*time.Minute, j.RepeatDelay)
	assert.Equal(t, 3, j.RetryMax)
	assert.Equal(t, 1, j.RetryCount)
	assert.Equal(t, 2, j.ProcessCount)
	assert.Equal(t, job.RepeatForever, j.Repeat)
	assert.Equal(t, 0.0, j.Progress)
	assert.Equal(t, job.Cancelled, j.Status)
	assert.Equal(t, at(0, 0), j.DateCreated)
	assert.Equal(t, at(2, 0), j.DateEnable)
	assert.Equal(t, at(1, 0), j.DateStarted)
	assert.Equal(t, at(3, 4), j.DateFinished)
	for _, tm := range []time.Time{j.DateCreated, j.DateEnable, j.DateStarted, j.DateFinished} {
		assert.Equal(t, time.UTC, tm.Location())
	}
	assert.Equal(t, "node:rjqJobQueue:rjqJobList:99:q1", j.QueueID)
	assert.Equal(t, map[string]any{"to": "a@b.c", "attempts": float64(2), "tags": []any{"x"}}, j.Data)
	assert.Equal(t, map[string]any{"customer": "acme", "meta": map[string]any{"source": "web", "n": float64(1)}}, j.Fields)

	require.Len(t, j.Log, 5)
	added, failed, master, cancel, completed := j.Log[0], j.Log[1], j.Log[2], j.Log[3], j.Log[4]
	assert.Equal(t, job.MessageAdded, added.Message)
	assert.Equal(t, map[string]any{}, added.Data)
	assert.Equal(t, job.Waiting, added.Status)

	assert.Equal(t, job.Warning, failed.Type)
	assert.Equal(t, job.Failed, failed.Status)
	assert.Equal(t, 1, failed.ProcessCount)
	assert.Equal(t, time.Duration(0), failed.Duration)
	assert.Equal(t, "boom", failed.ErrorMessage)
	assert.Equal(t, "Error: boom\n    at send (/app/index.js:10:11)", failed.ErrorStack)

	assert.Equal(t, "Master: Job processing failed", master.Message)
	assert.Equal(t, "node:rjqJobQueue:rjqJobList:99:q2", master.QueueID)
	assert.Nil(t, master.Data)
	assert.Equal(t, at(2, 3), master.Date)

	assert.Equal(t, "no longer needed", cancel.Message)
	assert.Equal(t, job.Cancelled, cancel.Status)

	assert.Equal(t, 1234*time.Millisecond, completed.Duration)
	assert.Empty(t, completed.ErrorMessage)

	last := j.GetLastLog()
	require.NotNil(t, last)
	assert.Equal(t, job.MessageCompleted, last.Message, "equal dates: the later entry")

	// Written back: every key the Node.js library wrote is there, with the same values;
	// no key is added (the Master and cancel entries have no "data"), none is lost (the
	// Master's "dateEnable", the zero "duration" of the failure entry).
	out := j.Document()
	assert.Equal(t, canon(doc), canon(out))
	assert.Equal(t, slices.Sorted(maps.Keys(doc)), slices.Sorted(maps.Keys(out)))
	outLog := out["log"].([]any)
	inLog := doc["log"].([]any)
	require.Len(t, outLog, len(inLog))
	for i := range inLog {
		assert.Equal(t,
			slices.Sorted(maps.Keys(inLog[i].(map[string]any))),
			slices.Sorted(maps.Keys(outLog[i].(map[string]any))), "log[%d] keys", i)
	}
	assert.Equal(t, int64(0), outLog[1].(map[string]any)["duration"])
	dateEnable, ok := outLog[2].(map[string]any)["dateEnable"].(time.Time)
	require.True(t, ok)
	assert.True(t, at(1, 500).Equal(dateEnable))
	assertWritable(t, "out", out)
	for _, k := range []string{"dateCreated", "dateEnable", "dateStarted", "dateFinished"} {
		assert.Equal(t, time.UTC, out[k].(time.Time).Location(), k)
	}
	for i, e := range outLog {
		assert.Equal(t, time.UTC, e.(map[string]any)["date"].(time.Time).Location(), "log[%d].date", i)
	}

	// Setting data on an entry read without it writes it.
	j.Log[2].Data = "note"
	assert.Equal(t, "note", j.Document()["log"].([]any)[2].(map[string]any)["data"])
}

func TestFromDocumentPriorityName(t *testing.T) {
	tests := []struct {
		in   any
		want job.Priority
	}{
		{"high", job.High},
		{"HIGH", job.High},
		{"lowest", job.Lowest},
		{"normal", job.Normal},
		{float64(20), job.High},
		{json.Number("10"), job.Highest},
		{60, job.Lowest},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.in), func(t *testing.T) {
			doc := fromDB(sampleJob().Document()).(map[string]any)
			doc["priority"] = tt.in
			j, err := FromDocument(nil, doc)
			require.NoError(t, err)
			assert.Equal(t, tt.want, j.Priority)
			assert.Equal(t, int(tt.want), j.Document()["priority"], "written back as a number")
		})
	}
}

func TestFromDocumentJSONNumber(t *testing.T) {
	doc := fromDB(sampleJob().Document()).(map[string]any)
	doc["priority"] = json.Number("30")
	doc["timeout"] = json.Number("90000")
	doc["retryDelay"] = json.Number("1500.4")
	doc["repeatDelay"] = json.Number("0")
	doc["retryMax"] = json.Number("4")
	doc["retryCount"] = json.Number("2")
	doc["processCount"] = json.Number("3")
	doc["repeat"] = json.Number("6")
	doc["progress"] = json.Number("12.5")
	entry := doc["log"].([]any)[0].(map[string]any)
	entry["retryCount"] = json.Number("1")
	entry["processCount"] = json.Number("2")
	entry["duration"] = json.Number("250")

	j, err := FromDocument(nil, doc)
	require.NoError(t, err)
	assert.Equal(t, job.Medium, j.Priority)
	assert.Equal(t, 90*time.Second, j.Timeout)
	assert.Equal(t, 1500*time.Millisecond+400*time.Microsecond, j.RetryDelay)
	assert.Equal(t, time.Duration(0), j.RepeatDelay)
	assert.Equal(t, 4, j.RetryMax)
	assert.Equal(t, 2, j.RetryCount)
	assert.Equal(t, 3, j.ProcessCount)
	assert.Equal(t, 6, j.Repeat)
	assert.Equal(t, 12.5, j.Progress)
	require.Len(t, j.Log, 1)
	assert.Equal(t, 1, j.Log[0].RetryCount)
	assert.Equal(t, 2, j.Log[0].ProcessCount)
	assert.Equal(t, 250*time.Millisecond, j.Log[0].Duration)

	doc["timeout"] = json.Number("abc")
	_, err = FromDocument(nil, doc)
	assert.ErrorIs(t, err, job.ErrInvalidDocument)
}

func TestFromDocumentInvalid(t *testing.T) {
	tests := []struct {
		name   string
		modify func(doc map[string]any)
	}{
		{"status a number", func(d map[string]any) { d["status"] = float64(5) }},
		{"status missing", func(d map[string]any) { delete(d, "status") }},
		{"id missing", func(d map[string]any) { delete(d, "id") }},
		{"id a number", func(d map[string]any) { d["id"] = float64(5) }},
		{"name a number", func(d map[string]any) { d["name"] = float64(3) }},
		{"dateCreated a string", func(d map[string]any) { d["dateCreated"] = "yesterday" }},
		{"dateEnable a number", func(d map[string]any) { d["dateEnable"] = float64(1700000000) }},
		{"log not an array", func(d map[string]any) { d["log"] = "not an array" }},
		{"log a map", func(d map[string]any) { d["log"] = map[string]any{} }},
		{"log entry a string", func(d map[string]any) { d["log"] = []any{"entry"} }},
		{"log entry date a string", func(d map[string]any) {
			d["log"] = []any{map[string]any{"date": "now", "message": "m"}}
		}},
		{"log entry retryCount a string", func(d map[string]any) {
			d["log"] = []any{map[string]any{"date": time.Now(), "retryCount": "1"}}
		}},
		{"priority unknown name", func(d map[string]any) { d["priority"] = "urgent" }},
		{"priority a bool", func(d map[string]any) { d["priority"] = true }},
		{"timeout a string", func(d map[string]any) { d["timeout"] = "5m" }},
		{"repeat a string", func(d map[string]any) { d["repeat"] = "yes" }},
		{"progress a string", func(d map[string]any) { d["progress"] = "half" }},
		{"queueId a number", func(d map[string]any) { d["queueId"] = float64(1) }},
		{"retryMax a map", func(d map[string]any) { d["retryMax"] = map[string]any{} }},
		{"State Document", func(d map[string]any) {
			clear(d)
			d["id"] = job.StateDocumentID
			d["queueId"] = "host:db:q:1:x"
			d["dateChange"] = time.Now().In(dbZone)
			d["state"] = "active"
		}},
		{"State Document with a status", func(d map[string]any) { d["id"] = job.StateDocumentID }},
		{"empty", func(d map[string]any) { clear(d) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := fromDB(sampleJob().Document()).(map[string]any)
			tt.modify(doc)
			j, err := FromDocument(nil, doc)
			require.Error(t, err)
			assert.Nil(t, j)
			assert.ErrorIs(t, err, job.ErrInvalidDocument)
			assert.ErrorIs(t, err, job.ErrInvalid)
		})
	}
	// nil document
	j, err := FromDocument(nil, nil)
	assert.Nil(t, j)
	assert.ErrorIs(t, err, job.ErrInvalidDocument)
}

func TestStateDocumentID(t *testing.T) {
	assert.Equal(t, "86f6ff5b-0c4e-46ad-9a5f-e90eb19c9b00", job.StateDocumentID)
}

func TestReservedFields(t *testing.T) {
	// Every key Document writes for a job is reserved; nothing else is.
	doc := sampleJob().Document()
	delete(doc, "extra")
	for k := range doc {
		assert.True(t, docfmt.Reserved(k), k)
	}
	assert.Len(t, doc, 19)
	for _, k := range []string{"extra", "Status", "q", "dateChange", "state", ""} {
		assert.False(t, docfmt.Reserved(k), k)
	}
}

// progressStore records the progress a job saves through it.
type progressStore struct {
	id       string
	progress []float64
}

func (s *progressStore) QueueID() string                         { return s.id }
func (s *progressStore) SaveJob(context.Context, *job.Job) error { return nil }
func (s *progressStore) SaveProgress(_ context.Context, _ *job.Job, p float64) error {
	s.progress = append(s.progress, p)
	return nil
}
func (s *progressStore) SaveLog(context.Context, *job.Job, any, string, job.LogType, job.Status) error {
	return nil
}
