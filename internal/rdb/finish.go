package rdb

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The outcomes of runs are written in batches, one update of one getAll for all the
// outcomes ready: on a real RethinkDB a write costs one flush plus a little per document,
// so outcomes that finish close together share a flush.
//
// Each outcome is guarded by ownership: it applies only while the job is still active in
// the run that made its processCount, so a job cancelled, failed by a review or claimed
// again meanwhile is left as the other party left it. A document whose log someone made
// something other than an array while it ran fails alone (the others are written): it is
// reported as changed elsewhere and stays active, for the review, which mends its log.
//
// The write returns counts, not documents. When it replaced fewer than it was given,
// the jobs' stamps are read: an outcome whose job holds its dateFinished in this queue's
// name landed (by an earlier try of the write whose answer was lost, which the driver
// sends again on a connection error); the others found their job changed elsewhere.
// Outcomes are told apart by job and run (RunKey), never by job alone.

// Outcome is the write of one run's outcome.
type Outcome struct {
	ID string
	// ProcessCount is the run's claim: the write applies only while the job is active in it.
	ProcessCount int
	Status       job.Status
	// DateFinished is stored as dateFinished, and is the outcome's stamp. The outcomes of
	// one write must share it: it is the write's time, not each run's end.
	DateFinished time.Time
	// DateEnable, RetryCount and Progress are set when not nil.
	DateEnable *time.Time
	RetryCount *int
	Progress   *float64
	// Entry and Trunc are the log entry the outcome appends and the truncation entry that
	// goes with it.
	Entry, Trunc job.LogEntry
	// LogLen is the length of the job's log when it was claimed, claim entry included:
	// it tells whether the entry may reach the log limit.
	LogLen int
}

// As claims are (see claim.go), outcomes are grouped by what they compare and set, which
// are constants of their group's update. What differs from run to run, each run's
// duration and the dateEnable of retries and repeats, is looked up by id. The log entries
// of a group's runs usually differ by their duration alone (the same message and status,
// no result, dated with the write's time): the group then holds the entry once, and each
// run's duration is looked up. An entry that differs otherwise (a result, an error) is
// looked up whole. Measured on RethinkDB 2.4.4, batches of 50: a lookup of whole entries
// costs the server 0.33 ms per job, the floor's outcome write 0.30 and a lookup of every
// value 0.44; the shared entry costs the server what the whole entries do, but the worker
// builds one entry's terms, not one per run (8 worker processes used 5 % less CPU). The
// outcomes of one write share their dateFinished (see Outcome), so that finishing a few
// milliseconds apart does not split a batch.

// outcomeKey is what the outcomes of one group share.
type outcomeKey struct {
	pc          int
	status      job.Status
	finished    int64
	hasProgress bool
	progress    float64
	hasRetries  bool
	retries     int
	hasEnable   bool
	// shared is set for the group whose outcomes' entries are its entry but for their
	// durations (see outcomeGroup.entry).
	shared bool
}

// outcomeGroup is what the outcomes of one group compare and set.
type outcomeGroup struct {
	outcomeKey
	finished  time.Time
	nearLimit bool
	ids       []any
	// entry, in a shared group, is the log entry of every outcome of the group without
	// its duration, which the lookup holds.
	entry map[string]any
	// lookup holds the values looked up by id: entries ("e", or their durations, "u", in
	// a shared group), truncation entries ("t", near the limit only), dateEnable ("d").
	lookup map[string]map[string]any
}

