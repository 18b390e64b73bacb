package changefeed

import (
	"context"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// logLengthField holds, in a document of a queue's feed (see FollowQueue), the length of
// the job's log, which the feed leaves out; lastMessageField, for a cancelled job, the
// message of its last log entry (the cancel's reason), and for a failed or terminated
// one, its error message (else its message).
const (
	logLengthField   = "rjqFeedLogLength"
	lastMessageField = "rjqFeedLastMessage"
)

// FollowQueue is Follow for the queue self: it follows only the changes Classify does not
// ignore as self's own, and with each document's data, result and log (the bulk of a job)
// left out on the server, and the log's length in their place. Every worker of a table
// follows every change of every job; sending each whole, for it to drop most of them,
// cost the server and the worker more than the changes themselves.
func FollowQueue(ctx context.Context, s r.QueryExecutor, table r.Term, self string, opts r.RunOpts, subscribed func(), handle func(Change)) error {
	return follow(ctx, s, queueFeed(table, self), opts, subscribed, handle)
}

// queueFeed is the feed FollowQueue follows.
func queueFeed(table r.Term, self string) r.Term {
	return projected(table.Changes().Filter(func(ch r.Term) r.Term {
		// A deletion (no new value) passes: it does not say who made it.
		doc := ch.Field("new_val").Default(nil)
		return r.Branch(doc.TypeOf().Eq("OBJECT"), doc.Field("queueId").Default(nil).Ne(self), true)
	}))
}

// projected is feed with both sides of each change projected (see project).
func projected(feed r.Term) r.Term {
	return feed.Map(func(ch r.Term) any {
		return map[string]any{
			"old_val": project(ch.Field("old_val").Default(nil)),
			"new_val": project(ch.Field("new_val").Default(nil)),
		}
	})
}

// project leaves out of doc what classifying a change never reads. Every step holds on a
// document written by hand, whatever its fields hold: an error here would end the feed.
func project(doc r.Term) r.Term {
	log := doc.Field("log").Default(nil)
	isLog := log.TypeOf().Eq("ARRAY")
	last := log.Nth(-1)
	return r.Branch(doc.TypeOf().Eq("OBJECT"),
		doc.Without("data", "result", "log").Merge(map[string]any{
			logLengthField: r.Branch(isLog, log.Count(), 0),
			lastMessageField: r.Do(doc.Field("status").Default(nil), func(status r.Term) any {
				text := func(field string) r.Term {
					v := r.Branch(last.TypeOf().Eq("OBJECT"), last.Field(field).Default(nil), nil)
					return r.Branch(v.TypeOf().Eq("STRING"), v, nil)
				}
				hasLast := isLog.And(r.Branch(isLog, log.Count().Gt(0), false))
				return r.Branch(
					status.Eq("cancelled").And(hasLast), text("message"),
					status.Eq("failed").Or(status.Eq("terminated")).And(hasLast), r.Branch(text("errorMessage").Ne(nil).And(text("errorMessage").Ne("")), text("errorMessage"), text("message")),
					nil)
			}),
		}),
		doc)
}
