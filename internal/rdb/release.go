package rdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
	"gopkg.in/rethinkdb/rethinkdb-go.v6/encoding"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The writes that release blocked jobs: each a compare-and-set on the blocked status, so
// a child is released once however many workers and Masters see its last parent finish.
// A release alone (Release, ReleaseNeverRun) makes children waiting with their parents'
// results; a release that claims (ReleaseClaim, ReleaseClaimNeverRun) makes them active
// for the queue that runs them at once; FinishRelease writes a parent's outcome and
// releases and claims its children in one update.

// Release makes those of the blocked jobs ids whose parents are all in done (a parent's
// id → its completion log entry, empty when it has none) waiting, at now, each carrying
// what ParentResult reads of its parents' entries, and returns the ids it released. A
// job not blocked, or with a parent not in done, is left alone, unwritten: so a job is
// released once, whichever queues see its parents complete.
//
// Children that never ran are released by a plain update, which returns no changes
// (releaseNeverRun); the others, by a replace that returns each change.
func (t *Table) Release(ctx context.Context, ids []string, done map[string]map[string]any, now time.Time) ([]string, error) {
	if len(ids) == 0 || len(done) == 0 {
		return nil, nil
	}
	n, err := t.releaseNeverRun(ctx, ids, done, now)
	if err != nil || n == len(ids) {
		return ids[:n], err
	}
	res, err := t.release(ctx, nil, ids, done, now, -1)
	if n == 0 || err != nil {
		return res.IDs, err
	}
	first, err := t.releasedAt(ctx, ids, now)
	// Both writes left the same entry: the replace's releases may be among those read.
	seen := make(map[string]bool, len(res.IDs))
	for _, id := range res.IDs {
		seen[id] = true
	}
	for _, id := range first {
		if !seen[id] {
			res.IDs = append(res.IDs, id)
		}
	}
	return res.IDs, err
}

// ReleaseNeverRun is Release for the jobs that never ran only (releaseNeverRun): the
// first try at children not read yet, which a single write settles in the common case
// (one parent and its children, none run yet); a job it leaves blocked is left to
// Release. It returns the ids it released.
func (t *Table) ReleaseNeverRun(ctx context.Context, ids []string, done map[string]map[string]any, now time.Time) ([]string, error) {
	if len(ids) == 0 || len(done) == 0 {
		return nil, nil
	}
	n, err := t.releaseNeverRun(ctx, ids, done, now)
	switch {
	case err != nil || n == 0:
		return nil, err
	case n == len(ids):
		return ids, nil
	}
	return t.releasedAt(ctx, ids, now)
}

// ReleaseClaimNeverRun is ReleaseClaim for the jobs that never ran only (claimNeverRun),
// as ReleaseNeverRun is Release's: a job it leaves blocked is left to ReleaseClaim or
// Release.
func (t *Table) ReleaseClaimNeverRun(ctx context.Context, s Store, ids []string, done map[string]map[string]any, now time.Time, hb time.Duration) (Released, error) {
	if len(ids) == 0 || len(done) == 0 {
		return Released{}, nil
	}
	return t.claimNeverRun(ctx, s, ids, done, now, hb)
}

// releaseNeverRun releases those of the jobs ids whose parents are all in done and that
// never ran: every change is a constant of the write but the log's new entry and, for
// a child of several parents, their results, so it is a plain update that returns no
// changes (on RethinkDB 2.4.4, 10,000 children of one parent released at 0.89x of plain
// status updates of them, against 0.57x with the replace). It returns how many it
// released; when not all, Release's replace follows for the others, and the jobs both
// released are told by their log (releasedAt).
func (t *Table) releaseNeverRun(ctx context.Context, ids []string, done map[string]map[string]any, now time.Time) (int, error) {
	var res WriteResult
	err := t.WriteOne(ctx, t.withDone(done, func(ready func(row r.Term) r.Term, results func(row r.Term) any) r.Term {
		return t.Term().GetAll(Anys(ids)...).Update(func(row r.Term) any {
			// (A job that is not one of these is left to the release, even one whose log
			// is not an array and fails this update for itself alone.)
			return r.Branch(t.neverRun(row, 1).And(ready(row)), map[string]any{
				docfmt.Status:        string(job.Waiting),
				docfmt.DateEnable:    now,
				docfmt.ParentResults: results(row),
				docfmt.Log:           row.Field(docfmt.Log).Append(t.constEntry(job.MessageReleased, job.Waiting, now)),
				docfmt.QueueID:       t.QueueID,
			}, nil)
		}, r.UpdateOpts{Durability: "soft"})
	}), &res)
	if err != nil {
		return 0, fmt.Errorf("queue %s: release blocked jobs: %w", t.Name, err)
	}
	return res.Replaced, nil
}

