package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob returns a new job with the queue's job options (see SetJobOptions) and data as
// its payload. It is not in the queue until AddJob; set its options with the job's setters
// first.
func (q *Queue) CreateJob(data any) *job.Job {
	return job.New(q.store(), data, q.JobOptions())
}

// The limits of one insert: RethinkDB refuses arrays of more than 100,000 elements and
// very large queries, and an insert of a thousand documents already pays its flush over
// many. Bigger batches are cut into chunks of addChunk jobs, addInFlight of them written
// at once.
const (
	addChunk    = 1000
	addInFlight = 4
)

// AddJob adds jobs to the queue. A job still at status Created becomes Waiting, gets the
// log entry "Job added to the queue", and is stamped with this queue's id. It returns the
// jobs it added: the same objects, updated to what was stored.
//
// Every job is checked first (see job.Validate): when any is invalid, nil or given twice,
// nothing is written and the error wraps job.ErrInvalid. When a job with one of the ids
// is in the table already, nothing is added and the error wraps job.ErrExists and names
// the ids. That holds against jobs written before the call, and against another AddJob
// writing the same ids at the same moment too: the jobs this call wrote are then removed
// again, unless a worker has claimed one meanwhile (which the error says).
//
// Up to 1,000 jobs go in one query. A larger batch is written in chunks, several at once,
// and is all-or-nothing in the same way: when a chunk fails, the jobs of the chunks that
// were written are removed again. A failure of the server (not an answer about the
// jobs) can leave that removal undone; the error then says how many jobs may have been
// added.
func (q *Queue) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	if err := checkNewJobs(jobs); err != nil {
		return nil, err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	docs := make([]any, len(jobs))
	ids := make([]string, len(jobs))
	logs := make([][]job.LogEntry, len(jobs))
	for i, j := range jobs {
		saved := *j
		saved.QueueID = q.id
		if saved.Status == job.Created {
			saved.Status = job.Waiting
		}
		e := job.NewLog(&saved, q.id, nil, job.MessageAdded, job.Information, job.Waiting)
		saved.Log = job.AppendLog(append([]job.LogEntry(nil), j.Log...), e, q.cfg.limitJobLogs, job.TruncatedLog(&saved, q.id, q.cfg.limitJobLogs, job.Waiting))
		logs[i] = saved.Log
		docs[i] = saved.Document()
		ids[i] = j.ID
	}
	if err := q.insertAll(ctx, ids, docs); err != nil {
		return nil, err
	}
	for i, j := range jobs {
		j.Attach(q.store())
		if j.Status == job.Created {
			j.Status = job.Waiting
		}
		j.Log = logs[i]
		q.emit(Event{Type: EventAdded, JobID: j.ID})
	}
	q.wakeProcessing()
	return jobs, nil
}

// insertAll writes docs (whose ids are ids) in chunks, all or none.
func (q *Queue) insertAll(ctx context.Context, ids []string, docs []any) error {
	type chunk struct{ from, to int }
	var chunks []chunk
	for from := 0; from < len(docs); from += addChunk {
		chunks = append(chunks, chunk{from, min(from+addChunk, len(docs))})
	}
	errs := make([]error, len(chunks))
	var exists [][]string
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, addInFlight)
	for i, c := range chunks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			found, err := q.insertChunk(ctx, ids[c.from:c.to], docs[c.from:c.to])
			mu.Lock()
			defer mu.Unlock()
			errs[i] = err
			if len(found) > 0 {
				exists = append(exists, found)
			}
		})
	}
	wg.Wait()
	failed := errors.Join(errs...)
	if failed == nil && len(exists) == 0 {
		return nil
	}
	// Remove what this call wrote, as it wrote it: a job a worker claimed meanwhile stays.
	kept, rerr := q.unadd(ctx, ids, docs)
	var existing []string
	for _, found := range exists {
		existing = append(existing, found...)
	}
	switch {
	case rerr != nil:
		return fmt.Errorf("queue %s: add %d jobs: %w; removing the jobs already written failed too, so some may have been added (look them up by id): %w", q.cfg.name, len(ids), cmpErr(failed, existing), rerr)
	case kept > 0:
		return fmt.Errorf("queue %s: add %d jobs: %w; %d of the jobs already written were claimed by a worker before they could be removed, and stay", q.cfg.name, len(ids), cmpErr(failed, existing), kept)
	}
	return fmt.Errorf("queue %s: add %d jobs: %w (nothing was added)", q.cfg.name, len(ids), cmpErr(failed, existing))
}

// cmpErr is the error of a failed insert: the ids found in the table, else the failure.
func cmpErr(failed error, existing []string) error {
	if len(existing) > 0 {
		return fmt.Errorf("%w: %v", job.ErrExists, existing)
	}
	return failed
}

