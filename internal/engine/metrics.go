package engine

import (
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Metrics, NamedMetrics and GroupMetrics have the methods of their namesakes in package
// queue, so that the queue's Options.Metrics serves here as it is; their docs are there.
type Metrics interface {
	JobsClaimed(queue string, n int)
	RunEnded(queue string, status job.Status, runTime time.Duration)
}

// NamedMetrics: see Metrics.
type NamedMetrics interface {
	Metrics
	RunEndedNamed(queue, name string, status job.Status, runTime time.Duration)
}

// GroupMetrics: see queue.GroupMetrics.
type GroupMetrics interface {
	Metrics
	RunEndedGrouped(queue, name, group string, status job.Status, runTime time.Duration)
}

// ExpiryMetrics: see queue.ExpiryMetrics.
type ExpiryMetrics interface {
	JobsExpired(queue string, n int)
}

// expiredMetric reports n jobs cancelled for their start deadline to Options.Metrics,
// when it counts them.
func (q *Queue) expiredMetric(n int) {
	if m, ok := q.cfg.Metrics.(ExpiryMetrics); ok && n > 0 {
		defer q.metricsPanic()
		m.JobsExpired(q.cfg.Name, n)
	}
}

// MetricName is queue.MetricName.
func MetricName(j *job.Job) string {
	if j.Name == j.ID {
		return ""
	}
	return j.Name
}

// claimedMetric reports a claim of n jobs to Options.Metrics.
func (q *Queue) claimedMetric(n int) {
	if q.cfg.Metrics != nil && n > 0 {
		defer q.metricsPanic()
		q.cfg.Metrics.JobsClaimed(q.cfg.Name, n)
	}
}

// runMetric reports the end of a run of j to Options.Metrics.
func (q *Queue) runMetric(j job.Job, status job.Status, at time.Time) {
	if q.cfg.Metrics != nil {
		defer q.metricsPanic()
		if grouped, ok := q.cfg.Metrics.(GroupMetrics); ok {
			grouped.RunEndedGrouped(q.cfg.Name, MetricName(&j), j.Group(), status, runTime(j, at))
			return
		}
		if named, ok := q.cfg.Metrics.(NamedMetrics); ok {
			named.RunEndedNamed(q.cfg.Name, MetricName(&j), status, runTime(j, at))
			return
		}
		q.cfg.Metrics.RunEnded(q.cfg.Name, status, runTime(j, at))
	}
}

// metricsPanic keeps a Metrics implementation that panics from taking the processing loop
// down: the measurement is lost and the panic logged.
func (q *Queue) metricsPanic() {
	if v := recover(); v != nil {
		q.log.Error("Options.Metrics panicked; the measurement is lost", "panic", v)
	}
}