// claimNeverRun is releaseNeverRun that also claims the children it releases, for
// ReleaseClaim: an update of constants but the log's entries, the results and the
// lease, which returns the jobs it claimed. Those it did not claim are left to the
// release's replace.
func (t *Table) claimNeverRun(ctx context.Context, s Store, ids []string, done map[string]map[string]any, now time.Time, hb time.Duration) (Released, error) {
	return t.writeReleased(ctx, s, t.claimNeverRunTerm(ids, done, now, hb))
}

// claimNeverRunTerm is claimNeverRun's write, reduced to a releasedRow.
func (t *Table) claimNeverRunTerm(ids []string, done map[string]map[string]any, now time.Time, hb time.Duration) r.Term {
	return t.withDone(done, func(ready func(row r.Term) r.Term, results func(row r.Term) any) r.Term {
		return t.Term().GetAll(Anys(ids)...).Update(func(row r.Term) any {
			return t.claimNeverRunRow(row, ready(row), results(row), now, hb)
		}, r.UpdateOpts{ReturnChanges: true}).Do(func(res r.Term) any {
			return map[string]any{
				"claimed":     claimedChanges(res.Field("changes").Default([]any{})).Field("new_val"),
				"errors":      res.Field("errors"),
				"first_error": res.Field("first_error").Default(""),
			}
		})
	})
}

// claimNeverRunRow is what claimNeverRun writes on row when it is ready: the release's
// and the claim's entries and the parents' results.
func (t *Table) claimNeverRunRow(row, ready r.Term, results any, now time.Time, hb time.Duration) r.Term {
	return r.Branch(claimableAtRelease(row).And(t.neverRun(row, 2)).And(ready), map[string]any{
		docfmt.Status:        string(job.Active),
		docfmt.DateStarted:   now,
		docfmt.DateEnable:    leaseTerm(row, now, hb),
		docfmt.ProcessCount:  1,
		docfmt.ParentResults: results,
		docfmt.Log: row.Field(docfmt.Log).Append(t.constEntry(job.MessageReleased, job.Waiting, now)).
			Append(t.constEntry(job.MessageActive, job.Active, now)),
		docfmt.QueueID: t.QueueID,
	}, nil)
}

// claimedChanges are the changes of a write that made a blocked job active.
func claimedChanges(changes r.Term) r.Term {
	return changes.Filter(func(c r.Term) r.Term {
		return c.Field("old_val").Default(nil).Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)).
			And(c.Field("new_val").Default(nil).Field(docfmt.Status).Default(nil).Eq(string(job.Active)))
	})
}

// Follow is a release that follows a parent's outcome in the outcome's own write
// (FinishRelease): the parent's children to release and claim, with its completion
// entry, at now, with the heartbeat lease hb (0: none).
type Follow struct {
	Parent string
	Entry  map[string]any
	IDs    []string
	Now    time.Time
	HB     time.Duration
}

// FinishRelease is Finish that, in the same write and only when the outcome of f's
// parent lands, releases and claims for this queue those of the children of f that never
// ran and have f's parent alone (as ReleaseClaimNeverRun): a child of a chain starts one
// write after its parent's handler returned, one flush, not two. The others are left
// blocked, for the caller to release as after Finish. Outcomes of several groups (see
// outcomeGroups) are written by Finish alone. Released.Unreadable says why children it
// claimed cannot be read: they stay active, for the review.
//
// The outcomes and the children are the documents of one update: a child is claimed when
// its parent, as the update reads it (NonAtomic), is still active in the run, the
// guard of the parent's own outcome. A document's write is atomic, two documents' are
// not: should another writer change the parent between that read and the outcome's
// write (a cancel, a review), the outcome does not land, and the same query puts the
// children it claimed back as they were (each only while it is as the claim left it),
// before any worker may run them.
func (t *Table) FinishRelease(ctx context.Context, s Store, outs []Outcome, f Follow) ([]RunKey, Released, error) {
	groups := t.outcomeGroups(outs)
	if len(groups) != 1 || len(f.IDs) == 0 || groups[0].status != job.Completed {
		done, err := t.Finish(ctx, outs)
		return done, Released{}, err
	}
	var got struct {
		Replaced int `rethinkdb:"replaced"`
		releasedRow
	}
	if err := t.WriteOne(ctx, t.finishReleaseTerm(groups[0], f), &got); err != nil {
		return nil, Released{}, fmt.Errorf("queue %s: write outcomes: %w", t.Name, err)
	}
	rel := t.releasedFrom(s, got.releasedRow)
	if got.Errors > 0 && len(got.Claimed) > 0 {
		rel.Unreadable = errors.Join(rel.Unreadable, fmt.Errorf("queue %s: write outcomes and release blocked jobs: rethinkdb: %s", t.Name, got.FirstError))
	}
	done, err := t.landed(ctx, outs, got.Replaced)
	return done, rel, err
}

