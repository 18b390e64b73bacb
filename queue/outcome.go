package queue

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// finish records what the handler returned.
func (p *processor) finish(rn *run, result any, err error) {
	switch {
	case err != nil:
		if reason, ok := job.CancelReason(err); ok {
			p.cancelledByHandler(rn, reason)
			return
		}
		p.failed(rn, err)
	case result == any(rn.job):
		p.passBack(rn)
	default:
		p.completed(rn, result)
	}
}

// outcome is one run's result as it is written.
type outcome struct {
	t       job.Transition
	entry   job.LogEntry
	now     time.Time
	success bool
}

// completed records a successful run: completed with progress 100, or waiting for the next
// repeat.
func (p *processor) completed(rn *run, result any) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := job.AfterSuccess(&rn.claimed, now)
	entry := job.NewLog(&rn.claimed, p.q.id, result, job.MessageCompleted, t.LogType, t.Status).
		WithDuration(runTime(rn.claimed, now))
	p.write(rn, outcome{t: t, entry: entry, now: now, success: true})
}

// failed records a failed run: failed for a retry, waiting for the next repeat, or
// terminated.
func (p *processor) failed(rn *run, err error) {
	now := time.Now().UTC().Truncate(time.Millisecond)
	t := job.AfterFailure(&rn.claimed, now)
	claimed := rn.claimed
	claimed.RetryCount = t.RetryCount
	message, stack := err.Error(), job.MessageNoErrorStack
	var pe *PanicError
	if errors.As(err, &pe) {
		stack = string(pe.Stack)
	}
	if message == "" {
		message = job.MessageNoErrorMsg
	}
	data := map[string]any{"name": errorName(err), "message": message}
	entry := job.NewLog(&claimed, p.q.id, data, job.MessageFailed, t.LogType, t.Status).
		WithDuration(runTime(rn.claimed, now)).
		WithError(message, stack)
	p.q.log.Info("job failed", "job", rn.claimed.ID, "err", err, "status", t.Status)
	p.write(rn, outcome{t: t, entry: entry, now: now})
}

// errorName names an error's type, as the original's serialized errors carry a name.
func errorName(err error) string {
	t := reflect.TypeOf(err)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Name() == "" {
		return "Error"
	}
	return t.String()
}

func runTime(j job.Job, now time.Time) time.Duration {
	return max(now.Sub(j.DateStarted), 0)
}

// write stores a run's outcome, if the run still owns the job: status active and the
// process count of its claim. A job cancelled, failed by the Master's review or claimed
// again meanwhile is left as the other party left it.
func (p *processor) write(rn *run, o outcome) {
	q, id := p.q, rn.claimed.ID
	trunc := job.TruncatedLog(&rn.claimed, q.id, q.cfg.limitJobLogs, o.t.Status)
	update := func(row r.Term) any {
		return r.Branch(ownedBy(row, rn.claimed.ProcessCount), map[string]any{
			"status":       string(o.t.Status),
			"dateEnable":   o.t.DateEnable,
			"dateFinished": o.now,
			"retryCount":   o.t.RetryCount,
			"progress":     o.t.Progress,
			"log":          q.appendLog(row.Field("log"), o.entry.Document(), trunc.Document()),
			"queueId":      q.id,
		}, nil)
	}
	res, err := q.write(p.hard, q.table().Get(id).Update(update))
	if err != nil {
		q.log.Error("recording a job's outcome failed; the Master's review will recover the job", "job", id, "err", err)
		q.emit(Event{Type: EventError, JobID: id, Err: fmt.Errorf("queue %s: record outcome of job %s: %w", q.cfg.name, id, err)})
		return
	}
	if res.Replaced == 0 {
		q.log.Info("job changed elsewhere while it ran; its outcome is dropped", "job", id)
		return
	}
	typ := EventCompleted
	switch {
	case o.success:
	case o.t.Retry || o.t.Repeating:
		typ = EventFailed
	default:
		typ = EventTerminated
	}
	q.emit(Event{Type: typ, JobID: id, IsRepeating: o.t.Repeating})
	if o.t.Status.Finished() && q.cfg.removeImmediately() {
		if err := q.delete(p.hard, []string{id}); err != nil {
			q.emit(Event{Type: EventError, JobID: id, Err: err})
		}
	}
}

