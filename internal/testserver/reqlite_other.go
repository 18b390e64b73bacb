//go:build !unix

package testserver

// startReqlite is unix-only because the shared install is guarded by flock.
func startReqlite() (Server, func(), error) {
	return Server{}, nil, skipError(howTo + " (reqlite is started automatically on unix systems only)")
}