// outcomeGroups groups outs.
func (t *Table) outcomeGroups(outs []Outcome) []*outcomeGroup {
	byKey := make(map[outcomeKey]*outcomeGroup)
	var groups []*outcomeGroup
	of := make([]*outcomeGroup, len(outs)) // each outcome's group
	for i, o := range outs {
		k := outcomeKeyOf(o)
		doc := o.Entry.Document()
		// The first entry of a key that can be shared makes its key's shared group; the
		// entries that differ from it are looked up whole, so that a write of many
		// different entries (failures, each with its error) makes two groups a key, not
		// one an entry.
		ms, ok := doc["duration"].(int64)
		if ok {
			delete(doc, "duration")
			k.shared = true
			if g, ok := byKey[k]; ok && !sameEntry(g.entry, doc) {
				k.shared = false
				doc["duration"] = ms
			}
		}
		// A shared group looks up each run's duration ("u"), any other its whole entry ("e").
		looked, value := "e", any(doc)
		if k.shared {
			looked, value = "u", ms
		}
		g, ok := byKey[k]
		if !ok {
			g = &outcomeGroup{outcomeKey: k, finished: o.DateFinished, lookup: map[string]map[string]any{looked: {}, "t": {}, "d": {}}}
			if k.shared {
				g.entry = doc
			}
			byKey[k] = g
			groups = append(groups, g)
		}
		of[i] = g
		g.ids = append(g.ids, o.ID)
		g.lookup[looked][o.ID] = value
		if o.DateEnable != nil {
			g.lookup["d"][o.ID] = *o.DateEnable
		}
		g.nearLimit = g.nearLimit || t.nearLimit(o.LogLen)
	}
	for _, g := range groups {
		if !g.hasEnable {
			delete(g.lookup, "d")
		}
		if !g.nearLimit {
			delete(g.lookup, "t")
		}
	}
	// The truncation entries only for the groups that may reach the limit: in every other
	// group each was a document built and dropped, for nothing (about 2 % of what a worker
	// allocated, measured at C=50).
	for i, o := range outs {
		if g := of[i]; g.nearLimit {
			g.lookup["t"][o.ID] = o.Trunc.Document()
		}
	}
	return groups
}

