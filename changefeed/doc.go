// Package changefeed follows a queue's table and tells what each change means, so that a
// queue raises the events of the other queues (other processes, other languages) working on
// the same table, and follows the State Document.
//
// Classify is the original library's change → event rules as a pure function; Follow runs
// the changefeed. A feed is a hint, never the only way work gets done: a change lost while
// the feed was down is made up for by the queue's own wake-ups and the Master's review.
//
// A queue calls both itself (Queue.Events delivers the result): FollowWorker while no
// listener asks for other queues' job events, FollowQueue while one does. A tool that
// watches a table without running a queue can call Follow and Classify directly.
package changefeed