// cancelledByHandler cancels a job whose handler returned job.Cancel(reason), if the run
// still owns it.
func (p *processor) cancelledByHandler(rn *run, reason string) {
	q, id := p.q, rn.claimed.ID
	now := time.Now().UTC().Truncate(time.Millisecond)
	res, err := q.write(p.hard, q.table().Get(id).Update(func(row r.Term) any {
		return r.Branch(ownedBy(row, rn.claimed.ProcessCount), q.cancelFields(row, now, reason), nil)
	}))
	switch {
	case err != nil:
		q.emit(Event{Type: EventError, JobID: id, Err: fmt.Errorf("queue %s: cancel job %s: %w", q.cfg.name, id, err)})
	case res.Replaced == 0:
		q.log.Info("job changed elsewhere while it ran; its cancel is dropped", "job", id)
	default:
		if err := q.cancelled(p.hard, []string{id}, map[string]int{id: rn.claimed.ProcessCount}); err != nil {
			q.emit(Event{Type: EventError, JobID: id, Err: err})
		}
	}
}

// passBack saves a job its handler returned unfinished, back to waiting.
func (p *processor) passBack(rn *run) {
	q, j := p.q, rn.job
	if j.Status == job.Active {
		j.Status = job.Waiting
	}
	j.Log = append(j.Log, job.NewLog(j, q.id, map[string]any{}, job.MessagePassBack, job.Information, ""))
	e := job.NewLog(j, q.id, nil, job.MessageUpdated, job.Information, "")
	switch err := q.updateJob(p.hard, j, e, rn.claimed.ProcessCount); {
	case errors.Is(err, errNotOwned):
		q.log.Info("job changed elsewhere while it ran; it is not passed back", "job", j.ID)
	case err != nil:
		q.emit(Event{Type: EventError, JobID: j.ID, Err: err})
	}
}

// stop ends the processor for Stop: it waits for the running jobs and their handlers
// (also those that outlived their run, past a timeout) until ctx ends, and then cancels
// them with cause ErrStopped.
func (p *processor) stop(ctx context.Context) error {
	err := p.waitIdle(ctx)
	if err == nil {
		err = wait(ctx, p.handlers.Wait)
	}
	if err != nil {
		p.abort(ErrStopped)
	}
	return err
}

// dropDisowned ends the runs whose jobs are no longer theirs in the database (cancelled,
// removed, recovered by a review), as their handlers' contexts would have been had the
// feed not been down.
func (p *processor) dropDisowned(ctx context.Context) error {
	p.mu.Lock()
	runs := make([]*run, 0, len(p.running))
	ids := make([]any, 0, len(p.running))
	for rn := range p.running {
		runs = append(runs, rn)
		ids = append(ids, rn.claimed.ID)
	}
	p.mu.Unlock()
	if len(ids) == 0 {
		return nil
	}
	var docs []struct {
		ID           string `rethinkdb:"id"`
		Status       string `rethinkdb:"status"`
		ProcessCount int    `rethinkdb:"processCount"`
	}
	if err := p.q.readAll(ctx, p.q.table().GetAll(ids...).Pluck("id", "status", "processCount"), &docs); err != nil {
		return err
	}
	owned := make(map[string]int, len(docs))
	for _, d := range docs {
		if d.Status == string(job.Active) {
			owned[d.ID] = d.ProcessCount
		}
	}
	for _, rn := range runs {
		if pc, ok := owned[rn.claimed.ID]; !ok || pc != rn.claimed.ProcessCount {
			p.settle(rn, func() { rn.cancel(job.ErrCancelled) })
		}
	}
	return nil
}
