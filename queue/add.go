package queue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob returns a new job with the queue's job options (see SetJobOptions) and data as
// its payload. It is not in the queue until AddJob; set its options with the job's setters
// first.
func (q *Queue) CreateJob(data any) *job.Job {
	j := job.New(data, q.JobOptions())
	rdb.Attach(j, q.store())
	return j
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
// jobs it added: the same objects, updated to what was stored. For a job with a unique
// key (job.SetUniqueKey) whose key has an unfinished job in the queue already, nothing is
// written and that job is returned in its place; this is not an error.
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
	var plain, unique []int
	for i, j := range jobs {
		if j.UniqueKey() != "" {
			unique = append(unique, i)
		} else {
			plain = append(plain, i)
		}
		saved := *j
		saved.QueueID = q.id
		if saved.Status == job.Created {
			saved.Status = job.Waiting
		}
		e := rdb.NewLog(&saved, q.id, nil, job.MessageAdded, job.Information, job.Waiting)
		saved.Log = rdb.AppendLog(append([]job.LogEntry(nil), j.Log...), e, q.cfg.limitJobLogs, rdb.TruncatedLog(&saved, q.id, q.cfg.limitJobLogs, job.Waiting))
		logs[i] = saved.Log
		docs[i] = rdb.Document(&saved)
		ids[i] = j.ID
	}
	pick := func(idx []int) ([]string, []any) {
		is, ds := make([]string, len(idx)), make([]any, len(idx))
		for k, i := range idx {
			is[k], ds[k] = ids[i], docs[i]
		}
		return is, ds
	}
	plainIDs, plainDocs := pick(plain)
	if len(plain) > 0 {
		if err := q.insertAll(ctx, plainIDs, plainDocs); err != nil {
			return nil, err
		}
	}
	var there map[string]*job.Job
	if len(unique) > 0 {
		uniqueIDs, uniqueDocs := pick(unique)
		if there, err = q.insertUnique(ctx, uniqueIDs, uniqueDocs); err != nil {
			if _, rerr := q.unadd(ctx, ids, docs); rerr != nil {
				return nil, fmt.Errorf("%w; removing the jobs already written failed too, so some may have been added (look them up by id): %w", err, rerr)
			}
			return nil, err
		}
	}
	out := make([]*job.Job, len(jobs))
	for i, j := range jobs {
		if other, ok := there[j.ID]; ok {
			out[i] = other
			continue
		}
		out[i] = j
		rdb.Attach(j, q.store())
		if j.Status == job.Created {
			j.Status = job.Waiting
		}
		j.Log = logs[i]
		q.emit(Event{Type: EventAdded, JobID: j.ID})
	}
	q.wakeProcessing()
	return out, nil
}

// insertUnique writes the documents of unique jobs (see job.SetUniqueKey), whose ids are
// ids, each unless a job of its id is there and not finished; it returns those jobs,
// which AddJob reports in place of the duplicates. Every write of a document is atomic on
// its primary key, so concurrent adders of a key agree on one job: an insert that fails
// on a duplicate key, then a replace that takes the place of a finished job only.
func (q *Queue) insertUnique(ctx context.Context, ids []string, docs []any) (map[string]*job.Job, error) {
	there := make(map[string]*job.Job)
	for from := 0; from < len(ids); from += addChunk {
		to := min(from+addChunk, len(ids))
		if err := q.putUnique(ctx, ids[from:to], docs[from:to], there); err != nil {
			return nil, fmt.Errorf("queue %s: add %d unique jobs: %w", q.cfg.name, len(ids), err)
		}
	}
	return there, nil
}

// putUnique writes one chunk of insertUnique, adding the jobs found instead to there.
func (q *Queue) putUnique(ctx context.Context, ids []string, docs []any, there map[string]*job.Job) error {
	// A job found finished by the replace can be removed before it is replaced; the
	// insert then takes the place on the next pass.
	for pass := 0; pass < 3 && len(ids) > 0; pass++ {
		// Duplicates are expected: the replace below deals with them.
		var res rdb.WriteResult
		if err := q.db.ReadOne(ctx, q.db.Term().Insert(docs), &res); err != nil {
			return err
		}
		if res.Errors > 0 && !strings.Contains(res.FirstError, "Duplicate primary key") {
			return fmt.Errorf("rethinkdb: %s", res.FirstError)
		}
		replace := r.Expr(docs).ForEach(func(d r.Term) any {
			return q.db.Term().Get(d.Field("id")).Replace(func(old r.Term) any {
				open := old.Ne(nil).And(r.Expr(finishedStatuses).Contains(old.Field("status").Default("")).Not())
				return r.Branch(open, old, d)
			})
		})
		if _, err := q.db.Write(ctx, replace); err != nil {
			return err
		}
		var stored []map[string]any
		err := q.db.ReadAll(ctx, r.Expr(byID(ids, docs)).Do(func(mine r.Term) r.Term {
			return q.db.Term().GetAll(rdb.Anys(ids)...).Map(func(row r.Term) any {
				return map[string]any{"id": row.Field("id"), "mine": q.addedHere(row, mine), "doc": row}
			})
		}), &stored)
		if err != nil {
			return err
		}
		found := make(map[string]bool, len(stored))
		for _, st := range stored {
			id, _ := st["id"].(string)
			found[id] = true
			if mine, _ := st["mine"].(bool); mine {
				continue
			}
			doc, _ := st["doc"].(map[string]any)
			j, err := rdb.FromDocument(q.store(), doc)
			if err != nil {
				return fmt.Errorf("the job already there for a unique key: %w", err)
			}
			there[id] = j
		}
		var missingIDs []string
		var missingDocs []any
		for i, id := range ids {
			if !found[id] {
				missingIDs, missingDocs = append(missingIDs, id), append(missingDocs, docs[i])
			}
		}
		ids, docs = missingIDs, missingDocs
	}
	if len(ids) > 0 {
		return fmt.Errorf("jobs %v were removed as fast as they were added", ids)
	}
	return nil
}

// finishedStatuses are the statuses of jobs that will not run again, as stored.
var finishedStatuses = []any{string(job.Completed), string(job.Cancelled), string(job.Terminated)}

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
		foreign := q.db.Term().GetAll(rdb.Anys(ids)...).Filter(func(row r.Term) r.Term {
			return q.addedHere(row, mine).Not()
		}).Field("id").CoerceTo("array")
		return foreign.Do(func(found r.Term) r.Term {
			return r.Branch(found.IsEmpty(), q.db.Term().Insert(ds), map[string]any{"exists": found})
		})
	})
	var res rdb.WriteResult
	if err := q.db.ReadOne(ctx, term, &res); err != nil {
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
	err = q.db.ReadAll(ctx, r.Expr(byID(ids, docs)).Do(func(mine r.Term) r.Term {
		return q.db.Term().GetAll(rdb.Anys(ids)...).Filter(func(row r.Term) r.Term {
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
		keys := rdb.Anys(ids[from:to])
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
				"changed": q.db.Term().GetAll(keys...).Filter(func(row r.Term) r.Term {
					return q.addedHere(row, mine).And(unclaimed(row).Not())
				}).Count(),
			}).Merge(q.db.Term().GetAll(keys...).Filter(func(row r.Term) r.Term {
				return q.addedHere(row, mine).And(unclaimed(row))
			}).Delete().Pluck("deleted"))
		})
		if err := q.db.ReadOne(ctx, term, &res); err != nil {
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
