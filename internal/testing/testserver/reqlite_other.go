//go:build !unix

package testserver

import (
	"errors"
	"testing"
)

// startReqlite is unix-only because the shared install is guarded by flock.
func startReqlite() (Server, func(), error) {
	return Server{}, nil, skipError(howTo + " (reqlite is started automatically on unix systems only)")
}

// StartDetached fails: reqlite is started on unix systems only.
func StartDetached(port int, logFile, pidFile string) (Server, int, error) {
	return Server{}, 0, errors.New("reqlite is started on unix systems only")
}

// Restartable is a reqlite server a test may restart; unix only.
type Restartable struct{ Server }

// Private skips tb: reqlite is started on unix systems only.
func Private(tb testing.TB) *Restartable {
	tb.Skip("a private server needs reqlite, started on unix systems only")
	return nil
}

// Stop does nothing here.
func (s *Restartable) Stop() {}

// Start does nothing here.
func (s *Restartable) Start(testing.TB) {}

// ReqliteKit fails: reqlite is installed on unix systems only.
func ReqliteKit() (string, error) {
	return "", errors.New("reqlite is installed on unix systems only")
}
