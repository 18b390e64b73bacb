package engine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/internal/errtext"
	"github.com/rjqgo/rethinkdb-job-queue/internal/processor"
	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// CreateJob is queue.Queue.CreateJob, whose doc says what it does.
func (q *Queue) CreateJob(data any) *job.Job {
	j := job.New(data, q.JobOptions())
	rdb.Attach(j, q.store())
	return j
}

// AddJob is queue.Queue.AddJob, whose doc says what it does.
func (q *Queue) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	if err := CheckNewJobs(jobs); err != nil {
		return nil, err
	}
	end, err := q.begin(ctx)
	if err != nil {
		return nil, err
	}
	defer end()
	q.ensureDeadlineIndex(ctx, jobs)
	if err := q.ensureSequences(ctx, jobs); err != nil {
		return nil, err
	}
	plan, err := q.planWorkflows(ctx, jobs)
	if err != nil {
		return nil, err
	}
	q.noteWorkflows(jobs)
	if err := q.recordChildren(ctx, plan); err != nil {
		return nil, err
	}
	turns, err := q.groupTurns(ctx, jobs)
	if err != nil {
		return nil, err
	}
	b := q.newBatch(jobs, plan, q.sequenceTails(ctx, jobs), turns)
	here := q.claimHere(&b)
	if len(b.plain) > 0 {
		ids, docs := b.pick(b.plain)
		if err := q.db.InsertAll(ctx, ids, docs); err != nil {
			here.unreserve(err)
			return nil, err
		}
	}
	var there map[string]*job.Job
	if len(b.unique) > 0 {
		ids, docs := b.pick(b.unique)
		if there, err = q.db.InsertUnique(ctx, q.store(), ids, docs); err != nil {
			if _, rerr := q.db.Unadd(ctx, b.ids, b.docs); rerr != nil {
				return nil, fmt.Errorf("%w; removing the jobs already written failed too, so some may have been added (look them up by id): %w", err, rerr)
			}
			return nil, err
		}
	}
	out := q.added(jobs, b.saved, there, here != nil)
	here.start()
	if err := q.settle(ctx, plan.blocked, nil); err != nil {
		// Its parents may have finished before it was written: the review settles it.
		q.log.Warn("releasing the jobs just added whose parents finished meanwhile failed; a Queue Master's review does it", "err", err)
	}
	return out, nil
}

// addBatch is what AddJob writes: each job as stored, its document and id, and which
// jobs are plain and which unique (see job.SetUniqueKey).
type addBatch struct {
	saved         []job.Job
	docs          []any
	ids           []string
	plain, unique []int
}

// newBatch makes the documents of jobs as this queue adds them: waiting, in its name,
// with the log entry "Job added to the queue". A job of a sequence gets its place, and,
// when tails holds its key, the id of the job ahead of it (rdb.TurnOf): the key's tail,
// or the job of the key before it in jobs; and a dateEnable after the one ahead that
// waits (sequenceSpacing). A job of a group that took a turn (turns, by index in jobs:
// see groupTurns) and stays waiting takes its turn's dateEnable.
func (q *Queue) newBatch(jobs []*job.Job, plan addPlan, tails map[string]rdb.SequenceTail, turns map[int]time.Time) addBatch {
	b := addBatch{saved: make([]job.Job, len(jobs)), docs: make([]any, len(jobs)), ids: make([]string, len(jobs))}
	now := time.Now()
	space := newSequenceSpacing(tails, now)
	for i, j := range jobs {
		if j.UniqueKey() != "" {
			b.unique = append(b.unique, i)
		} else {
			b.plain = append(b.plain, i)
		}
		saved := *j
		saved.QueueID = q.id
		if j.Sequence() != "" {
			// Its place in its sequence: the order of the adds, not of the creations.
			saved.Fields = maps.Clone(j.Fields)
			saved.Fields[docfmt.SequenceAt] = sequencePlace()
			// Never one the caller wrote: a wrong one would let a job pass those ahead.
			delete(saved.Fields, docfmt.SequencePrev)
			if tail, ok := tails[j.Sequence()]; ok {
				saved.Fields[docfmt.SequencePrev] = tail.ID
				tails[j.Sequence()] = rdb.SequenceTail{ID: j.ID}
			}
		}
		if saved.Status == job.Created {
			saved.Status = job.Waiting
			plan.apply(&saved)
		}
		if saved.Status == job.Waiting {
			saved.DateEnable = rdb.DebouncedStart(&saved, now)
			if at, ok := turns[i]; ok {
				saved.DateEnable = at
			}
			if s := saved.Sequence(); s != "" {
				saved.DateEnable = space.place(s, saved.DateEnable, j.DateEnable.After(now) || j.Debounce() > 0)
			}
		}
		// The original's added entry; a job of a workflow says that it is blocked, and why.
		status, message := job.Waiting, job.MessageAdded
		if saved.Status == job.Blocked {
			status, message = job.Blocked, job.MessageAddedBlocked
		}
		e := rdb.NewLog(&saved, q.id, nil, message, job.Information, status)
		saved.Log = rdb.AppendLog(append([]job.LogEntry(nil), j.Log...), e, q.cfg.LimitJobLogs, rdb.TruncatedLog(&saved, q.id, q.cfg.LimitJobLogs, status))
		b.saved[i] = saved
		b.docs[i] = saved.Document()
		b.ids[i] = j.ID
	}
	return b
}