// finishReleaseTerm is FinishRelease's write of g, whose outcomes are completions, and
// f's children, reduced to the outcomes it replaced and the children it claimed.
func (t *Table) finishReleaseTerm(g *outcomeGroup, f Follow) r.Term {
	outcome := make(map[string]bool, len(g.ids))
	for _, id := range g.ids {
		outcome[id.(string)] = true
	}
	var kids []any
	for _, id := range f.IDs {
		if !outcome[id] && !slices.Contains(kids, any(id)) {
			kids = append(kids, id)
		}
	}
	isKid := func(id r.Term) r.Term { return r.Expr(kids).Contains(id) }
	// The parent as the update reads it: its outcome's guard holds there, or the outcome
	// has landed already (RethinkDB 2.4 reads documents as they were before the update,
	// but nothing promises that).
	parentOwned := r.Do(t.Term().Get(f.Parent), func(p r.Term) r.Term {
		return ownedBy(p, g.pc).Or(t.holdsOutcome(p, g))
	})
	done := map[string]map[string]any{f.Parent: f.Entry}
	return r.Expr(g.lookup).Do(func(l r.Term) r.Term {
		return t.withDone(done, func(ready func(row r.Term) r.Term, results func(row r.Term) any) r.Term {
			return t.Term().GetAll(append(slices.Clone(g.ids), kids...)...).Update(func(row r.Term) any {
				return r.Branch(isKid(row.Field(docfmt.ID)),
					t.claimNeverRunRow(row, ready(row).And(parentOwned), results(row), f.Now, f.HB),
					t.finishRow(g, l, row))
			}, r.UpdateOpts{ReturnChanges: true, NonAtomic: true}).Do(func(res r.Term) any {
				changes := res.Field("changes").Default([]any{})
				// The write changes a child only with its claim, and the parent only with
				// its outcome (finishRow).
				return r.Do(claimedChanges(changes), func(claimed r.Term) any {
					landed := changes.Contains(func(c r.Term) r.Term {
						return c.Field("new_val").Default(nil).Field(docfmt.ID).Default(nil).Eq(f.Parent)
					})
					reduced := func(run any) map[string]any {
						return map[string]any{
							"replaced":    changes.Count().Sub(claimed.Count()),
							"claimed":     run,
							"errors":      res.Field("errors"),
							"first_error": res.Field("first_error").Default(""),
						}
					}
					return r.Branch(landed.Or(claimed.IsEmpty()), reduced(claimed.Field("new_val")),
						r.Do(t.unclaim(kids, claimed), func(any) any { return reduced([]any{}) }))
				})
			})
		})
	})
}

// holdsOutcome is true on doc, a job of g, when it holds g's outcome.
func (t *Table) holdsOutcome(doc r.Term, g *outcomeGroup) r.Term {
	return doc.Field(docfmt.Status).Default(nil).Eq(string(g.status)).
		And(doc.Field(docfmt.DateFinished).Default(nil).Eq(g.finished)).
		And(doc.Field(docfmt.QueueID).Default(nil).Eq(t.QueueID))
}

// unclaim puts the children of claimed (the changes of their claim) back as they were,
// each only while it is as the claim left it.
func (t *Table) unclaim(kids []any, claimed r.Term) r.Term {
	return r.Do(claimed.Map(func(c r.Term) any {
		return []any{c.Field("new_val").Field(docfmt.ID), c}
	}).CoerceTo("object"), func(byID r.Term) r.Term {
		return t.Term().GetAll(kids...).Replace(func(row r.Term) any {
			c := byID.Field(row.Field(docfmt.ID)).Default(nil)
			old := c.Field("old_val").Default(nil)
			return r.Branch(old.Ne(nil).And(row.Eq(c.Field("new_val").Default(nil))), old, row)
		})
	})
}

