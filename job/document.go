package job

import (
	"encoding/json"
	"fmt"
	"math"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// StateDocumentID is the id of the queue's State Document, the one document in a queue's
// table that is not a job.
const StateDocumentID = "86f6ff5b-0c4e-46ad-9a5f-e90eb19c9b00"

// StateDocument returns the State Document that records a queue's global state ("paused",
// "active" or "reviewed"), changed by queueID now (the server's clock). Queues write it
// with conflict "replace" and follow it through their changefeed.
func StateDocument(queueID, state string) map[string]any {
	return map[string]any{"id": StateDocumentID, "queueId": queueID, "dateChange": r.Now(), "state": state}
}

// The document's field names, as the Node.js library writes them.
const (
	fieldID           = "id"
	fieldName         = "name"
	fieldPriority     = "priority"
	fieldTimeout      = "timeout"
	fieldRetryDelay   = "retryDelay"
	fieldRepeatDelay  = "repeatDelay"
	fieldRetryMax     = "retryMax"
	fieldRetryCount   = "retryCount"
	fieldProcessCount = "processCount"
	fieldRepeat       = "repeat"
	fieldProgress     = "progress"
	fieldStatus       = "status"
	fieldLog          = "log"
	fieldDateCreated  = "dateCreated"
	fieldDateEnable   = "dateEnable"
	fieldDateStarted  = "dateStarted"
	fieldDateFinished = "dateFinished"
	fieldQueueID      = "queueId"
	fieldData         = "data"
)

func reservedField(name string) bool {
	switch name {
	case fieldID, fieldName, fieldPriority, fieldTimeout, fieldRetryDelay, fieldRepeatDelay,
		fieldRetryMax, fieldRetryCount, fieldProcessCount, fieldRepeat, fieldProgress,
		fieldStatus, fieldLog, fieldDateCreated, fieldDateEnable, fieldDateStarted,
		fieldDateFinished, fieldQueueID, fieldData:
		return true
	}
	return false
}

// Document returns the job as the document the Node.js library stores: durations in
// milliseconds, priority as its number, repeat as false, true or a count, unset dates and
// an empty name as null, times in UTC, Fields at the top level, and no "data" field when
// Data is nil.
func (j *Job) Document() map[string]any {
	doc := make(map[string]any, 19+len(j.Fields))
	for k, v := range j.Fields {
		doc[k] = v
	}
	log := make([]any, len(j.Log))
	for i, e := range j.Log {
		log[i] = e.Document()
	}
	doc[fieldID] = j.ID
	doc[fieldName] = nullIfEmpty(j.Name)
	doc[fieldPriority] = int(j.Priority)
	doc[fieldTimeout] = j.Timeout.Milliseconds()
	doc[fieldRetryDelay] = j.RetryDelay.Milliseconds()
	doc[fieldRepeatDelay] = j.RepeatDelay.Milliseconds()
	doc[fieldRetryMax] = j.RetryMax
	doc[fieldRetryCount] = j.RetryCount
	doc[fieldProcessCount] = j.ProcessCount
	doc[fieldRepeat] = RepeatValue(j.Repeat)
	doc[fieldProgress] = j.Progress
	doc[fieldStatus] = string(j.Status)
	doc[fieldLog] = log
	doc[fieldDateCreated] = timeValue(j.DateCreated)
	doc[fieldDateEnable] = timeValue(j.DateEnable)
	doc[fieldDateStarted] = timeValue(j.DateStarted)
	doc[fieldDateFinished] = timeValue(j.DateFinished)
	doc[fieldQueueID] = j.QueueID
	if j.Data != nil {
		doc[fieldData] = j.Data
	}
	return doc
}

// RepeatValue is how a Repeat count is stored: false for 0, true for RepeatForever, else
// the count.
func RepeatValue(n int) any {
	switch {
	case n == 0:
		return false
	case n < 0:
		return true
	}
	return n
}

func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func timeValue(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return toMillis(t)
}

// Document returns the entry as the Node.js library stores it.
func (e LogEntry) Document() map[string]any {
	doc := make(map[string]any, 11+len(e.extra))
	for k, v := range e.extra {
		doc[k] = v
	}
	doc["date"] = timeValue(e.Date)
	doc["queueId"] = e.QueueID
	doc["message"] = e.Message
	if e.Data != nil || e.has&noData == 0 {
		doc["data"] = e.Data
	}
	doc["type"] = string(e.Type)
	doc["status"] = string(e.Status)
	doc["retryCount"] = e.RetryCount
	doc["processCount"] = e.ProcessCount
	if e.has&hasDuration != 0 || e.Duration != 0 {
		doc["duration"] = e.Duration.Milliseconds()
	}
	if e.has&hasErrorMessage != 0 || e.ErrorMessage != "" {
		doc["errorMessage"] = e.ErrorMessage
	}
	if e.has&hasErrorStack != 0 || e.ErrorStack != "" {
		doc["errorStack"] = e.ErrorStack
	}
	return doc
}

// FromDocument reads a job from a document as rethinkdb-go returns it (written by this
// library or by the Node.js one), attached to s. Fields it does not know go to Fields. It
// returns an error wrapping ErrInvalidDocument for the State Document and for anything
// whose fields have the wrong types.
func FromDocument(s Store, doc map[string]any) (*Job, error) {
	d := decoder{doc: doc}
	j := &Job{
		ID:           d.str(fieldID),
		Name:         d.str(fieldName),
		Priority:     d.priority(),
		Timeout:      d.millis(fieldTimeout),
		RetryDelay:   d.millis(fieldRetryDelay),
		RepeatDelay:  d.millis(fieldRepeatDelay),
		RetryMax:     d.int(fieldRetryMax),
		RetryCount:   d.int(fieldRetryCount),
		ProcessCount: d.int(fieldProcessCount),
		Repeat:       d.repeat(),
		Progress:     d.float(fieldProgress),
		Status:       Status(d.str(fieldStatus)),
		DateCreated:  d.time(fieldDateCreated),
		DateEnable:   d.time(fieldDateEnable),
		DateStarted:  d.time(fieldDateStarted),
		DateFinished: d.time(fieldDateFinished),
		QueueID:      d.str(fieldQueueID),
		Data:         doc[fieldData],
		Log:          d.log(),
	}
	if d.err == nil && (j.ID == "" || j.ID == StateDocumentID || j.Status == "") {
		d.err = fmt.Errorf("%w: id %q, status %q", ErrInvalidDocument, j.ID, j.Status)
	}
	if d.err != nil {
		return nil, d.err
	}
	for k, v := range doc {
		if !reservedField(k) {
			if j.Fields == nil {
				j.Fields = make(map[string]any)
			}
			j.Fields[k] = v
		}
	}
	j.store = s
	return j, nil
}

// decoder reads typed fields from a document, keeping the first type error.
type decoder struct {
	doc map[string]any
	err error
}

func (d *decoder) bad(field string, v any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: field %q has %T %v", ErrInvalidDocument, field, v, v)
	}
}

