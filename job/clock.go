package job

import (
	"sync"
	"time"
)

// RethinkDB keeps times to the millisecond, so times are cut to whole milliseconds before
// they are written; what is read back is then equal to what was written.
func toMillis(t time.Time) time.Time {
	return t.UTC().Truncate(time.Millisecond)
}

// creationClock hands out creation times that are distinct to the millisecond within this
// process. The claim query orders waiting jobs by [priority, dateEnable, dateCreated], and
// RethinkDB reads every index entry that ties on that key before it applies a limit, so a
// batch of jobs created in the same millisecond would make every claim slow (see
// shared/notes/rethinkdb-facts.md). Giving each job its own millisecond keeps the keys
// distinct at no cost: in a burst of n jobs created faster than one a millisecond, the last
// one's dateCreated runs up to n milliseconds ahead of the clock. Only dateCreated is
// spread; dateEnable stays the real time, so no job is held back.
var creationClock struct {
	sync.Mutex
	last time.Time
}

func creationTime() time.Time {
	now := toMillis(time.Now())
	creationClock.Lock()
	defer creationClock.Unlock()
	if !now.After(creationClock.last) {
		now = creationClock.last.Add(time.Millisecond)
	}
	creationClock.last = now
	return now
}