// withDone builds a release's write, given ready (a row whose parents are all in done: for one parent,
// a row of that parent alone) and results (what the row keeps of its parents' entries,
// a constant for one parent), which read done (parent id → completion entry) bound
// once on the server.
func (t *Table) withDone(done map[string]map[string]any, write func(ready func(row r.Term) r.Term, results func(row r.Term) any) r.Term) r.Term {
	entries := make(map[string]any, len(done))
	var parent string
	for id, e := range done {
		entries[id], parent = KeptResult(e), id
	}
	if len(entries) == 1 {
		// A fan-out: every child released has the one parent, whose result is a constant.
		return write(func(row r.Term) r.Term {
			return row.Field(docfmt.DependsOn).Default(nil).Eq([]any{parent})
		}, func(r.Term) any { return entries })
	}
	n := len(entries)
	return r.Do(datumTerm(entries), func(d r.Term) any {
		return r.Do(d.Keys(), func(keys r.Term) any {
			return write(func(row r.Term) r.Term {
				// Counted first: a child of a thousand parents met through one of them
				// is not looked through; then a set difference, not a function per
				// parent (on RethinkDB 2.4.4, a few milliseconds less for a thousand).
				parents := row.Field(docfmt.DependsOn).Default(nil)
				return parents.TypeOf().Eq("ARRAY").And(parents.Count().Gt(0)).And(parents.Count().Le(n)).
					And(parents.SetDifference(keys).IsEmpty())
			}, func(row r.Term) any {
				// A child whose parents are all the parents of done (the common case: a
				// join released by itself) keeps done as it is.
				parents := row.Field(docfmt.DependsOn)
				return r.Branch(parents.Count().Eq(n), d,
					parents.Map(func(p r.Term) any { return []any{p, d.Field(p)} }).CoerceTo("object"))
			})
		})
	})
}

// datumTerm is v as a term the server reads as one datum, not as a term per value: v
// encoded as rethinkdb-go encodes it (times and binary as their pseudo-types) and sent as
// JSON (r.JSON), which a server parses several times faster (on RethinkDB 2.4.4, about 8 ms
// less for a thousand small results). A value JSON cannot hold is sent as r.Expr.
func datumTerm(v any) r.Term {
	enc, err := encoding.Encode(v)
	if err != nil {
		return r.Expr(v)
	}
	b, err := json.Marshal(enc)
	if err != nil {
		return r.Expr(v)
	}
	return r.JSON(string(b))
}

// releasedAt returns those of the jobs ids that a release by this queue at now released
// (their log holds its entry).
func (t *Table) releasedAt(ctx context.Context, ids []string, now time.Time) ([]string, error) {
	term := t.Term().GetAll(Anys(ids)...).Filter(func(doc r.Term) r.Term {
		log := doc.Field(docfmt.Log).Default(nil)
		return r.Branch(log.TypeOf().Eq("ARRAY"), log.Filter(func(e r.Term) r.Term {
			return e.Field("message").Default(nil).Eq(job.MessageReleased).
				And(e.Field("queueId").Default(nil).Eq(t.QueueID)).
				And(e.Field("date").Default(nil).Eq(now))
		}).IsEmpty().Not(), false)
	}).Field(docfmt.ID)
	var out []string
	if err := t.ReadAll(ctx, term, &out); err != nil {
		return nil, fmt.Errorf("queue %s: read which jobs a release released: %w", t.Name, err)
	}
	return out, nil
}

// neverRun is true on row when it is a blocked job that never ran (processCount and
// retryCount 0) whose log is an array with room for n more entries: its release's (and
// claim's) entries are then constants of the write (constEntry).
func (t *Table) neverRun(row r.Term, n int) r.Term {
	log := row.Field(docfmt.Log).Default(nil)
	ok := row.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)).
		And(row.Field(docfmt.ProcessCount).Default(nil).Eq(0)).
		And(row.Field(docfmt.RetryCount).Default(nil).Eq(0)).
		And(log.TypeOf().Eq("ARRAY"))
	if t.LimitJobLogs > 0 {
		ok = ok.And(log.Count().Add(n).Lt(t.LimitJobLogs))
	}
	return ok
}