func (d *decoder) str(field string) string {
	switch v := d.doc[field].(type) {
	case nil:
		return ""
	case string:
		return v
	default:
		d.bad(field, v)
		return ""
	}
}

func (d *decoder) float(field string) float64 {
	v := d.doc[field]
	if v == nil {
		return 0
	}
	f, ok := number(v)
	if !ok {
		d.bad(field, v)
	}
	return f
}

func (d *decoder) int(field string) int {
	return int(math.Round(d.float(field)))
}

func (d *decoder) millis(field string) time.Duration {
	return time.Duration(math.Round(d.float(field) * float64(time.Millisecond)))
}

func (d *decoder) time(field string) time.Time {
	switch v := d.doc[field].(type) {
	case nil:
		return time.Time{}
	case time.Time:
		return v.UTC()
	default:
		d.bad(field, v)
		return time.Time{}
	}
}

// The Node.js library keeps a job's priority as its name in memory and accepts a name in a
// document, so a name is read too.
func (d *decoder) priority() Priority {
	if name, ok := d.doc[fieldPriority].(string); ok {
		p, err := ParsePriority(name)
		if err != nil {
			d.bad(fieldPriority, name)
		}
		return p
	}
	return Priority(d.int(fieldPriority))
}

func (d *decoder) repeat() int {
	switch v := d.doc[fieldRepeat].(type) {
	case nil:
		return 0
	case bool:
		if v {
			return RepeatForever
		}
		return 0
	default:
		return d.int(fieldRepeat)
	}
}

func (d *decoder) log() []LogEntry {
	raw, ok := d.doc[fieldLog].([]any)
	if !ok {
		if d.doc[fieldLog] != nil {
			d.bad(fieldLog, d.doc[fieldLog])
		}
		return []LogEntry{}
	}
	log := make([]LogEntry, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			d.bad(fieldLog, item)
			continue
		}
		log = append(log, logEntryFrom(d, m))
	}
	return log
}

func logEntryFrom(parent *decoder, m map[string]any) LogEntry {
	d := decoder{doc: m}
	e := LogEntry{
		Date:         d.time("date"),
		QueueID:      d.str("queueId"),
		Message:      d.str("message"),
		Data:         m["data"],
		Type:         LogType(d.str("type")),
		Status:       Status(d.str("status")),
		RetryCount:   d.int("retryCount"),
		ProcessCount: d.int("processCount"),
		Duration:     d.millis("duration"),
		ErrorMessage: d.str("errorMessage"),
		ErrorStack:   d.str("errorStack"),
	}
	if _, ok := m["data"]; !ok {
		e.has |= noData
	}
	for k, v := range m {
		switch k {
		case "date", "queueId", "message", "data", "type", "status", "retryCount", "processCount":
		case "duration":
			e.has |= hasDuration
		case "errorMessage":
			e.has |= hasErrorMessage
		case "errorStack":
			e.has |= hasErrorStack
		default:
			if e.extra == nil {
				e.extra = make(map[string]any)
			}
			e.extra[k] = v
		}
	}
	if d.err != nil && parent.err == nil {
		parent.err = fmt.Errorf("log entry: %w", d.err)
	}
	return e
}

// number reads any of the forms a number takes after decoding: float64 by default,
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
