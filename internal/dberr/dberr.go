// Package dberr turns the errors of the RethinkDB driver into the errors this library
// returns: the server's message without the query the driver appends to it (several KB
// for a claim), and the caller's context error when the driver gave up because the
// context ended.
package dberr

import (
	"context"
	"errors"
	"strings"

	r "gopkg.in/rethinkdb/rethinkdb-go.v6"
)

// Error is a database error with the driver's text cut to the server's message. Unwrap
// returns the driver's error, for errors.As.
type Error struct {
	msg   string
	cause error
}

// Error returns the server's message and what the library was doing.
func (e *Error) Error() string { return e.msg }

// Unwrap returns the driver's error.
func (e *Error) Unwrap() error { return e.cause }

// From maps err, of a query run with ctx: nil stays nil; a driver timeout of an ended
// context becomes that context's error; a server error loses the query text.
func From(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if ctx != nil && ctx.Err() != nil && (errors.Is(err, r.ErrQueryTimeout) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return ctx.Err()
	}
	msg := err.Error()
	if i := strings.Index(msg, " in:\n"); i >= 0 {
		return &Error{msg: msg[:i], cause: err}
	}
	return err
}

// Transient reports errors after which the same query may succeed: the server or its
// primary replica was out of reach for a while. Such a write may or may not have landed.
func Transient(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var avail r.RQLAvailabilityError
	var conn r.RQLConnectionError
	if errors.As(err, &avail) || errors.As(err, &conn) || errors.Is(err, r.ErrConnectionClosed) {
		return true
	}
	msg := err.Error()
	for _, s := range []string{"lost contact", "unavailable", "not available", "none of the servers", "EOF", "connection reset", "broken pipe", "connection refused", "no connections were made"} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}