// constEntry is the log entry, with message and status, that this queue writes at now on
// a job never run.
func (t *Table) constEntry(message string, status job.Status, now time.Time) map[string]any {
	var none job.Job
	e := NewLog(&none, t.QueueID, nil, message, job.Information, status).WithoutData()
	e.Date = now
	return e.Document()
}

// ReleaseClaim is Release that also claims for this queue, in the same write, the jobs
// it releases that a claim may take at once: those of no group, sequence or start
// deadline whose counters, durations and log a claim can compute with (the others are
// released only, for a claim to read, and report if it must). A job claimed gets the
// release's log entry and the claim's, as a claim at now would: active in this queue's
// name, dateStarted now, and a lease that ends as LeaseEnd's with the heartbeat lease hb
// (0: none).
func (t *Table) ReleaseClaim(ctx context.Context, s Store, ids []string, done map[string]map[string]any, now time.Time, hb time.Duration) (Released, error) {
	if len(ids) == 0 || len(done) == 0 {
		return Released{}, nil
	}
	first, err := t.claimNeverRun(ctx, s, ids, done, now, hb)
	if err != nil || len(first.Claimed) == len(ids) {
		return first, err
	}
	claimed := make(map[string]bool, len(first.Claimed))
	for _, j := range first.Claimed {
		claimed[j.ID] = true
	}
	rest, err := t.release(ctx, s, slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return claimed[id] }), done, now, hb)
	rest.Claimed = append(first.Claimed, rest.Claimed...)
	rest.Unreadable = errors.Join(first.Unreadable, rest.Unreadable)
	return rest, err
}

// Released is what ReleaseClaim did.
type Released struct {
	// Claimed are the jobs it released and claimed, attached to the store.
	Claimed []*job.Job
	// IDs are the jobs it released only.
	IDs []string
	// Unreadable says why jobs it released and claimed cannot be read: they stay
	// active, for the Master's review.
	Unreadable error
}

// release is Release (hb < 0) and ReleaseClaim.
func (t *Table) release(ctx context.Context, s Store, ids []string, done map[string]map[string]any, now time.Time, hb time.Duration) (Released, error) {
	if len(ids) == 0 || len(done) == 0 {
		return Released{}, nil
	}
	claim := hb >= 0
	// A release that only releases is written with soft durability: one lost in a crash
	// of the server is made again by a Master's review, from the parents it reads.
	durability := "soft"
	if claim {
		durability = "hard"
	}
	term := t.withDone(done, func(ready func(row r.Term) r.Term, results func(row r.Term) any) r.Term {
		// A replace, not an update: the parents' results replace whatever the field held
		// (an update merges objects).
		return t.Term().GetAll(Anys(ids)...).Replace(func(row r.Term) any {
			entry, trunc := t.rowLog(row, now, job.MessageReleased, job.Waiting, true)
			// The log with the release's entry is bound once: the claim appends to it.
			released := r.Do(t.AppendLog(row.Field(docfmt.Log), entry, trunc), func(log r.Term) any {
				set := map[string]any{
					docfmt.Status:        string(job.Waiting),
					docfmt.DateEnable:    now,
					docfmt.ParentResults: results(row),
					docfmt.Log:           log,
					docfmt.QueueID:       t.QueueID,
				}
				if !claim {
					return row.Without(docfmt.ParentResults).Merge(set)
				}
				claimed := maps.Clone(set)
				maps.Copy(claimed, t.claimNow(row, log, now, hb))
				return r.Branch(claimableAtRelease(row), row.Without(docfmt.ParentResults).Merge(claimed),
					row.Without(docfmt.ParentResults).Merge(set))
			})
			return r.Branch(row.Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)).And(ready(row)), released, row)
		}, r.ReplaceOpts{ReturnChanges: true, Durability: durability}).Do(func(res r.Term) any {
			changes := res.Field("changes").Default([]any{})
			was := func(c r.Term, status job.Status) r.Term {
				return c.Field("old_val").Default(nil).Field(docfmt.Status).Default(nil).Eq(string(job.Blocked)).
					And(c.Field("new_val").Default(nil).Field(docfmt.Status).Default(nil).Eq(string(status)))
			}
			return map[string]any{
				"claimed":     changes.Filter(func(c r.Term) r.Term { return was(c, job.Active) }).Field("new_val"),
				"ids":         changes.Filter(func(c r.Term) r.Term { return was(c, job.Waiting) }).Field("new_val").Field(docfmt.ID),
				"errors":      res.Field("errors"),
				"first_error": res.Field("first_error").Default(""),
			}
		})
	})
	return t.writeReleased(ctx, s, term)
}

