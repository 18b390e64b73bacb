package queue

import (
	"context"
	"fmt"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Summary counts the queue's jobs by status.
//
// Its JSON form has the lower-case keys of `rjq summary --json` ({"waiting":7,…,"total":7},
// "finishedAsOf" only when the finished counts are estimates), so that tools print it as
// it is.
type Summary struct {
	Waiting    int `json:"waiting"`
	Active     int `json:"active"`
	Completed  int `json:"completed"`
	Cancelled  int `json:"cancelled"`
	Failed     int `json:"failed"`
	Terminated int `json:"terminated"`
	// Total counts every job: with exact counts (FinishedAsOf zero), including those with
	// a status of none of the above (a job "disabled" by setting an unknown status, for
	// one); otherwise the sum of the seven.
	Total int `json:"total"`
	// FinishedAsOf is zero when every count is exact. Otherwise Completed, Cancelled and
	// Terminated come from the Queue Master's tally (see Queue.Summary) and count the jobs
	// that finished before this time: show them as estimates ("≈").
	FinishedAsOf time.Time `json:"finishedAsOf,omitzero"`
	// FinishedUnknown is true on a big table (see Queue.Summary) that no Queue Master has
	// tallied yet: the finished jobs have not been counted, so Completed, Cancelled and
	// Terminated are 0, FinishedEstimate is the server's estimate of their sum (its
	// document count estimate less the live jobs, which are exact), and Total is the live
	// jobs plus that estimate. A Master's first tally counts them in the background.
	FinishedUnknown  bool `json:"finishedUnknown,omitempty"`
	FinishedEstimate int  `json:"finishedEstimate,omitempty"`
	// Blocked counts the jobs of workflows waiting for their parents (job.SetDependsOn),
	// apart from Waiting; left out of the JSON form when 0, as a queue without workflows
	// has none.
	Blocked int `json:"blocked,omitempty"`
}

// String formats s as %+v would, leaving out FinishedAsOf when the counts are exact:
// "{Waiting:0 Active:0 Completed:1 Cancelled:0 Failed:0 Terminated:0 Total:1}".
func (s Summary) String() string {
	out := fmt.Sprintf("{Waiting:%d Active:%d Completed:%d Cancelled:%d Failed:%d Terminated:%d Total:%d",
		s.Waiting, s.Active, s.Completed, s.Cancelled, s.Failed, s.Terminated, s.Total)
	if s.Blocked > 0 {
		out += fmt.Sprintf(" Blocked:%d", s.Blocked)
	}
	if !s.FinishedAsOf.IsZero() {
		out += " FinishedAsOf:" + s.FinishedAsOf.UTC().Format(time.RFC3339)
	}
	if s.FinishedUnknown {
		out += fmt.Sprintf(" FinishedUnknown:true FinishedEstimate:%d", s.FinishedEstimate)
	}
	return out + "}"
}

// Summary counts the queue's jobs by status, cheaply at any table size:
//
//   - waiting, active, failed and blocked jobs are counted exactly, through the status index: they
//     are bounded by live work;
//   - finished jobs (completed, cancelled, terminated) are read from the tally that Queue
//     Masters keep (every queue is one by default; see Options.MasterInterval) in the
//     side table "<queue>_stats": counted once, in bounded steps, as they finish, and
//     taken off as retention removes them. It lags the clock by up to about 15 seconds
//     (FinishedAsOf says by how much), and drifts when finished jobs are reanimated or
//     removed by other means (RemoveJob, Reset, a Node.js worker) until a new tally; on a
//     table never tallied, the first tally counts what is there in the background.
//
// A table of fewer than about ten thousand jobs is counted exactly, as one grouped count.
// A bigger one that no Queue Master has tallied yet (a queue Node.js workers filled,
// adopted before a Go Master ran) is not scanned either: its finished jobs are
// FinishedUnknown, with FinishedEstimate from the table's metadata, until the first
// tally, which one Master builds in bounded slices in the background (2 to 5 minutes a
// million jobs on RethinkDB 2.4.4 on two cores, pausing between slices so that processing
// goes on at its pace); while it runs, FinishedAsOf says how far it has counted, the
// Master logs its progress at Info level, and the dashboard shows it. So Summary costs a
// few index reads at any size.
func (q *Queue) Summary(ctx context.Context) (Summary, error) {
	c, err := q.e.Summary(ctx)
	if err != nil {
		return Summary{}, publicErr(err)
	}
	return summaryOf(c), nil
}

// summaryOf is the Summary of counts: a status of another name (written by hand) counts
// in Total only.
func summaryOf(c rdb.Counts) Summary {
	n := c.ByStatus
	s := Summary{
		Waiting: n[job.Waiting], Active: n[job.Active], Completed: n[job.Completed],
		Cancelled: n[job.Cancelled], Failed: n[job.Failed], Terminated: n[job.Terminated], Blocked: n[job.Blocked],
		FinishedAsOf: c.FinishedAsOf, FinishedUnknown: c.FinishedUnknown, FinishedEstimate: c.FinishedEstimate,
	}
	for _, k := range n {
		s.Total += k
	}
	s.Total += c.FinishedEstimate
	return s
}