// pick returns the ids and documents of the jobs at idx.
func (b addBatch) pick(idx []int) ([]string, []any) {
	ids, docs := make([]string, len(idx)), make([]any, len(idx))
	for k, i := range idx {
		ids[k], docs[k] = b.ids[i], b.docs[i]
	}
	return ids, docs
}

// added updates the jobs AddJob wrote to what was stored (attached to the queue, with
// their status and log), raises their added events and, unless they were inserted
// claimed, hints the processor of them. It returns what AddJob returns: each job, or the
// job already there for its unique key.
func (q *Queue) added(jobs []*job.Job, saved []job.Job, there map[string]*job.Job, claimed bool) []*job.Job {
	out := make([]*job.Job, len(jobs))
	added := make([]*job.Job, 0, len(jobs))
	for i, j := range jobs {
		if other, ok := there[j.ID]; ok {
			other.MarkDuplicate()
			out[i] = other
			continue
		}
		out[i] = j
		rdb.Attach(j, q.store())
		s := &saved[i]
		j.Status, j.Log, j.ProcessCount, j.DateStarted, j.DateEnable = s.Status, s.Log, s.ProcessCount, s.DateStarted, s.DateEnable
		q.emit(Event{Type: EventAdded, JobID: j.ID})
		if s.Status != job.Blocked {
			added = append(added, j)
		}
	}
	if p := q.processor(); p != nil && !claimed {
		for _, j := range added {
			p.Hint(j, q.id)
		}
	}
	return out
}

// claimed holds the slots reserved for a batch inserted already claimed (see claimHere),
// and the jobs the handler gets: each its own copy, as a claim would have read it.
type claimed struct {
	p    *processor.Processor
	ids  []string
	jobs []*job.Job
}

// claimHere makes b's jobs claimed by this queue when it processes, is idle and has a
// free slot for each (processor.Reserve): AddJob then inserts them active in its name and
// runs them at once, with no claim query between the insert and the handler. Only plain
// jobs that are due now go so. It returns nil when b is to be inserted waiting.
func (q *Queue) claimHere(b *addBatch) *claimed {
	p := q.processor()
	if p == nil || len(b.unique) > 0 {
		return nil
	}
	for i := range b.saved {
		if b.saved[i].Sequence() != "" {
			return nil // it waits for its turn (rdb.SequenceHeads)
		}
	}
	now := time.Now()
	for i := range b.saved {
		if s := &b.saved[i]; s.Status != job.Waiting || s.DateEnable.After(now) {
			return nil
		}
	}
	if !p.Reserve(len(b.saved)) {
		return nil
	}
	at := docfmt.Millis(now)
	c := &claimed{p: p, ids: b.ids, jobs: make([]*job.Job, len(b.saved))}
	saved, docs := slices.Clone(b.saved), make([]any, len(b.saved))
	for i := range saved {
		s := &saved[i]
		q.db.ClaimNew(s, at, q.leaseEnd(s, at))
		docs[i] = s.Document()
		read, err := rdb.AsRead(docs[i])
		if err == nil {
			c.jobs[i], err = rdb.FromDocument(q.store(), read)
		}
		if err != nil {
			// A document the driver cannot encode: the insert fails with its error.
			p.Unreserve(len(saved), nil)
			return nil
		}
	}
	b.saved, b.docs = saved, docs
	return c
}

// unreserve frees the slots of jobs whose insert failed with err. Unless the jobs were
// in the table already, the insert may have landed: the processor looks for them.
func (c *claimed) unreserve(err error) {
	if c == nil {
		return
	}
	var unsure []string
	if !errors.Is(err, job.ErrExists) {
		unsure = c.ids
	}
	c.p.Unreserve(len(c.jobs), unsure)
}

// start runs the inserted jobs.
func (c *claimed) start() {
	if c != nil {
		c.p.Started(len(c.jobs), c.jobs)
	}
}

// CheckNewJobs validates a batch for AddJob without touching the database; rjqtest.Adder
// checks its batches with it too.
func CheckNewJobs(jobs []*job.Job) error {
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
		if err := checkStart(j, time.Now()); err != nil {
			return fmt.Errorf("job %d (%s): %w", i, j.ID, err)
		}
		if seen[j.ID] {
			return fmt.Errorf("job %d: %w: id %s is given twice", i, job.ErrInvalidID, j.ID)
		}
		seen[j.ID] = true
	}
	return nil
}

