package rdb

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The limits of one insert: RethinkDB refuses arrays of more than 100,000 elements and
// very large queries, and an insert of a thousand documents already pays its flush over
// many. Bigger batches are cut into chunks of addChunk jobs, addInFlight of them written
// at once.
const (
	addChunk    = 1000
	addInFlight = 4
)

// InsertUnique writes the documents of unique jobs (see job.SetUniqueKey), whose ids are
// ids, each unless a job of its id is there and not finished; it returns those jobs,
// which Queue.AddJob reports in place of the duplicates. Every write of a document is atomic on
// its primary key, so concurrent adders of a key agree on one job: an insert that fails
// on a duplicate key, then a replace that takes the place of a finished job only.
func (t *Table) InsertUnique(ctx context.Context, s Store, ids []string, docs []any) (map[string]*job.Job, error) {
	there := make(map[string]*job.Job)
	for from := 0; from < len(ids); from += addChunk {
		to := min(from+addChunk, len(ids))
		if err := t.putUnique(ctx, s, ids[from:to], docs[from:to], there); err != nil {
			return nil, fmt.Errorf("queue %s: add %d unique jobs: %w", t.Name, len(ids), err)
		}
	}
	return there, nil
}

// putUnique writes one chunk of InsertUnique, adding the jobs found instead to there.
func (t *Table) putUnique(ctx context.Context, s Store, ids []string, docs []any, there map[string]*job.Job) error {
	// A job found finished by the replace can be removed before it is replaced; the
	// insert then takes the place on the next pass.
	for pass := 0; pass < 3 && len(ids) > 0; pass++ {
		// Duplicates are expected: the replace below deals with them.
		var res WriteResult
		if err := t.WriteOne(ctx, t.Term().Insert(docs), &res); err != nil {
			return err
		}
		if res.Errors > 0 && !strings.Contains(res.FirstError, "Duplicate primary key") {
			return fmt.Errorf("rethinkdb: %s", res.FirstError)
		}
		replace := r.Expr(docs).ForEach(func(d r.Term) any {
			return t.Term().Get(d.Field("id")).Replace(func(old r.Term) any {
				return r.Branch(keepForUnique(old, d), old, d)
			})
		})
		if _, err := t.Write(ctx, replace); err != nil {
			return err
		}
		var stored []map[string]any
		err := t.ReadAll(ctx, r.Expr(byID(ids, docs)).Do(func(mine r.Term) r.Term {
			return t.Term().GetAll(Anys(ids)...).Map(func(row r.Term) any {
				return map[string]any{"id": row.Field("id"), "mine": t.addedHere(row, mine), "doc": row}
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
			j, err := FromDocument(s, doc)
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

// keepForUnique is true when the stored job old of a unique key stands in place of d, a
// new job of the key: old is unfinished (waiting, active, failed: it runs or will), unless
// it is waiting and d debounces (job.SetDebounce: d replaces it); or old finished less
// than d's unique window ago (job.SetUniqueFor). A finished job without a usable time
// (written by hand) is replaced. The clock is the server's, one for the whole query.
func keepForUnique(old, d r.Term) r.Term {
	status := old.Field("status").Default("")
	finished := r.Expr(finishedStatuses).Contains(status)
	window := d.Field(docfmt.UniqueFor).Default(0)
	debounce := d.Field(docfmt.Debounce).Default(0)
	finishedAt := old.Field("dateFinished").Default(nil)
	return r.Branch(
		old.Eq(nil), false,
		finished.Not(), r.Expr(debounce).Gt(0).And(status.Eq(string(job.Waiting))).Not(),
		r.Expr(window).Gt(0).And(finishedAt.TypeOf().Eq("PTYPE<TIME>")),
		finishedAt.Add(r.Expr(window).Div(1000)).Gt(r.Now()),
		false)
}

// KeepsPlace is keepForUnique on jobs in memory (rjqtest's Adder), by the clock now.
func KeepsPlace(old, j *job.Job, now time.Time) bool {
	switch {
	case old == nil:
		return false
	case !old.Status.Finished():
		return j.Debounce() == 0 || old.Status != job.Waiting
	}
	w := j.UniqueFor()
	return w > 0 && !old.DateFinished.IsZero() && old.DateFinished.Add(w).After(now)
}

// DebouncedStart is when a job added at now starts: at its dateEnable, or a debounce
// (job.SetDebounce) after now, whichever is later, to the millisecond.
func DebouncedStart(j *job.Job, now time.Time) time.Time {
	start := j.DateEnable
	if d := j.Debounce(); d > 0 && now.Add(d).After(start) {
		start = now.Add(d)
	}
	return docfmt.Millis(start)
}

// finishedStatuses are the statuses of jobs that will not run again, as stored.
var finishedStatuses = []any{string(job.Completed), string(job.Cancelled), string(job.Terminated)}

// InsertAll writes docs (whose ids are ids) in chunks, all or none.
func (t *Table) InsertAll(ctx context.Context, ids []string, docs []any) error {
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
	if len(chunks) == 1 {
		// One chunk (most calls add a job or a few): on this goroutine, without the
		// handoff to another and back, which an idle process pays in wake-ups.
		found, err := t.insertChunk(ctx, ids, docs)
		errs[0] = err
		if len(found) > 0 {
			exists = append(exists, found)
		}
		chunks = nil
	}
	for i, c := range chunks {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			found, err := t.insertChunk(ctx, ids[c.from:c.to], docs[c.from:c.to])
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
	kept, rerr := t.Unadd(ctx, ids, docs)
	var existing []string
	for _, found := range exists {
		existing = append(existing, found...)
	}
	switch {
	case rerr != nil:
		return fmt.Errorf("queue %s: add %d jobs: %w; removing the jobs already written failed too, so some may have been added (look them up by id): %w", t.Name, len(ids), cmpErr(failed, existing), rerr)
	case kept > 0:
		return fmt.Errorf("queue %s: add %d jobs: %w; %d of the jobs already written were claimed by a worker before they could be removed, and stay", t.Name, len(ids), cmpErr(failed, existing), kept)
	}
	return fmt.Errorf("queue %s: add %d jobs: %w (nothing was added)", t.Name, len(ids), cmpErr(failed, existing))
}

// cmpErr is the error of a failed insert: the ids found in the table, else the failure.
func cmpErr(failed error, existing []string) error {
	if len(existing) > 0 {
		return fmt.Errorf("%w: %v", job.ErrExists, existing)
	}
	return failed
}

// insertChunk inserts docs unless one of ids is in the table already with another
// document; it returns the ids found instead. The common case is one query that looks
// for the ids (none is there) and inserts: the documents travel once, and the server does
// little beyond the insert itself (measured on RethinkDB 2.4.4: building, server-side, a
// map of the chunk's documents to compare with what it finds cost a quarter more CPU per
// job than the insert). Only when some of the ids are there does a second read tell
// whether they are this call's own documents, from an earlier try whose answer was lost
// (the driver sends a query again on a connection error), which count as written.
// Another writer can insert one of the ids between the look and the insert: the insert
// then reports it as a duplicate, and looking again tells whose it is.
func (t *Table) insertChunk(ctx context.Context, ids []string, docs []any) (exists []string, err error) {
	keys := Anys(ids)
	term := r.Branch(t.Term().GetAll(keys...).IsEmpty(),
		t.Term().Insert(docs),
		map[string]any{"exists": t.Term().GetAll(keys...).Field(docfmt.ID).CoerceTo("array")})
	var res WriteResult
	if err := t.WriteOne(ctx, term, &res); err != nil {
		return nil, err
	}
	if len(res.Exists) > 0 {
		return t.retryOwn(ctx, ids, docs, res.Exists)
	}
	if res.Errors == 0 {
		return nil, nil
	}
	if !strings.Contains(res.FirstError, "Duplicate primary key") {
		return nil, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	theirs, err := t.foreign(ctx, ids, docs)
	if err != nil {
		return nil, fmt.Errorf("rethinkdb: %s", res.FirstError)
	}
	return theirs, nil
}

// retryOwn handles a chunk some of whose ids (found) are in the table: when they all hold
// this call's own documents, the rest of the chunk is inserted; otherwise the ids of the
// others' documents are returned.
func (t *Table) retryOwn(ctx context.Context, ids []string, docs []any, found []string) ([]string, error) {
	theirs, err := t.foreign(ctx, found, pick(ids, docs, found))
	if err != nil || len(theirs) > 0 {
		return theirs, err
	}
	var restIDs []string
	var restDocs []any
	there := make(map[string]bool, len(found))
	for _, id := range found {
		there[id] = true
	}
	for i, id := range ids {
		if !there[id] {
			restIDs, restDocs = append(restIDs, id), append(restDocs, docs[i])
		}
	}
	if len(restIDs) == 0 {
		return nil, nil
	}
	return t.insertChunk(ctx, restIDs, restDocs)
}

// pick returns the documents of want, out of docs whose ids are ids.
func pick(ids []string, docs []any, want []string) []any {
	byID := byID(ids, docs)
	out := make([]any, len(want))
	for i, id := range want {
		out[i] = byID[id]
	}
	return out
}

// foreign returns those of ids whose stored document is not the one this call wrote.
func (t *Table) foreign(ctx context.Context, ids []string, docs []any) ([]string, error) {
	var theirs []string
	err := t.ReadAll(ctx, r.Expr(byID(ids, docs)).Do(func(mine r.Term) r.Term {
		return t.Term().GetAll(Anys(ids)...).Filter(func(row r.Term) r.Term {
			return t.addedHere(row, mine).Not()
		}).Field(docfmt.ID)
	}), &theirs)
	return theirs, err
}

// Unadd removes the jobs of ids that this call wrote (see addedHere) and no worker has
// claimed since, and returns how many it wrote that were claimed.
func (t *Table) Unadd(ctx context.Context, ids []string, docs []any) (kept int, err error) {
	for from := 0; from < len(ids); from += addChunk {
		to := min(from+addChunk, len(ids))
		keys := Anys(ids[from:to])
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
				"changed": t.Term().GetAll(keys...).Filter(func(row r.Term) r.Term {
					return t.addedHere(row, mine).And(unclaimed(row).Not())
				}).Count(),
			}).Merge(t.Term().GetAll(keys...).Filter(func(row r.Term) r.Term {
				return t.addedHere(row, mine).And(unclaimed(row))
			}).Delete().Pluck("deleted"))
		})
		if err := t.WriteOne(ctx, term, &res); err != nil {
			return kept, err
		}
		kept += res.Changed
	}
	return kept, nil
}

// addedHere is true when the stored job row was written by this Queue.AddJob call, whose
// documents by id are mine: same creation time, and its log holds this call's "added"
// entry (same date, this queue's id). Another writer's job of the same id differs in one
// or the other, and a claim since only appends to the log.
func (t *Table) addedHere(row, mine r.Term) r.Term {
	doc := mine.Field(row.Field("id"))
	added := doc.Field("log").Nth(-1)
	return row.Field("dateCreated").Eq(doc.Field("dateCreated")).And(
		row.Field("log").Filter(func(e r.Term) r.Term {
			return e.Field("date").Eq(added.Field("date")).
				And(e.Field("queueId").Eq(t.QueueID)).
				And(e.Field("message").Eq(job.MessageAdded).Or(e.Field("message").Eq(job.MessageAddedBlocked)))
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
