package rdb

import (
	r "gopkg.in/rethinkdb/rethinkdb-go.v6"

	"github.com/rjqgo/rethinkdb-job-queue/internal/docfmt"
)

// The five secondary indexes of a queue's table, by the names the Node.js library uses.
const (
	IndexActiveDateEnable            = "indexActiveDateEnable"
	IndexInactivePriorityDateCreated = "indexInactivePriorityDateCreated"
	IndexFinishedDateFinished        = "indexFinishedDateFinished"
	IndexName                        = "name"
	IndexStatus                      = "status"
)

// IndexClaim is this library's own index (see dbinit.IndexClaim for why): waiting and
// failed jobs by [-priority, -dateEnable, -dateCreated, id] (times as epoch seconds),
// keys that never tie, read in descending order: highest priority, then oldest
// dateEnable, then oldest dateCreated first.
const IndexClaim = "rjqIndexClaimDesc"

// LegacyIndexClaim is the ascending claim index of earlier versions, which this library
// no longer creates or reads. A table that has it pays for it on every write; drop it
// once no worker of an earlier version runs.
const LegacyIndexClaim = "rjqIndexClaim"

// IndexDeadline is this library's index of start deadlines (job.SetDeadline): the
// waiting and failed jobs that have one, by it; a Queue Master reads the deadlines that
// have passed from it every second. Only jobs with a deadline are in it, but every write
// of every job evaluates its function: measured with rjqbench on RethinkDB 2.4.4, about
// 15 % more server CPU per job added or processed. So it is not one of Indexes: a queue
// creates it when it first adds a job with a deadline (EnsureDeadlineIndex), and nothing
// waits for it; what reads it does without it while it is missing or being built.
const IndexDeadline = "rjqIndexDeadline"

// IndexSequence is this library's index of sequences (job.SetSequence): the jobs of a
// sequence that are not finished (waiting, active or failed), by [key, place, id]; the
// first of a key is the one that may run (SequenceHeads). Like IndexDeadline it is made by
// the first AddJob of a job with a sequence (EnsureSequenceIndex), so that a table whose
// jobs have none never pays for it.
const IndexSequence = "rjqIndexSequence"

// unreadableKey is the key part of a field the claim index cannot read (a priority that
// is not a number, a date that is not a time): the highest there is, so that such a job
// comes first in a claim read, which reports it and sets it aside instead of never seeing
// it.
const unreadableKey = 1e300

// Indexes lists the index names in the order they are created: the Node.js library's five,
// then IndexClaim.
var Indexes = []string{
	IndexActiveDateEnable,
	IndexInactivePriorityDateCreated,
	IndexFinishedDateFinished,
	IndexName,
	IndexStatus,
	IndexClaim,
}

// IndexFunc returns the function of a named index; nil for a simple field index. The
// functions are the Node.js library's, term for term: an index of the same name must never
// hold other keys, or the two libraries would read each other's tables wrongly.
func IndexFunc(name string) func(row r.Term) any {
	switch name {
	case IndexActiveDateEnable:
		return func(row r.Term) any {
			return r.Branch(row.Field("status").Eq("active"), row.Field("dateEnable"), nil)
		}
	case IndexInactivePriorityDateCreated:
		return func(row r.Term) any {
			key := []any{row.Field("priority"), row.Field("dateEnable"), row.Field("dateCreated")}
			return r.Branch(
				row.Field("status").Eq("waiting"), key,
				row.Field("status").Eq("failed"), key,
				nil)
		}
	case IndexFinishedDateFinished:
		return func(row r.Term) any {
			return r.Branch(
				row.Field("status").Eq("completed"), row.Field("dateFinished"),
				row.Field("status").Eq("cancelled"), row.Field("dateFinished"),
				row.Field("status").Eq("terminated"), row.Field("dateFinished"),
				nil)
		}
	case IndexDeadline:
		return func(row r.Term) any {
			deadline := fieldOr(row, docfmt.Deadline, nil)
			live := row.Field("status").Eq("waiting").Or(row.Field("status").Eq("failed"))
			return r.Branch(deadline.TypeOf().Eq("PTYPE<TIME>").And(live), deadline, nil)
		}
	case IndexSequence:
		return func(row r.Term) any {
			key, at := fieldOr(row, docfmt.Sequence, nil), fieldOr(row, docfmt.SequenceAt, nil)
			status := row.Field("status")
			live := status.Eq("waiting").Or(status.Eq("active")).Or(status.Eq("failed"))
			return r.Branch(key.TypeOf().Eq("STRING").And(at.TypeOf().Eq("NUMBER")).And(live), []any{key, at, row.Field("id")}, nil)
		}
	case IndexClaim:
		return func(row r.Term) any {
			neg := func(field, typ string, num func(r.Term) r.Term) r.Term {
				v := row.Field(field).Default(nil)
				return r.Branch(v.TypeOf().Eq(typ), num(v).Mul(-1), unreadableKey)
			}
			number := func(v r.Term) r.Term { return v }
			epoch := func(v r.Term) r.Term { return v.ToEpochTime() }
			key := []any{neg("priority", "NUMBER", number), neg("dateEnable", "PTYPE<TIME>", epoch), neg("dateCreated", "PTYPE<TIME>", epoch), row.Field("id")}
			return r.Branch(
				row.Field("status").Eq("waiting"), key,
				row.Field("status").Eq("failed"), key,
				nil)
		}
	}
	return nil
}
