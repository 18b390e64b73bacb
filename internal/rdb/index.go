package rdb

import r "gopkg.in/rethinkdb/rethinkdb-go.v6"

// The five secondary indexes of a queue's table, by the names the Node.js library uses.
const (
	IndexActiveDateEnable            = "indexActiveDateEnable"
	IndexInactivePriorityDateCreated = "indexInactivePriorityDateCreated"
	IndexFinishedDateFinished        = "indexFinishedDateFinished"
	IndexName                        = "name"
	IndexStatus                      = "status"
)

// IndexClaim is this library's own index (see dbinit.IndexClaim for why): waiting and
// failed jobs by [priority, dateEnable, dateCreated, id], keys that never tie.
const IndexClaim = "rjqIndexClaim"

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
	case IndexClaim:
		return func(row r.Term) any {
			key := []any{row.Field("priority"), row.Field("dateEnable"), row.Field("dateCreated"), row.Field("id")}
			return r.Branch(
				row.Field("status").Eq("waiting"), key,
				row.Field("status").Eq("failed"), key,
				nil)
		}
	}
	return nil
}
