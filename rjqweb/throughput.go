package rjqweb

import (
	"context"
	"sync"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/dbinit"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// chartMinutes is how far back the dashboard's throughput chart looks.
const chartMinutes = 60

// throughput counts finished runs per minute for the dashboard's chart. It is seeded once
// from the database when the handler is made and then counted from the queue's events, so
// a page refresh reads memory and never the table, however busy the queue.
type throughput struct {
	mu      sync.Mutex
	buckets [chartMinutes]minuteCount // a ring indexed by unix minute
}

// minuteCount is one minute of the chart.
type minuteCount struct {
	Minute    int64     `json:"-"` // unix minute; the bucket is stale when it differs
	Time      time.Time `json:"time"`
	Completed int       `json:"completed"`
	Failed    int       `json:"failed"`
}

// add counts n runs that finished at t: completed ones, or failed ones (retried later or
// terminated).
func (tp *throughput) add(t time.Time, failed bool, n int) {
	m := t.Unix() / 60
	tp.mu.Lock()
	defer tp.mu.Unlock()
	b := &tp.buckets[m%chartMinutes]
	if b.Minute != m {
		*b = minuteCount{Minute: m, Time: time.Unix(m*60, 0).UTC()}
	}
	if failed {
		b.Failed += n
	} else {
		b.Completed += n
	}
}

// event counts a finished run from a queue event. A cancellation is not a run, so it does
// not count.
func (tp *throughput) event(e queue.Event, at time.Time) {
	switch e.Type {
	case queue.EventCompleted:
		tp.add(at, false, 1)
	case queue.EventFailed, queue.EventTerminated:
		tp.add(at, true, 1)
	}
}

// last returns the chart's minutes up to now's, oldest first, empty ones included.
func (tp *throughput) last(now time.Time) []minuteCount {
	end := now.Unix() / 60
	out := make([]minuteCount, 0, chartMinutes)
	tp.mu.Lock()
	defer tp.mu.Unlock()
	for m := end - chartMinutes + 1; m <= end; m++ {
		b := tp.buckets[m%chartMinutes]
		if b.Minute != m {
			b = minuteCount{Minute: m, Time: time.Unix(m*60, 0).UTC()}
		}
		out = append(out, b)
	}
	return out
}

// seed counts the runs that finished in the chart's window before until, from the jobs
// the table still holds: completed and terminated jobs through the finished index (a range
// of the last hour, not the table), and jobs failed and waiting for a retry through the
// status index (few: a retry is soon due). It runs once, in New, and reads two
// fields of each job; events count every run from then on. A job that failed and then
// completed within the hour counts once, as completed.
//
// The minutes are counted here rather than grouped on the server, and the window's bounds
// are checked here too, but for the index range's start, because reqlite, the CI's server,
// keeps times that a Go client wrote in an update as plain objects, which its time
// functions and time comparisons reject.
func (tp *throughput) seed(ctx context.Context, s *r.Session, table r.Term, until time.Time) error {
	since := until.Add(-chartMinutes * time.Minute)
	finished := table.Between(since, r.MaxVal, r.BetweenOpts{Index: dbinit.IndexFinishedDateFinished}).
		Filter(func(d r.Term) r.Term { return d.Field("status").Ne(string(job.Cancelled)) })
	// A closed range of one key rather than GetAll, which reqlite answers with nothing.
	retrying := table.Between(string(job.Failed), string(job.Failed), r.BetweenOpts{Index: dbinit.IndexStatus, RightBound: "closed"})
	var runs []struct {
		Status       string    `rethinkdb:"status"`
		DateFinished time.Time `rethinkdb:"dateFinished"`
	}
	if err := readAll(ctx, s, finished.Union(retrying).Pluck("status", "dateFinished"), &runs); err != nil {
		return err
	}
	for _, run := range runs {
		if run.DateFinished.Before(since) || !run.DateFinished.Before(until) {
			continue
		}
		tp.add(run.DateFinished, run.Status != string(job.Completed), 1)
	}
	return nil
}
