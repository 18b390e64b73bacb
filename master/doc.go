// Package master is the Queue Master's review of a queue's table, the original library's
// safety net for a distributed queue:
//
//   - orphaned jobs: active jobs whose dateEnable has passed, because the process running
//     them crashed or hung, are failed (retries left) or terminated;
//   - finished jobs older than the retention period are removed;
//   - the State Document is set to "reviewed", which every queue on the table follows by
//     claiming again, so delayed jobs are not forgotten on a quiet queue.
//
// Every step is a guarded update or an index range delete, so several masters reviewing
// one table at once do no harm. The queries are the library's storage layer's; this
// package composes them, and package queue decides when.
//
// A Queue Master runs Review on its interval (Services) by itself, and Queue.Review runs it
// once. Review is exported for tools that review a table without a queue of their own.
package master
