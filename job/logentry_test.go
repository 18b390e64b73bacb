package job

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

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

func TestLogEntryDocumentLiteral(t *testing.T) {
	e := LogEntry{
		Date:    time.Date(2024, 3, 1, 10, 0, 0, 124999999, time.FixedZone("CET", 3600)),
		QueueID: "q", Message: MessageAdded, Data: map[string]any{}, Type: Information, Status: Waiting,
		RetryCount: 1, ProcessCount: 2,
	}
	assert.Equal(t, map[string]any{
		"date":         time.Date(2024, 3, 1, 9, 0, 0, 124000000, time.UTC),
		"queueId":      "q",
		"message":      "Job added to the queue",
		"data":         map[string]any{},
		"type":         "information",
		"status":       "waiting",
		"retryCount":   1,
		"processCount": 2,
	}, e.Document())
	assert.Equal(t, nil, LogEntry{}.Document()["date"], "a zero date is null")
	assert.Contains(t, LogEntry{}.Document(), "data", "data: null unless left out")
	assert.NotContains(t, LogEntry{}.WithoutData().Document(), "data")
	assert.Equal(t, "x", LogEntry{Data: "x"}.WithoutData().Document()["data"], "data set is written")
}

// nodeEntries are log entries as the Node.js library writes them and rethinkdb-go reads
// them (float64 numbers, times in "+00:00"): job-failed.js, db-review.js (Master),
// queue-cancel.js and job-completed.js.
func nodeEntries() []map[string]any {
	zone := time.FixedZone("+00:00", 0)
	at := func(min, ms int) time.Time { return time.Date(2024, 5, 6, 7, min, 0, ms*1000000, zone) }
	return []map[string]any{
		{
			"date": at(1, 2), "queueId": "node:q1", "message": "Job processing failed",
			"data": map[string]any{"reason": "smtp"}, "type": "warning", "status": "failed",
			"retryCount": float64(0), "processCount": float64(1),
			"duration": float64(0), "errorMessage": "boom", "errorStack": "Error: boom\n    at send (/app/index.js:10:11)",
		},
		{
			"date": at(2, 3), "queueId": "node:q2", "type": "warning", "status": "failed",
			"retryCount": float64(1), "processCount": float64(2),
			"message":    "Master: Job processing failed",
			"dateEnable": at(1, 500),
		},
		{
			"date": at(3, 4), "queueId": "node:q1", "type": "information", "status": "cancelled",
			"retryCount": float64(1), "processCount": json.Number("2"), "message": "no longer needed",
		},
		{
			"date": at(3, 4), "queueId": "node:q1", "message": "completed",
			"data": nil, "type": "information", "status": "completed",
			"retryCount": float64(1), "processCount": float64(2), "duration": float64(1234),
		},
	}
}

func TestLogEntryFromDocumentNode(t *testing.T) {
	in := nodeEntries()
	var got []LogEntry
	for _, m := range in {
		before := maps.Clone(m)
		e, err := LogEntryFromDocument(m)
		require.NoError(t, err)
		assert.Equal(t, before, m, "LogEntryFromDocument must not modify the document")
		got = append(got, e)
	}
	failed, master, cancel, completed := got[0], got[1], got[2], got[3]
	assert.Equal(t, time.Date(2024, 5, 6, 7, 1, 0, 2000000, time.UTC), failed.Date)
	assert.Equal(t, time.UTC, failed.Date.Location())
	assert.Equal(t, "node:q1", failed.QueueID)
	assert.Equal(t, Warning, failed.Type)
	assert.Equal(t, Failed, failed.Status)
	assert.Equal(t, 1, failed.ProcessCount)
	assert.Equal(t, map[string]any{"reason": "smtp"}, failed.Data)
	assert.Equal(t, time.Duration(0), failed.Duration)
	assert.Equal(t, "boom", failed.ErrorMessage)
	assert.Equal(t, "Error: boom\n    at send (/app/index.js:10:11)", failed.ErrorStack)
	assert.Equal(t, "Master: Job processing failed", master.Message)
	assert.Nil(t, master.Data)
	assert.Equal(t, 2, cancel.ProcessCount, "a json.Number")
	assert.Equal(t, 1234*time.Millisecond, completed.Duration)
	assert.Empty(t, completed.ErrorMessage)

	// Written back: every key the Node.js library wrote is there with its value; none is
	// added (the Master and cancel entries have no "data"), none lost (the Master's
	// "dateEnable", the failure's zero "duration").
	for i, e := range got {
		out := e.Document()
		assert.Equal(t, slices.Sorted(maps.Keys(in[i])), slices.Sorted(maps.Keys(out)), "entry %d keys", i)
		for k, v := range in[i] {
			switch w := v.(type) {
			case time.Time:
				assert.True(t, w.Equal(out[k].(time.Time)), "entry %d %s", i, k)
			default:
				f, ok := number(v)
				if ok {
					g, _ := number(out[k])
					assert.Equal(t, f, g, "entry %d %s", i, k)
				} else {
					assert.Equal(t, v, out[k], "entry %d %s", i, k)
				}
			}
		}
		assert.Equal(t, time.UTC, out["date"].(time.Time).Location())
		// And read again, the same entry.
		again, err := LogEntryFromDocument(out)
		require.NoError(t, err)
		assert.Equal(t, e, again, "entry %d", i)
	}
	assert.Equal(t, int64(0), got[0].Document()["duration"])

	// Setting data on an entry read without it writes it.
	master.Data = "note"
	assert.Equal(t, "note", master.Document()["data"])
}

func TestLogEntryFromDocumentInvalid(t *testing.T) {
	for field, v := range map[string]any{
		"date":         "now",
		"queueId":      float64(1),
		"message":      true,
		"type":         float64(2),
		"status":       map[string]any{},
		"retryCount":   "1",
		"processCount": []any{},
		"duration":     "5s",
		"errorMessage": float64(3),
		"errorStack":   false,
	} {
		t.Run(field, func(t *testing.T) {
			m := nodeEntries()[0]
			m[field] = v
			_, err := LogEntryFromDocument(m)
			assert.ErrorIs(t, err, ErrInvalidDocument)
			assert.ErrorIs(t, err, ErrInvalid)
			assert.Contains(t, err.Error(), field)
		})
	}
	e, err := LogEntryFromDocument(nil)
	require.NoError(t, err, "an empty entry has only zero values")
	assert.Equal(t, LogEntry{}.WithoutData(), e)
}
