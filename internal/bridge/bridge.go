// Package bridge gives the library's storage layer (internal/rdb) the parts of a job that
// package job keeps from its users: the store a job saves itself through, and what a
// stored log entry carries beyond LogEntry's fields. Package job installs the accessors
// in its init, so they are set before any job exists; internal/rdb installs DecodeData.
//
// The accessors take and return any because package job imports this package, not the
// other way round; each documents the concrete type it expects.
package bridge

// OptionalFields records which optional fields a stored log entry carries, so that an
// entry read from the database is written back with the same fields.
type OptionalFields uint8

// The optional fields of a log entry.
const (
	HasDuration OptionalFields = 1 << iota
	HasErrorMessage
	HasErrorStack
	// NoData marks an entry stored without a "data" field, as the original stores its
	// claim and cancel entries; it is written back without one while its Data is nil.
	NoData
)

// LogMeta is what a stored log entry carries beyond job.LogEntry's exported fields.
type LogMeta struct {
	Has OptionalFields
	// Extra holds the fields package job does not know (the Master's entries carry
	// "dateEnable", for one), written back untouched.
	Extra map[string]any
}

// Set by package job.
var (
	// LogMetaOf returns the meta of a *job.LogEntry, for reading and writing.
	LogMetaOf func(entry any) *LogMeta
	// SetStore attaches a *job.Job to the store that saves it (it must have the methods
	// of job's unexported saver interface); a nil store detaches it.
	SetStore func(j any, store any)
)

// DecodeData decodes a value as the driver gives or takes it into the pointer v. Set by
// internal/rdb, which owns the driver's encoding; package job falls back to encoding/json
// when no queue is linked into the program.
var DecodeData func(value, v any) error