// insertChunk inserts docs unless one of ids is in the table already with another
// document, in one query; it returns the ids found instead. A document equal to the one
// being written is this call's own, from an earlier try whose answer was lost (the driver
// sends a query again on a connection error), and counts as written. Another writer can
// insert one of the ids between the look and the insert: the insert then reports it as a
// duplicate, and looking again tells whose it is.
func (q *Queue) insertChunk(ctx context.Context, ids []string, docs []any) (exists []string, err error) {
	term := r.Expr(docs).Do(func(ds r.Term) r.Term {
		mine := ds.Map(func(d r.Term) any { return []any{d.Field("id"), d} }).CoerceTo("object")
		foreign := q.table().GetAll(anys(ids)...).Filter(func(row r.Term) r.Term {
			return q.addedHere(row, mine).Not()
		}).Field("id").CoerceTo("array")
		return foreign.Do(func(found r.Term) r.Term {
			return r.Branch(found.IsEmpty(), q.table().Insert(ds), map[string]any{"exists": found})
		})
	})
	var res writeResult
	if err := q.readOne(ctx, term, &res); err != nil {
		return nil, err
	}
	if len(res.Exists) > 0 {
		return res.Exists, nil
	}
	if res.Errors == 0 {
		return nil, nil
	}
	if !strings.Contains(res.FirstError, "Duplicate primary key") {
		return nil, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	// Which ids another writer took: those whose document is not the one written here.
	// None means the duplicates were this call's own documents.
	var theirs []string
	err = q.readAll(ctx, r.Expr(byID(ids, docs)).Do(func(mine r.Term) r.Term {
		return q.table().GetAll(anys(ids)...).Filter(func(row r.Term) r.Term {
			return q.addedHere(row, mine).Not()
		}).Field("id")
	}), &theirs)
	if err != nil {
		return nil, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	return theirs, nil
}

// unadd removes the jobs of ids that this call wrote (see addedHere) and no worker has
// claimed since, and returns how many it wrote that were claimed.
func (q *Queue) unadd(ctx context.Context, ids []string, docs []any) (kept int, err error) {
	for from := 0; from < len(ids); from += addChunk {
		to := min(from+addChunk, len(ids))
		keys := anys(ids[from:to])
		var res struct {
			Deleted int `rethinkdb:"deleted"`
			Changed int `rethinkdb:"changed"`
		}
		// mine is bound once with Do: a literal in a filter is built again per document.
		term := r.Expr(byID(ids[from:to], docs[from:to])).Do(func(mine r.Term) r.Term {
			unclaimed := func(row r.Term) r.Term {
				return row.Field("status").Eq(string(job.Waiting)).And(row.Field("processCount").Eq(mine.Field(row.Field("id")).Field("processCount")))
			}
			return r.Expr(map[string]any{
				"changed": q.table().GetAll(keys...).Filter(func(row r.Term) r.Term {
					return q.addedHere(row, mine).And(unclaimed(row).Not())
				}).Count(),
			}).Merge(q.table().GetAll(keys...).Filter(func(row r.Term) r.Term {
				return q.addedHere(row, mine).And(unclaimed(row))
			}).Delete().Pluck("deleted"))
		})
		if err := q.readOne(ctx, term, &res); err != nil {
			return kept, err
		}
		kept += res.Changed
	}
	return kept, nil
}

// addedHere is true when the stored job row was written by this AddJob call, whose
// documents by id are mine: same creation time, and its log holds this call's "added"
// entry (same date, this queue's id). Another writer's job of the same id differs in one
// or the other, and a claim since only appends to the log.
func (q *Queue) addedHere(row, mine r.Term) r.Term {
	doc := mine.Field(row.Field("id"))
	added := doc.Field("log").Nth(-1)
	return row.Field("dateCreated").Eq(doc.Field("dateCreated")).And(
		row.Field("log").Filter(func(e r.Term) r.Term {
			return e.Field("date").Eq(added.Field("date")).
				And(e.Field("queueId").Eq(q.id)).
				And(e.Field("message").Eq(job.MessageAdded))
		}).IsEmpty().Not()).Default(false)
}

// byID maps each id to its document.
func byID(ids []string, docs []any) map[string]any {
	m := make(map[string]any, len(ids))
	for i, id := range ids {
		m[id] = docs[i]
	}
	return m
}

// checkNewJobs validates a batch for AddJob without touching the database.
func checkNewJobs(jobs []*job.Job) error {
	if len(jobs) == 0 {
		return ErrNoJobs
	}
	seen := make(map[string]bool, len(jobs))
	for i, j := range jobs {
		if j == nil {
			return fmt.Errorf("job %d: %w", i, ErrNilJob)
		}
		if err := j.Validate(); err != nil {
			return fmt.Errorf("job %d (%s): %w", i, j.ID, err)
		}
		if seen[j.ID] {
			return fmt.Errorf("job %d: %w: id %s is given twice", i, job.ErrInvalidID, j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}
