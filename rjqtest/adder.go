package rjqtest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// Adder is a queue.Adder in memory, for unit tests of code that adds jobs (a web handler
// that takes a *queue.Queue as a queue.Adder, say), with no server. AddJob checks the jobs
// as a queue's does and refuses what it refuses (invalid jobs, nil jobs, an id given
// twice or added before), keeps a unique key's job as a queue does (a second add of the
// key returns the first job, marked Duplicate, while it is unfinished or within its
// SetUniqueFor window; SetDebounce replaces a waiting one; a job's parents must be in the
// call or added before), and records the jobs as a queue stores them: waiting (a job with
// parents blocked, since nothing completes in the Adder), with the "Job added to the
// queue" log entry, their payloads in
// their stored form (json names, numbers as float64), which DataAs decodes. Safe for
// concurrent use.
type Adder struct {
	opts job.Options

	mu   sync.Mutex
	jobs []*job.Job
	byID map[string]*job.Job
	err  error
}

var _ queue.Adder = (*Adder)(nil)

// NewAdder returns an empty Adder whose CreateJob gives jobs these options (nil: the
// defaults, as a queue's Options.JobOptions).
func NewAdder(opts *job.Options) *Adder {
	o := job.DefaultOptions()
	if opts != nil {
		o = opts.WithDefaults()
	}
	return &Adder{opts: o, byID: map[string]*job.Job{}}
}

// CreateJob returns a new job with the Adder's job options and data as its payload.
func (a *Adder) CreateJob(data any) *job.Job { return job.New(data, a.opts) }

// FailWith makes every later AddJob return err (wrapped) and add nothing, as a queue
// whose server is down would; nil adds again.
func (a *Adder) FailWith(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.err = err
}

// AddJob adds jobs as Queue.AddJob does, in memory: see Adder.
func (a *Adder) AddJob(ctx context.Context, jobs ...*job.Job) ([]*job.Job, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := queue.CheckJobs(jobs...); err != nil {
		return nil, err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.err != nil {
		return nil, fmt.Errorf("rjqtest.Adder: %w", a.err)
	}
	var exists []string
	for _, j := range jobs {
		if _, ok := a.byID[j.ID]; ok && j.UniqueKey() == "" {
			exists = append(exists, j.ID)
		}
	}
	if len(exists) > 0 {
		return nil, fmt.Errorf("%w: %v", job.ErrExists, exists)
	}
	if err := a.checkParents(jobs); err != nil {
		return nil, err
	}
	stored := make([]*job.Job, len(jobs))
	for i, j := range jobs {
		s, err := a.store(j)
		if err != nil {
			return nil, err
		}
		stored[i] = s
	}
	out := make([]*job.Job, len(jobs))
	for i, j := range jobs {
		if other, ok := a.byID[j.ID]; ok && rdb.KeepsPlace(other, j, time.Now()) {
			out[i] = cloneJob(other) // the unique key's job, unfinished or within its window
			out[i].MarkDuplicate()
			continue
		}
		a.byID[j.ID] = stored[i]
		a.jobs = slices.DeleteFunc(a.jobs, func(o *job.Job) bool { return o.ID == j.ID })
		a.jobs = append(a.jobs, stored[i])
		j.Status, j.Log, j.QueueID, j.DateEnable = stored[i].Status, slices.Clone(stored[i].Log), QueueID, stored[i].DateEnable
		out[i] = j
	}
	return out, nil
}

// store is j as a queue stores it.
func (a *Adder) store(j *job.Job) (*job.Job, error) {
	s, err := storedJob(j)
	if err != nil {
		return nil, fmt.Errorf("job %s: %w", j.ID, err)
	}
	s.Attach(nil)
	s.QueueID = QueueID
	message := job.MessageAdded
	if s.Status == job.Created {
		s.Status = job.Waiting
		s.DateEnable = rdb.DebouncedStart(s, time.Now())
		if len(s.DependsOn()) > 0 {
			// Its parents never complete in the Adder: it stays blocked, as in a queue.
			s.Status, message = job.Blocked, job.MessageAddedBlocked
		}
	}
	s.Log = append(s.Log, rdb.NewLog(s, QueueID, nil, message, job.Information, s.Status))
	return s, nil
}

// checkParents refuses, as a queue does, a job whose parents are neither in the call nor
// added before.
func (a *Adder) checkParents(jobs []*job.Job) error {
	inCall := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		inCall[j.ID] = true
	}
	var missing []string
	for _, j := range jobs {
		for _, p := range j.DependsOn() {
			if _, added := a.byID[p]; !added && !inCall[p] && !slices.Contains(missing, p) {
				missing = append(missing, p)
			}
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: not in this call nor added before: %v", job.ErrInvalidDependsOn, missing)
	}
	return nil
}

// cloneJob is a copy of j that shares no log or fields with it (payloads in the Adder
// are in their stored form, which nobody changes in place).
func cloneJob(j *job.Job) *job.Job {
	c := *j
	c.Log = slices.Clone(j.Log)
	if j.Fields != nil {
		c.Fields = make(map[string]any, len(j.Fields))
		for k, v := range j.Fields {
			c.Fields[k] = v
		}
	}
	return &c
}

// Jobs returns copies of the jobs added, in the order they were first added.
func (a *Adder) Jobs() []*job.Job {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make([]*job.Job, len(a.jobs))
	for i, j := range a.jobs {
		out[i] = cloneJob(j)
	}
	return out
}

// Named returns copies of the jobs added with this name, in the order they were added.
func (a *Adder) Named(name string) []*job.Job {
	return slices.DeleteFunc(a.Jobs(), func(j *job.Job) bool { return j.Name != name })
}
