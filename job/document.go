package job

import "fmt"

// Document returns the job as the document the Node.js library stores: durations in
// milliseconds, priority as its number, repeat as false, true or a count, unset dates and
// an empty name as null, times in UTC, Fields at the top level, and no "data" field when
// Data is nil. Data and Fields are stored by encoding/json's names (see "Payloads" in the
// package documentation). The storage layer writes it; tools that write a queue's table directly can
// too.
func (j *Job) Document() map[string]any {
	doc := make(map[string]any, 19+len(j.Fields))
	for k, v := range j.Fields {
		doc[k] = stored(v)
	}
	log := make([]any, len(j.Log))
	for i, e := range j.Log {
		log[i] = e.Document()
	}
	doc["id"] = j.ID
	doc["name"] = nullIfEmpty(j.Name)
	doc["priority"] = int(j.Priority)
	doc["timeout"] = j.Timeout.Milliseconds()
	doc["retryDelay"] = j.RetryDelay.Milliseconds()
	doc["repeatDelay"] = j.RepeatDelay.Milliseconds()
	doc["retryMax"] = j.RetryMax
	doc["retryCount"] = j.RetryCount
	doc["processCount"] = j.ProcessCount
	doc["repeat"] = storedRepeat(j.Repeat)
	doc["progress"] = j.Progress
	doc["status"] = string(j.Status)
	doc["log"] = log
	doc["dateCreated"] = storedTime(j.DateCreated)
	doc["dateEnable"] = storedTime(j.DateEnable)
	doc["dateStarted"] = storedTime(j.DateStarted)
	doc["dateFinished"] = storedTime(j.DateFinished)
	doc["queueId"] = j.QueueID
	if j.Data != nil {
		doc["data"] = stored(j.Data)
	}
	return doc
}

// storedRepeat is how a Repeat count is stored: false for 0, true for RepeatForever,
// else the count.
func storedRepeat(n int) any {
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

// FromDocument reads a job from a document as rethinkdb-go returns it (written by this
// library or by the Node.js one): numbers as float64 or json.Number, times as time.Time.
// Fields it does not know go to Fields. It returns an error wrapping ErrInvalidDocument
// for the State Document and for anything whose fields have the wrong types. The job has
// no store: Queue.GetJob and the other reads attach theirs.
func FromDocument(doc map[string]any) (*Job, error) {
	d := fieldReader{m: doc}
	j := &Job{
		ID:           d.str("id"),
		Name:         d.str("name"),
		Priority:     d.priority(),
		Timeout:      d.millis("timeout"),
		RetryDelay:   d.millis("retryDelay"),
		RepeatDelay:  d.millis("repeatDelay"),
		RetryMax:     d.int("retryMax"),
		RetryCount:   d.int("retryCount"),
		ProcessCount: d.int("processCount"),
		Repeat:       d.repeat(),
		Progress:     d.float("progress"),
		Status:       Status(d.str("status")),
		DateCreated:  d.time("dateCreated"),
		DateEnable:   d.time("dateEnable"),
		DateStarted:  d.time("dateStarted"),
		DateFinished: d.time("dateFinished"),
		QueueID:      d.str("queueId"),
		Data:         doc["data"],
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
	return j, nil
}

// The Node.js library keeps a job's priority as its name in memory and accepts a name in a
// document, so a name is read too.
func (d *fieldReader) priority() Priority {
	if name, ok := d.m["priority"].(string); ok {
		p, err := ParsePriority(name)
		if err != nil {
			d.bad("priority", name)
		}
		return p
	}
	return Priority(d.int("priority"))
}

func (d *fieldReader) repeat() int {
	switch v := d.m["repeat"].(type) {
	case nil:
		return 0
	case bool:
		if v {
			return RepeatForever
		}
		return 0
	default:
		return d.int("repeat")
	}
}

func (d *fieldReader) log() []LogEntry {
	raw, ok := d.m["log"].([]any)
	if !ok {
		if d.m["log"] != nil {
			d.bad("log", d.m["log"])
		}
		return []LogEntry{}
	}
	log := make([]LogEntry, 0, len(raw))
	for _, item := range raw {
		m, ok := item.(map[string]any)
		if !ok {
			d.bad("log", item)
			continue
		}
		e, err := LogEntryFromDocument(m)
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
