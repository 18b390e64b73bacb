// Package payload is how a job's payload, a handler's result and a log entry's data are
// stored and read back: by encoding/json's naming rules, with RethinkDB's own types kept.
//
// Encode turns a Go value into the tree the driver writes (nil, bool, float64, string,
// []any, map[string]any, time.Time, []byte): a struct becomes an object keyed by its json
// names (the `json` tag; `-`, omitempty, omitzero and `,string` as encoding/json reads
// them; embedded structs promoted; json.Marshaler and encoding.TextMarshaler called), and
// where a `rethinkdb` (or `gorethink`) tag is present it wins, so that structs written for
// rethinkdb-go keep their names. Two differences from encoding/json, both RethinkDB's
// native types: a time.Time stays a time (a RethinkDB TIME, a Date in Node.js), the zero
// time is stored as null (omitted under omitempty or omitzero), and a []byte stays binary.
// Encode also refuses what a document cannot hold exactly, naming where: NaN, infinities,
// integers beyond ±2^53, invalid UTF-8, times outside the years 1678 to 2261, funcs,
// channels, cycles.
//
// Decode reads a stored tree into a Go value by the same names. For documents written
// before names followed the json tag (by Go field name), a key that matches no json name
// is matched case-insensitively, then by the field's Go name.
package payload
