package job

import (
	"fmt"

	"github.com/rjqgo/rethinkdb-job-queue/internal/payload"
)

// ErrInvalidData is wrapped by the error of a payload, result, log datum or extra field
// that cannot be stored as it is; it wraps ErrInvalid.
var ErrInvalidData = fmt.Errorf("%w data", ErrInvalid)

// maxSafeInt is the largest integer a RethinkDB number (a float64) holds exactly: larger
// ones would read back as other numbers, so counts are bounded by it.
const maxSafeInt = payload.MaxSafeInt

// The times a job can carry: the driver encodes a time through its UnixNano, which holds
// these years only (a later one would be stored as another date).
var (
	minTime = payload.MinTime
	maxTime = payload.MaxTime
)

// CheckValue reports why v cannot be stored in a job document, or nil when it can. Values
// are stored by encoding/json's names (see "Payloads" in the package documentation); what
// a document cannot hold exactly is refused: a func, chan, complex number or unsafe
// pointer, a NaN or infinite float, an integer beyond ±2^53, a string that is not valid
// UTF-8, a time outside the years 1678 to 2261, a map key that is not a string, an integer
// or an encoding.TextMarshaler, a query term, or a value nested more than 100 deep (a
// cycle). The error wraps ErrInvalidData and names where in v the problem is.
func CheckValue(v any) error {
	_, err := encode(v)
	return err
}

// encode is v as it is stored, or an error wrapping ErrInvalidData.
func encode(v any) (any, error) {
	out, err := payload.Encode(v)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalidData, err)
	}
	return out, nil
}

// stored is v as it is stored, for a value checked already; a value that cannot be stored
// (never checked) is left as it is, for the driver to refuse.
func stored(v any) any {
	out, err := payload.Encode(v)
	if err != nil {
		return v
	}
	return out
}
