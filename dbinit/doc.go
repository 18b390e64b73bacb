// Package dbinit makes sure a queue's database, table and indexes exist before the queue
// uses them, in the exact form the Node.js rethinkdb-job-queue library creates them, so that
// queues in either language can share one table.
//
// Many queues may start at once against a fresh server. Each waits a randomized delay first
// (Delay), and every create step treats "already exists" as success, so the racers end with
// one database, one table and one of each index, and none of them fails.
package dbinit