// releasedRow is a release's write as it is reduced on the server: the documents it
// claimed, the ids it released only and its errors.
type releasedRow struct {
	Claimed []map[string]any `rethinkdb:"claimed"`
	IDs     []string         `rethinkdb:"ids"`
	writeErrors
}

// writeReleased runs a release's write reduced to a releasedRow, and reads the claimed
// documents as jobs of s.
func (t *Table) writeReleased(ctx context.Context, s Store, term r.Term) (Released, error) {
	var got releasedRow
	if err := t.writeReduced(ctx, term, "release blocked jobs", &got, &got.writeErrors); err != nil {
		return Released{}, err
	}
	return t.releasedFrom(s, got), nil
}

// releasedFrom reads what a release's write returned.
func (t *Table) releasedFrom(s Store, got releasedRow) Released {
	out := Released{IDs: got.IDs}
	var unreadable []error
	for _, doc := range got.Claimed {
		j, err := FromDocument(s, doc)
		if err != nil {
			unreadable = append(unreadable, fmt.Errorf("queue %s: job %v, released and claimed, cannot be read; it is left active for the review: %w", t.Name, doc[docfmt.ID], err))
			continue
		}
		out.Claimed = append(out.Claimed, j)
	}
	out.Unreadable = errors.Join(unreadable...)
	return out
}

// leaseTerm is LeaseEnd computed on the server for row, a job claimed at now, with the
// heartbeat lease hb (0: none); its durations are in milliseconds.
func leaseTerm(row r.Term, now time.Time, hb time.Duration) r.Term {
	ms := row.Field(docfmt.Timeout).Add(row.Field(docfmt.RetryCount).Mul(row.Field(docfmt.RetryDelay)))
	lease := r.Expr(now).Add(ms.Div(1000))
	if hb > 0 {
		short := now.Add(hb)
		lease = r.Branch(lease.Lt(short), lease, short)
	}
	return lease
}

// claimableAtRelease is true on a job that a release may claim at once (see ReleaseClaim).
func claimableAtRelease(row r.Term) r.Term {
	ok := row.Field(docfmt.Log).Default(nil).TypeOf().Eq("ARRAY")
	for _, f := range []string{docfmt.Timeout, docfmt.RetryDelay, docfmt.RetryCount, docfmt.ProcessCount} {
		ok = ok.And(row.Field(f).Default(nil).TypeOf().Eq("NUMBER"))
	}
	for _, f := range []string{docfmt.Group, docfmt.Sequence, docfmt.Deadline} {
		ok = ok.And(row.HasFields(f).Not())
	}
	return ok
}

// claimNow is what a claim at now sets on row, whose log is log: as Claim, with the lease
// computed on the server (LeaseEnd's formula, the durations in milliseconds).
func (t *Table) claimNow(row, log r.Term, now time.Time, hb time.Duration) map[string]any {
	entry, trunc := RowLog(t.QueueID, t.LimitJobLogs, job.MessageActive, Stamps{
		Date:         now,
		Status:       string(job.Active),
		RetryCount:   row.Field(docfmt.RetryCount),
		ProcessCount: row.Field(docfmt.ProcessCount),
	}, true)
	return map[string]any{
		docfmt.Status:       string(job.Active),
		docfmt.DateStarted:  now,
		docfmt.DateEnable:   leaseTerm(row, now, hb),
		docfmt.QueueID:      t.QueueID,
		docfmt.ProcessCount: row.Field(docfmt.ProcessCount).Add(1),
		docfmt.Log:          t.AppendLog(log, entry, trunc),
	}
}

// KeptResult is what a child keeps of its parent's completion log entry e (a document)
// in its field docfmt.ParentResults: what job.Job.ParentResult reads, its result and
// error message (the message, "Job completed", only when the entry has neither), so that
// a child of a thousand parents does not carry a thousand whole entries.
func KeptResult(e map[string]any) map[string]any {
	out := make(map[string]any, 2)
	for _, k := range []string{"data", "errorMessage"} {
		if v, ok := e[k]; ok {
			out[k] = v
		}
	}
	if m, ok := e["message"]; ok && len(out) == 0 {
		out["message"] = m
	}
	return out
}

// resultFields are the fields of a completion entry that KeptResult reads.
var resultFields = []string{"message", "data", "errorMessage"}