// sameEntry reports whether the log entry documents a and b hold the same values, each a
// plain value (a string, a number, a bool, null or a time): an entry that holds anything
// else (a result) is never shared.
func sameEntry(a, b map[string]any) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok {
			return false
		}
		switch v := v.(type) {
		case nil, string, bool, int, int64, float64:
			if v != w {
				return false
			}
		case time.Time:
			if w, ok := w.(time.Time); !ok || !v.Equal(w) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

// outcomeKeyOf is the key of o's group.
func outcomeKeyOf(o Outcome) outcomeKey {
	k := outcomeKey{pc: o.ProcessCount, status: o.Status, finished: o.DateFinished.UnixNano(), hasEnable: o.DateEnable != nil}
	if o.Progress != nil {
		k.hasProgress, k.progress = true, *o.Progress
	}
	if o.RetryCount != nil {
		k.hasRetries, k.retries = true, *o.RetryCount
	}
	return k
}

// finishTerm is the update that writes one group of outcomes.
func (t *Table) finishTerm(g *outcomeGroup) r.Term {
	return r.Expr(g.lookup).Do(func(l r.Term) r.Term {
		return t.Term().GetAll(g.ids...).Update(func(row r.Term) any { return t.finishRow(g, l, row) })
	})
}

// finishRow is what the update of g writes on row, the job of one of its outcomes, given
// l, g's lookup bound on the server: nothing unless the job is still active in the run.
func (t *Table) finishRow(g *outcomeGroup, l, row r.Term) r.Term {
	id := row.Field(docfmt.ID)
	var trunc any
	if g.nearLimit {
		trunc = l.Field("t").Field(id)
	}
	var entry any = l.Field("e").Field(id)
	if g.shared {
		e := maps.Clone(g.entry)
		e["duration"] = l.Field("u").Field(id)
		entry = e
	}
	set := map[string]any{
		docfmt.Status:       string(g.status),
		docfmt.DateFinished: g.finished,
		docfmt.QueueID:      t.QueueID,
		docfmt.Log:          t.appendEntry(row.Field(docfmt.Log), entry, trunc, g.nearLimit),
	}
	if g.hasProgress {
		set[docfmt.Progress] = g.progress
	}
	if g.hasRetries {
		set[docfmt.RetryCount] = g.retries
	}
	if g.hasEnable {
		set[docfmt.DateEnable] = l.Field("d").Field(id)
	}
	return r.Branch(ownedBy(row, g.pc), set, nil)
}

// RunKey names one run's outcome: its job and its claim. Two outcomes of one job (a run
// whose outcome is being written again, and the next run of the job) are two keys, so
// that the one that landed is never taken for the other.
type RunKey struct {
	ID           string
	ProcessCount int
}

// Key is the outcome's RunKey.
func (o Outcome) Key() RunKey { return RunKey{ID: o.ID, ProcessCount: o.ProcessCount} }

// Finish writes outs in one update and returns the keys of those that landed; the others
// found their job changed elsewhere.
func (t *Table) Finish(ctx context.Context, outs []Outcome) (done []RunKey, err error) {
	groups := t.outcomeGroups(outs)
	terms := make([]r.Term, len(groups))
	for i, g := range groups {
		terms[i] = t.finishTerm(g)
	}
	res, err := t.writeGroups(ctx, terms)
	if err != nil {
		return nil, fmt.Errorf("queue %s: write outcomes: %w", t.Name, err)
	}
	return t.landed(ctx, outs, res.Replaced)
}

// landed returns the keys of the outcomes that a write of outs, which replaced replaced
// documents, landed: all of them when it replaced one each, else those Landed reads.
func (t *Table) landed(ctx context.Context, outs []Outcome, replaced int) ([]RunKey, error) {
	if replaced == len(outs) {
		done := make([]RunKey, len(outs))
		for i, o := range outs {
			done[i] = o.Key()
		}
		return done, nil
	}
	return t.Landed(ctx, outs)
}

// Landed returns the keys of outs whose job holds the outcome, or held it before a later
// claim of the job: after a write that changed fewer jobs than it was given, or whose
// answer was lost. An outcome landed when the job carries its stamp (this queue's id and
// its dateFinished, which no claim changes) and has not gone back to an earlier claim,
// or, when a later claim by another queue has replaced the queue id, when the job's log
// holds the outcome's entry; a later claim's outcome, with another stamp, is judged on
// its own.
func (t *Table) Landed(ctx context.Context, outs []Outcome) ([]RunKey, error) {
	ids := make([]string, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	stamps, err := t.ReadStamps(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("queue %s: read back outcomes: %w", t.Name, err)
	}
	var done []RunKey
	var unsure []Outcome
	for _, o := range outs {
		d, ok := stamps[o.ID]
		if ok && d.QueueID == t.QueueID && d.DateFinished != nil && d.DateFinished.Equal(o.DateFinished) &&
			int(d.ProcessCount) >= o.ProcessCount {
			done = append(done, o.Key())
		} else if ok && int(d.ProcessCount) > o.ProcessCount {
			unsure = append(unsure, o)
		}
	}
	if len(unsure) == 0 {
		return done, nil
	}
	// A job claimed again since (by another queue: the claim stamps its id) no longer
	// carries this queue's stamp, though the outcome may have landed first and made the
	// job claimable (a failure to retry, a repeat). Its log tells: the outcome's entry,
	// in this queue's name, for its run, dated with its stamp.
	more, err := t.loggedOutcomes(ctx, unsure)
	if err != nil {
		return nil, fmt.Errorf("queue %s: read back outcomes: %w", t.Name, err)
	}
	return append(done, more...), nil
}

// loggedOutcomes returns the keys of outs whose entry is in their job's log: this queue's,
// of the run, dated with the outcome's stamp, with its status.
func (t *Table) loggedOutcomes(ctx context.Context, outs []Outcome) ([]RunKey, error) {
	ids := make([]string, len(outs))
	for i, o := range outs {
		ids[i] = o.ID
	}
	var entries []struct {
		ID           string    `rethinkdb:"id"`
		ProcessCount float64   `rethinkdb:"processCount"`
		Date         time.Time `rethinkdb:"date"`
		Status       string    `rethinkdb:"status"`
	}
	q := t.Term().GetAll(Anys(ids)...).ConcatMap(func(row r.Term) any {
		return row.Field(docfmt.Log).Default([]any{}).Filter(func(e r.Term) r.Term {
			return e.Field("queueId").Default(nil).Eq(t.QueueID).And(e.Field("date").Default(nil).TypeOf().Eq("PTYPE<TIME>"))
		}).Map(func(e r.Term) any {
			return map[string]any{"id": row.Field(docfmt.ID), "processCount": e.Field("processCount").Default(-1),
				"date": e.Field("date"), "status": e.Field("status").Default("")}
		})
	})
	if err := t.ReadAll(ctx, q, &entries); err != nil {
		return nil, err
	}
	var done []RunKey
	for _, o := range outs {
		for _, e := range entries {
			// The status tells the outcome's entry from a progress entry of the run
			// (status active) made in the same millisecond.
			if e.ID == o.ID && int(e.ProcessCount) == o.ProcessCount && e.Date.Equal(o.DateFinished) && e.Status == string(o.Status) {
				done = append(done, o.Key())
				break
			}
		}
	}
	return done, nil
}

// StampedDoc is what tells whether a job holds a given outcome or claim of this queue.
type StampedDoc struct {
	ID           string     `rethinkdb:"id"`
	Status       string     `rethinkdb:"status"`
	QueueID      string     `rethinkdb:"queueId"`
	ProcessCount float64    `rethinkdb:"processCount"`
	DateFinished *time.Time `rethinkdb:"dateFinished"`
}

// ReadStamps reads the stamps of the jobs ids, on the primary.
func (t *Table) ReadStamps(ctx context.Context, ids []string) (map[string]StampedDoc, error) {
	var docs []map[string]any
	err := t.ReadAll(ctx, t.Term().GetAll(Anys(ids)...).Pluck(docfmt.ID, docfmt.Status, docfmt.QueueID, docfmt.ProcessCount, docfmt.DateFinished), &docs)
	if err != nil {
		return nil, err
	}
	byID := make(map[string]StampedDoc, len(docs))
	for _, doc := range docs {
		// Read field by field: a document of the wrong shape must not fail the others.
		d := StampedDoc{}
		d.ID, _ = doc[docfmt.ID].(string)
		d.Status, _ = doc[docfmt.Status].(string)
		d.QueueID, _ = doc[docfmt.QueueID].(string)
		d.ProcessCount, _ = docfmt.Number(doc[docfmt.ProcessCount])
		if at, ok := doc[docfmt.DateFinished].(time.Time); ok {
			d.DateFinished = &at
		}
		byID[d.ID] = d
	}
	return byID, nil
}

// ReadClaimedHere reads the jobs of ids that are active in this queue's name, for the
// claims of a write whose answer was lost. A child among them whose parents have not all
// completed is put back blocked, not returned: only a FinishRelease whose undo never ran
// (the server stopped between the two) leaves one so.
func (t *Table) ReadClaimedHere(ctx context.Context, s Store, ids []string) ([]*job.Job, error) {
	term := t.Term().GetAll(Anys(ids)...).Filter(map[string]any{docfmt.Status: string(job.Active), docfmt.QueueID: t.QueueID})
	var docs []map[string]any
	if err := t.ReadAll(ctx, term, &docs); err != nil {
		return nil, err
	}
	var jobs []*job.Job
	var parents []string
	for _, doc := range docs {
		if j, err := FromDocument(s, doc); err == nil {
			jobs = append(jobs, j)
			parents = append(parents, j.DependsOn()...)
		}
	}
	if len(parents) == 0 {
		return jobs, nil
	}
	done, err := t.Completed(ctx, parents)
	if err != nil {
		return nil, err
	}
	var back []*job.Job
	jobs = slices.DeleteFunc(jobs, func(j *job.Job) bool {
		early := slices.ContainsFunc(j.DependsOn(), func(p string) bool { return !done[p] })
		if early {
			back = append(back, j)
		}
		return early
	})
	if err := t.reblock(ctx, back); err != nil {
		return nil, err
	}
	return jobs, nil
}

// reblock puts the children claimed here, jobs, back blocked, each while it is still as
// its claim left it (active here in the same run, never run before), with a log entry:
// their parents have not all completed, and the release that follows their last parent's
// completion (or the review's) settles them again.
func (t *Table) reblock(ctx context.Context, jobs []*job.Job) error {
	if len(jobs) == 0 {
		return nil
	}
	ids := make([]any, len(jobs))
	runs := make(map[string]int, len(jobs))
	for i, j := range jobs {
		ids[i], runs[j.ID] = j.ID, j.ProcessCount
	}
	now := time.Now().UTC().Truncate(time.Millisecond)
	term := r.Do(r.Expr(runs), func(pc r.Term) any {
		// A replace: the parents' results go (an update cannot take a field away in a branch).
		return t.Term().GetAll(ids...).Replace(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, job.MessageBlockedAgain, job.Blocked, true)
			return r.Branch(ownedBy(row, pc.Field(row.Field(docfmt.ID))).
				And(row.Field(docfmt.QueueID).Default(nil).Eq(t.QueueID)).
				And(row.Field(docfmt.RetryCount).Default(nil).Eq(0)).
				And(row.Field(docfmt.Log).Default(nil).TypeOf().Eq("ARRAY")), row.Without(docfmt.ParentResults).Merge(map[string]any{
				docfmt.Status:       string(job.Blocked),
				docfmt.ProcessCount: 0,
				docfmt.DateStarted:  nil,
				docfmt.DateEnable:   now,
				docfmt.Log:          t.AppendLog(row.Field(docfmt.Log), entry, trunc),
				docfmt.QueueID:      t.QueueID,
			}), row)
		})
	})
	if _, err := t.Write(ctx, term); err != nil {
		return fmt.Errorf("queue %s: put back blocked children claimed before their parents completed: %w", t.Name, err)
	}
	return nil
}
