package changefeed

import (
	"context"
	"time"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// FreshClaim is how soon after a job fell due another queue's claim of it must come for
// FollowWorker to pass it: the claims that end the hints of idle queues (a job added
// elsewhere, that each idle worker hears of and waits its turn to claim), not the claims
// of a backlog.
const FreshClaim = time.Second

// FollowWorker is FollowQueue narrowed, on the server, to the changes a queue acts on when
// it raises no events of other queues' jobs: while no listener asks for them, or always
// with queue.Options.LocalEventsOnly. It passes:
//   - every new job (an insert), which a queue with free slots may claim;
//   - every change that leaves a job waiting or failed (a retry, a reanimation, a release);
//   - every change of a job self had claimed last, made elsewhere (a cancel, a review's
//     fail, a claim of a run whose lease ran out), which ends self's run of it;
//   - the deletion of a job that was not finished;
//   - the State Document (a global pause, resume or review);
//   - a status change of a job of a group, a sequence or a workflow (what frees a slot
//     or the next job's turn, or settles a workflow's children);
//   - another queue's claim of a job within FreshClaim of its falling due (which tells the
//     other idle queues to drop their hint of it).
//
// It leaves out what only events are made of: others' claims of a backlog, their
// progress, their outcomes, and the removal of finished jobs. On a table where N
// processes work, each change reaches all N feeds, which makes the feed's cost grow as N²
// (0.14 ms of server CPU per change and feed on RethinkDB 2.4.4, see docs/performance.md);
// this feed carries about one change per job in all, the insert.
func FollowWorker(ctx context.Context, s r.QueryExecutor, table r.Term, self string, opts r.RunOpts, subscribed func(), handle func(Change)) error {
	return follow(ctx, s, workerFeed(table, self), opts, subscribed, handle)
}

// workerFeed is the feed FollowWorker follows.
func workerFeed(table r.Term, self string) r.Term {
	return projected(table.Changes().Filter(func(ch r.Term) r.Term {
		return workerPasses(ch.Field("old_val"), ch.Field("new_val"), self)
	}))
}

// workerPasses is FollowWorker's test of one change, run on the server for every change
// of the table and every worker's feed: it is written to evaluate as few terms as it can
// for the changes it drops, claims and outcomes of other queues. old and doc are objects
// or null (a document is an object, whatever it holds). A field that is missing makes
// the filter drop the change (a non-existence error), where that only drops a hint of a
// garbage document; no step raises another error, which would end the feed.
func workerPasses(old, doc r.Term, self string) r.Term {
	claimable := r.Expr([]any{string(job.Waiting), string(job.Failed)})
	finished := r.Expr([]any{string(job.Completed), string(job.Cancelled), string(job.Terminated)})
	return r.Branch(
		doc.Eq(nil), // a deletion; the State Document's passes too
		old.Ne(nil).And(finished.Contains(old.Field(docfmt.Status).Default(nil)).Not()),
		doc.Field(docfmt.QueueID).Eq(self), false, // self raised it
		old.Eq(nil), true, // an insert
		doc.Field(docfmt.ID).Eq(job.StateDocumentID), true,
		claimable.Contains(doc.Field(docfmt.Status)), true,
		old.Field(docfmt.QueueID).Eq(self), true,
		doc.Field(docfmt.Status).Eq(string(job.Active)),
		old.Field(docfmt.Status).Ne(string(job.Active)).And(freshClaim(old, doc)),
		r.Or(old.HasFields(docfmt.Group), old.HasFields(docfmt.Sequence), old.HasFields(docfmt.Children)),
		doc.Field(docfmt.Status).Ne(old.Field(docfmt.Status)),
		false)
}

// freshClaim tells whether doc's claim (its dateStarted) came within FreshClaim of old's
// dateEnable.
func freshClaim(old, doc r.Term) r.Term {
	started, due := doc.Field(docfmt.DateStarted), old.Field(docfmt.DateEnable)
	return r.Branch(
		started.TypeOf().Eq("PTYPE<TIME>").And(due.TypeOf().Eq("PTYPE<TIME>")),
		started.Sub(due).Lt(FreshClaim.Seconds()),
		true)
}