// checkStart reports a job that could not start before its deadline if added at now:
// the deadline has passed, or the job's debounce moves its start past it.
func checkStart(j *job.Job, now time.Time) error {
	d := j.Deadline()
	switch {
	case d.IsZero():
		return nil
	case rdb.Passed(j, now):
		return fmt.Errorf("%w: %s has passed", job.ErrInvalidDeadline, errtext.Time(d))
	case !d.After(rdb.DebouncedStart(j, now)):
		return fmt.Errorf("%w: its debounce of %v moves its start to %s, not before its deadline %s: it could never start",
			job.ErrInvalidDeadline, j.Debounce(), errtext.Time(rdb.DebouncedStart(j, now)), errtext.Time(d))
	}
	return nil
}

// ensureDeadlineIndex creates the table's index of start deadlines the first time this
// queue adds a job with one (rdb.IndexDeadline: a table whose jobs have none never pays
// for it). It does not wait for the index, and a failure (no permission to create
// indexes, say) only means that such jobs are cancelled by the workers that read them
// late rather than by a Queue Master on time: it is logged, and not tried again.
func (q *Queue) ensureDeadlineIndex(ctx context.Context, jobs []*job.Job) {
	if q.deadlineIndex.Load() || !slices.ContainsFunc(jobs, func(j *job.Job) bool { return !j.Deadline().IsZero() }) {
		return
	}
	if err := q.db.EnsureDeadlineIndex(ctx); err != nil {
		if ctx.Err() != nil {
			return // try again on the next add
		}
		q.log.Warn("creating the index of start deadlines failed: jobs past their deadline are cancelled when a worker reads them, not by a Queue Master within a second",
			"index", rdb.IndexDeadline, "err", err)
	}
	q.deadlineIndex.Store(true)
	q.deadlineSeen()
}

// ensureSequences creates the table's index of sequences, and the side table of running
// slots, the first time this queue adds a job of a sequence (rdb.IndexSequence: a table
// whose jobs have none never pays for it). Without them no worker of this library starts
// a job of a sequence, so a failure fails the add: nothing is written.
func (q *Queue) ensureSequences(ctx context.Context, jobs []*job.Job) error {
	if q.sequenceIndex.Load() || !slices.ContainsFunc(jobs, func(j *job.Job) bool { return j.Sequence() != "" }) {
		return nil
	}
	if err := q.assertSide(ctx, rdb.SlotsSuffix); err != nil {
		return err
	}
	if err := q.db.EnsureSequenceIndex(ctx); err != nil {
		return fmt.Errorf("queue %s: create the index of sequences %s, which the jobs of sequences need: %w", q.cfg.Name, rdb.IndexSequence, err)
	}
	q.sequenceIndex.Store(true)
	return nil
}

// maxTailKeys bounds the sequences whose last job one AddJob reads: each costs the server
// a range read (about 0.7 ms of CPU on RethinkDB 2.4.4), so an add of jobs of more keys
// stamps those of the first maxTailKeys keys only; the others' turns are read from the
// index by the claims, as for a job without the stamp.
const maxTailKeys = 1000

// sequenceTails reads the last unfinished job of each sequence of jobs (rdb.SequenceTails)
// for newBatch; nil when jobs have none, and when it cannot be read: the jobs are then
// added without the id of the job ahead (a claim asks the index of sequences instead, at
// a range read a key).
func (q *Queue) sequenceTails(ctx context.Context, jobs []*job.Job) map[string]rdb.SequenceTail {
	var keys []string
	seen := make(map[string]bool)
	for _, j := range jobs {
		if s := j.Sequence(); s != "" && !seen[s] && len(keys) < maxTailKeys {
			seen[s] = true
			keys = append(keys, s)
		}
	}
	if len(keys) == 0 {
		return nil
	}
	tails, err := q.db.SequenceTails(ctx, keys)
	if errors.Is(err, rdb.ErrNoSequenceIndex) && q.tailsWaited.CompareAndSwap(false, true) {
		// Most often made by this very add (ensureSequences), on a table that holds no job
		// of a sequence yet: built in moments. Waited for once, a second at most.
		deadline := time.Now().Add(time.Second)
		for errors.Is(err, rdb.ErrNoSequenceIndex) && time.Now().Before(deadline) {
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(25 * time.Millisecond):
			}
			tails, err = q.db.SequenceTails(ctx, keys)
		}
	}
	if err != nil {
		if !errors.Is(err, rdb.ErrNoSequenceIndex) {
			q.log.Warn("reading the last job of each sequence failed; the jobs are added without it, and their turns are read from the index", "err", err)
		}
		return nil
	}
	return tails
}

// sequencePlaces hands out the places of jobs in their sequences: microseconds since the
// epoch, increasing within the process, so that jobs added in one call, or in a burst,
// keep the order they were added in (a time in the table keeps milliseconds only).
var sequencePlaces struct {
	sync.Mutex
	last int64
}

func sequencePlace() int64 {
	now := time.Now().UnixMicro()
	sequencePlaces.Lock()
	defer sequencePlaces.Unlock()
	if now <= sequencePlaces.last {
		now = sequencePlaces.last + 1
	}
	sequencePlaces.last = now
	return now
}
