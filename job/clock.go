package job

import (
	"sync"
	"time"
)

// maxCreationLead bounds how far ahead of the clock a creation time may run.
const maxCreationLead = 999 * time.Millisecond

// creationClock hands out creation times that are distinct to the millisecond within this
// process while it can, so that jobs created in a burst start in the order they were
// created: jobs of one priority and dateEnable are taken by dateCreated, and RethinkDB
// keeps times to the millisecond only. In a burst of more than a thousand jobs within a
// second the times would have to run further ahead of the clock than maxCreationLead
// allows; from there on they tie, and jobs that tie start in an arbitrary order (claims
// stay fast either way: see dbinit.IndexClaim). dateEnable is never moved, so no job is
// held back.
var creationClock struct {
	sync.Mutex
	last time.Time
}

func creationTime() time.Time {
	now := toMillis(time.Now())
	creationClock.Lock()
	defer creationClock.Unlock()
	if !now.After(creationClock.last) {
		next, limit := creationClock.last.Add(time.Millisecond), now.Add(maxCreationLead)
		if next.After(limit) {
			next = limit
		}
		now = next
	}
	creationClock.last = now
	return now
}
