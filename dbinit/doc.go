// Package dbinit makes sure a queue's database, table and indexes exist before the queue
// uses them, in the exact form the Node.js rethinkdb-job-queue library creates them, so that
// queues in either language can share one table. Beside the original's five indexes it
// creates one of this library's own, IndexClaim, which the Node.js library ignores.
//
// Many queues may start at once against a fresh server or cluster. Each waits a randomized
// delay first (Delay), and every create step treats "already exists" as success. RethinkDB
// does not serialize the creation of a database or a table of one name, so racers can
// still make twins; Assert finds them in the system tables and merges them into the one
// with the lowest id, which every racer agrees on. The racers end with one database, one
// table and one of each index, and none of them fails.
//
// A queue calls all of this itself. Users call Assert to create a queue's table ahead of
// time, with an account allowed to (workers may then run with one that is not); the index
// names are the database format, for tools that read a table directly; Delay is the init
// delay rule, for code that starts queues in bulk.
package dbinit
