package rdb

import (
	"fmt"
	"math"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// StateDocument returns the State Document that records a queue's global state ("paused",
// "active" or "reviewed"), changed by queueID now (the server's clock). Queues write it
// with conflict "replace" and follow it through their changefeed.
func StateDocument(queueID, state string) map[string]any {
	return map[string]any{docfmt.ID: job.StateDocumentID, docfmt.QueueID: queueID, "dateChange": r.Now(), "state": state}
}

// A Store is the job.Store a queue attaches to the jobs it hands out (package queue's),
// with the queue's id, which Attach stamps on a job new to the queue.
type Store interface {
	job.Store
	// QueueID is the id of the queue whose jobs the store saves.
	QueueID() string
}

// Attach makes s the store that saves j and stamps j with its queue id, for a job new to
// the queue.
func Attach(j *job.Job, s Store) {
	j.Attach(s)
	j.QueueID = s.QueueID()
}

// Document returns the job as the document the Node.js library stores: durations in
// milliseconds, priority as its number, repeat as false, true or a count, unset dates and
// an empty name as null, times in UTC, Fields at the top level, and no "data" field when
// Data is nil.
func Document(j *job.Job) map[string]any {
	doc := make(map[string]any, 19+len(j.Fields))
	for k, v := range j.Fields {
		doc[k] = v
	}
	log := make([]any, len(j.Log))
	for i, e := range j.Log {
		log[i] = e.Document()
	}
	doc[docfmt.ID] = j.ID
	doc[docfmt.Name] = nullIfEmpty(j.Name)
	doc[docfmt.Priority] = int(j.Priority)
	doc[docfmt.Timeout] = j.Timeout.Milliseconds()
	doc[docfmt.RetryDelay] = j.RetryDelay.Milliseconds()
	doc[docfmt.RepeatDelay] = j.RepeatDelay.Milliseconds()
	doc[docfmt.RetryMax] = j.RetryMax
	doc[docfmt.RetryCount] = j.RetryCount
	doc[docfmt.ProcessCount] = j.ProcessCount
	doc[docfmt.Repeat] = RepeatValue(j.Repeat)
	doc[docfmt.Progress] = j.Progress
	doc[docfmt.Status] = string(j.Status)
	doc[docfmt.Log] = log
	doc[docfmt.DateCreated] = timeValue(j.DateCreated)
	doc[docfmt.DateEnable] = timeValue(j.DateEnable)
	doc[docfmt.DateStarted] = timeValue(j.DateStarted)
	doc[docfmt.DateFinished] = timeValue(j.DateFinished)
	doc[docfmt.QueueID] = j.QueueID
	if j.Data != nil {
		doc[docfmt.Data] = j.Data
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
	return docfmt.Millis(t)
}

// FromDocument reads a job from a document as rethinkdb-go returns it (written by this
// library or by the Node.js one), attached to s. Fields it does not know go to Fields. It
// returns an error wrapping job.ErrInvalidDocument for the State Document and for anything
// whose fields have the wrong types.
func FromDocument(s Store, doc map[string]any) (*job.Job, error) {
	d := decoder{doc: doc}
	j := &job.Job{
		ID:           d.str(docfmt.ID),
		Name:         d.str(docfmt.Name),
		Priority:     d.priority(),
		Timeout:      d.millis(docfmt.Timeout),
		RetryDelay:   d.millis(docfmt.RetryDelay),
		RepeatDelay:  d.millis(docfmt.RepeatDelay),
		RetryMax:     d.int(docfmt.RetryMax),
		RetryCount:   d.int(docfmt.RetryCount),
		ProcessCount: d.int(docfmt.ProcessCount),
		Repeat:       d.repeat(),
		Progress:     d.float(docfmt.Progress),
		Status:       job.Status(d.str(docfmt.Status)),
		DateCreated:  d.time(docfmt.DateCreated),
		DateEnable:   d.time(docfmt.DateEnable),
		DateStarted:  d.time(docfmt.DateStarted),
		DateFinished: d.time(docfmt.DateFinished),
		QueueID:      d.str(docfmt.QueueID),
		Data:         doc[docfmt.Data],
		Log:          d.log(),
	}
	if d.err == nil && (j.ID == "" || j.ID == job.StateDocumentID || j.Status == "") {
		d.err = fmt.Errorf("%w: id %q, status %q", job.ErrInvalidDocument, j.ID, j.Status)
	}
	if d.err != nil {
		return nil, d.err
	}
	for k, v := range doc {
		if !docfmt.Reserved(k) {
			if j.Fields == nil {
				j.Fields = make(map[string]any)
			}
			j.Fields[k] = v
		}
	}
	if s != nil {
		j.Attach(s)
	}
	return j, nil
}

// decoder reads typed fields from a document, keeping the first type error.
type decoder struct {
	doc map[string]any
	err error
}

func (d *decoder) bad(field string, v any) {
	if d.err == nil {
		d.err = fmt.Errorf("%w: field %q has %T %v", job.ErrInvalidDocument, field, v, v)
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
	f, ok := docfmt.Number(v)
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
func (d *decoder) priority() job.Priority {
	if name, ok := d.doc[docfmt.Priority].(string); ok {
		p, err := job.ParsePriority(name)
		if err != nil {
			d.bad(docfmt.Priority, name)
		}
		return p
	}
	return job.Priority(d.int(docfmt.Priority))
}

func (d *decoder) repeat() int {
	switch v := d.doc[docfmt.Repeat].(type) {
	case nil:
		return 0
	case bool:
		if v {
			return job.RepeatForever
		}
		return 0
	default:
		return d.int(docfmt.Repeat)
	}
}

func (d *decoder) log() []job.LogEntry {
	raw, ok := d.doc[docfmt.Log].([]any)
	if !ok {
		if d.doc[docfmt.Log] != nil {
			d.bad(docfmt.Log, d.doc[docfmt.Log])
		}
		return []job.LogEntry{}
	}
	log := make([]job.LogEntry, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			d.bad(docfmt.Log, item)
			continue
		}
		e, err := job.LogEntryFromDocument(m)
		if err != nil {
			if d.err == nil {
				d.err = fmt.Errorf("log entry: %w", err)
			}
			continue
		}
		log = append(log, e)
	}
	return log
}
