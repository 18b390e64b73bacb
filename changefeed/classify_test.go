package changefeed

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

const (
	self  = "host:db:q:1:self"
	other = "host:db:q:2:other"
	id    = "5127d082-fe7e-4e88-b1de-7093029695c3"
)

// doc is a job document as the feed delivers it, changed by other unless set otherwise.
func doc(fields map[string]any) map[string]any {
	d := map[string]any{
		"id": id, "queueId": other, "dateCreated": time.Unix(0, 0), "priority": float64(40),
		"status": "waiting", "progress": float64(0), "repeat": false, "processCount": float64(0),
		"log": []any{map[string]any{}},
	}
	for k, v := range fields {
		d[k] = v
	}
	return d
}

func state(s, by string) map[string]any {
	return map[string]any{"id": job.StateDocumentID, "queueId": by, "state": s}
}

func twoLogs() []any { return []any{map[string]any{}, map[string]any{}} }

func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change Change
		want   Action
	}{
		{"added", Change{New: doc(nil)}, Action{Kind: Added, QueueID: other, JobID: id, Claimable: true}},
		{"added by self", Change{New: doc(map[string]any{"queueId": self})}, Action{}},
		{"added blocked (a job of a workflow) is added, not claimable", Change{New: doc(map[string]any{"status": "blocked"})},
			Action{Kind: Added, QueueID: other, JobID: id}},
		{"released: blocked, then waiting", Change{Old: doc(map[string]any{"status": "blocked"}), New: doc(nil)},
			Action{Kind: Released, QueueID: other, JobID: id, Claimable: true}},
		{"a blocked job cancelled", Change{Old: doc(map[string]any{"status": "blocked"}), New: doc(map[string]any{"status": "cancelled"})},
			Action{Kind: Cancelled, QueueID: other, JobID: id}},
		{"a unique key's finished job replaced is added, not progress", Change{
			Old: doc(map[string]any{"status": "completed", "progress": float64(100)}),
			New: doc(map[string]any{"dateCreated": time.Unix(60, 0)})},
			Action{Kind: Added, QueueID: other, JobID: id, Claimable: true}},
		{"a waiting job debounced (replaced, waiting) is added", Change{
			Old: doc(nil), New: doc(map[string]any{"dateCreated": time.Unix(60, 0), "log": twoLogs()})},
			Action{Kind: Added, QueueID: other, JobID: id, Claimable: true}},
		{"active", Change{Old: doc(nil), New: doc(map[string]any{"status": "active", "processCount": float64(1)})},
			Action{Kind: Active, QueueID: other, JobID: id, ProcessCount: 1, Active: true}},
		{"progress", Change{Old: doc(map[string]any{"status": "active"}), New: doc(map[string]any{"status": "active", "progress": float64(40)})},
			Action{Kind: Progress, QueueID: other, JobID: id, Progress: 40, Active: true}},
		{"completed wins over its progress change", Change{
			Old: doc(map[string]any{"status": "active", "progress": float64(0)}),
			New: doc(map[string]any{"status": "completed", "progress": float64(100)})},
			Action{Kind: Completed, QueueID: other, JobID: id}},
		{"completed, repeating", Change{
			Old: doc(map[string]any{"status": "active"}),
			New: doc(map[string]any{"status": "completed", "repeat": true, "progress": float64(100)})},
			Action{Kind: Completed, QueueID: other, JobID: id, IsRepeating: true}},
		{"completed, repeat count not used up", Change{
			Old: doc(map[string]any{"status": "active"}),
			New: doc(map[string]any{"status": "completed", "repeat": float64(2), "processCount": float64(2)})},
			Action{Kind: Completed, QueueID: other, JobID: id, IsRepeating: true, ProcessCount: 2}},
		{"cancelled", Change{Old: doc(map[string]any{"status": "active"}), New: doc(map[string]any{"status": "cancelled"})},
			Action{Kind: Cancelled, QueueID: other, JobID: id}},
		{"failed", Change{Old: doc(map[string]any{"status": "active", "progress": float64(30)}), New: doc(map[string]any{"status": "failed"})},
			Action{Kind: Failed, QueueID: other, JobID: id, Claimable: true}},
		{"terminated", Change{Old: doc(map[string]any{"status": "active"}), New: doc(map[string]any{"status": "terminated"})},
			Action{Kind: Terminated, QueueID: other, JobID: id}},
		{"failed, with its run's error from the log", Change{Old: doc(map[string]any{"status": "active"}), New: doc(map[string]any{"status": "failed",
			"log": []any{map[string]any{}, map[string]any{"message": job.MessageFailed, "errorMessage": "disk full"}}})},
			Action{Kind: Failed, QueueID: other, JobID: id, Claimable: true, Reason: "disk full"}},
		{"terminated, with its run's error as the projected feed sends it", Change{Old: doc(map[string]any{"status": "active"}),
			New: doc(map[string]any{"status": "terminated", lastMessageField: "disk full"})},
			Action{Kind: Terminated, QueueID: other, JobID: id, Reason: "disk full"}},
		{"terminated by a review: the entry's message, which has no error", Change{Old: doc(map[string]any{"status": "active"}),
			New: doc(map[string]any{"status": "terminated", "log": []any{map[string]any{"message": "its worker stopped answering"}}})},
			Action{Kind: Terminated, QueueID: other, JobID: id, Reason: "its worker stopped answering"}},
		{"log", Change{Old: doc(nil), New: doc(map[string]any{"log": twoLogs()})}, Action{Kind: Log, QueueID: other, JobID: id}},
		{"back to waiting with a log entry is a log change, and claimable", Change{
			Old: doc(map[string]any{"status": "cancelled"}), New: doc(map[string]any{"status": "waiting", "log": twoLogs()})},
			Action{Kind: Log, QueueID: other, JobID: id, Claimable: true}},
		{"a waiting job that stays waiting is not claimable again", Change{
			Old: doc(nil), New: doc(map[string]any{"log": twoLogs()})},
			Action{Kind: Log, QueueID: other, JobID: id}},
		{"nothing the rules cover", Change{Old: doc(nil), New: doc(map[string]any{"name": "renamed"})}, Action{QueueID: other, JobID: id}},
		{"changed by self", Change{Old: doc(nil), New: doc(map[string]any{"status": "active", "queueId": self})}, Action{}},
		{"removed", Change{Old: doc(map[string]any{"processCount": float64(3)})}, Action{Kind: Removed, JobID: id, ProcessCount: 3}},
		{"removed after self changed it last", Change{Old: doc(map[string]any{"queueId": self})}, Action{Kind: Removed, JobID: id}},
		{"no queue id", Change{New: doc(map[string]any{"queueId": nil})}, Action{}},
		{"not a job: bad id", Change{New: doc(map[string]any{"id": "x"})}, Action{QueueID: other, JobID: "x"}},
		{"not a job: unknown status", Change{New: doc(map[string]any{"status": "disabled"})}, Action{QueueID: other, JobID: id}},
		{"state paused", Change{New: state("paused", other)}, Action{Kind: Paused, QueueID: other}},
		{"state active", Change{Old: state("paused", other), New: state("active", other)}, Action{Kind: Resumed, QueueID: other}},
		{"state reviewed", Change{New: state("reviewed", other)}, Action{Kind: Reviewed, QueueID: other}},
		{"state unknown", Change{New: state("sleepy", other)}, Action{Kind: InvalidState, QueueID: other}},
		{"state by self", Change{New: state("paused", self)}, Action{}},
		{"state deleted", Change{Old: state("paused", other)}, Action{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Classify(tc.change, self))
		})
	}
}
