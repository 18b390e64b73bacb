package dbinit

import (
	"context"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// withReplicasOfBeside returns t with Replicas set, for a side table to be created
// beside the queue's table t.Beside, to the replica count of that table's first shard.
// A side table of one replica on a cluster is lost with its server: a queue whose table
// has three replicas would go on without its workers, schedules, limits or counts. When
// the count cannot be read (a server without table configurations, such as reqlite), t
// keeps the server's default.
func (t Target) withReplicasOfBeside(ctx context.Context) Target {
	if t.Beside == "" || t.Replicas > 0 {
		return t
	}
	opts := t.RunOpts
	opts.Context = ctx
	var n []int
	term := r.DB(t.DB).Table(t.Beside).Config().Field("shards").Nth(0).Field("replicas").Count()
	if err := readAll(ctx, t.Session, opts, term, &n); err == nil && len(n) == 1 && n[0] > 1 {
		t.Replicas = n[0]
	}
	return t
}
