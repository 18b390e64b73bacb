package processor

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// Hints: jobs the producer was told of as they became claimable, added by this queue or
// seen on the changefeed, which an idle producer claims by id without reading the table.
//
// Several idle queues (processes) see the same insert on their changefeeds. So that one
// added job does not cost a claim query from each, each queue waits its turn: the live
// workers of the table (the _workers table, read with the heartbeat) are ranked, the one
// that added the job (or else the one the job's id hashes to) goes first, and each other
// waits staggerStep more per rank. The first claims it, and the others see on their feeds
// that it went active and drop it.

// staggerStep is how much longer each queue, by rank, waits before it claims a job made
// claimable elsewhere: more than the changefeed takes to tell the queues ahead that it
// went active (about a millisecond on one server), less than a user would notice.
const staggerStep = 10 * time.Millisecond

// maxHints bounds the hints a producer keeps; beyond it, it reads the table instead.
const maxHints = 10000

// hint is a job the producer was told of, and when it may claim it.
type hint struct {
	job *job.Job
	// at is when the job falls due and it is this queue's turn.
	at time.Time
	// rank orders this queue's claims of hints: its own first (0), then by how far it
	// stands behind the queue whose turn comes first.
	rank int
}

// wake asks the loop to go round, and to read the table when read is true.
func (p *producer) wake(read bool) {
	if read {
		p.mu.Lock()
		p.readWanted = true
		p.mu.Unlock()
	}
	select {
	case p.wakeCh <- struct{}{}:
	default:
	}
}

// slotFreed wakes the loop for a slot that a run freed. An idle producer that follows the
// changefeed knows every job that became claimable since its last read: it claims from
// its hints and reads nothing (see shouldRead).
func (p *producer) slotFreed() { p.wake(false) }

// dueAt makes the producer read the table at t at the latest: a job falls due then.
func (p *producer) dueAt(t time.Time) {
	p.mu.Lock()
	if p.readAt.IsZero() || t.Before(p.readAt) {
		p.readAt = t
	}
	p.mu.Unlock()
	p.wake(false)
}

// hint records a job that became claimable, made so by the queue by.
func (p *producer) hint(j *job.Job, by string) {
	now := time.Now()
	p.mu.Lock()
	if len(p.hints) >= maxHints {
		// A burst bigger than any idle queue takes at once: the table says the rest.
		clear(p.hints)
		p.readWanted = true
		p.mu.Unlock()
		p.wake(true)
		return
	}
	rank := p.rank(by, j.ID)
	at := now.Add(time.Duration(rank) * staggerStep)
	if rank > 0 && len(p.peers) == 0 {
		at = now.Add(rand.N(staggerStep)) // no ranks known: spread the queues at random
	}
	if j.DateEnable.After(at) {
		at = j.DateEnable
	}
	p.hints[j.ID] = hint{job: j, at: at, rank: rank}
	p.mu.Unlock()
	p.wake(false)
}

// rank is how many queues stand before this one for job id made claimable by by; p.mu
// must be held.
func (p *producer) rank(by, id string) int {
	self := p.p.cfg.QueueID
	if by == self {
		return 0
	}
	n := len(p.peers)
	me := indexOf(p.peers, self)
	if n == 0 || me < 0 {
		return n + 1
	}
	first := indexOf(p.peers, by)
	if first < 0 {
		first = int(fnv32(id) % uint32(n))
	}
	return (me - first + n) % n
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return -1
}

// fnv32 is the FNV-1a hash of s: every queue computes the same rank from a job id.
func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// taken drops the hint of a job that is no longer claimable.
func (p *producer) taken(id string) {
	p.mu.Lock()
	delete(p.hints, id)
	p.mu.Unlock()
}

// setPeers records the table's live workers.
func (p *producer) setPeers(peers []string) {
	p.mu.Lock()
	p.peers = peers
	p.mu.Unlock()
}

// next returns the wait until the next round: the next read, or the next hint whose turn
// comes; -1 when there is neither.
func (p *producer) next(now time.Time) time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := p.readAt
	for _, h := range p.hints {
		at = earliest(at, h.at)
	}
	if at.IsZero() {
		return -1
	}
	// The server's clock decides what is due; a little slack covers the two clocks
	// disagreeing by a few milliseconds.
	return max(at.Sub(now), 0) + 5*time.Millisecond
}

// earliest is the earlier of two times, zero meaning none.
func earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// known returns up to n jobs this producer knows to be claimable, without reading: those
// an earlier read found, and the hinted ones whose turn has come, in the order this queue
// claims them (by priority, its own turn first, then as the index orders them). Jobs of
// held names wait. The jobs of the buffer it returns leave it.
func (p *producer) known(now time.Time, n int, held holdBack) []*job.Job {
	p.mu.Lock()
	defer p.mu.Unlock()
	ready := make([]hint, 0, len(p.buf))
	inBuf := make(map[string]bool, len(p.buf))
	for _, j := range p.buf {
		ready = append(ready, hint{job: j, at: p.bufAt})
		inBuf[j.ID] = true
	}
	for _, h := range p.hints {
		if !h.at.After(now) && !inBuf[h.job.ID] {
			ready = append(ready, h)
		}
	}
	ready = slices.DeleteFunc(ready, func(h hint) bool { return held.holds(h.job) })
	sortHints(ready)
	jobs := make([]*job.Job, 0, min(n, len(ready)))
	for _, h := range ready[:min(n, len(ready))] {
		jobs = append(jobs, h.job)
	}
	taken := make(map[string]bool, len(jobs))
	for _, j := range jobs {
		taken[j.ID] = true
	}
	p.buf = slices.DeleteFunc(p.buf, func(j *job.Job) bool { return taken[j.ID] })
	return jobs
}

func contains(s []string, v string) bool { return indexOf(s, v) >= 0 }

// sortHints orders hints as a queue claims them: by priority (strictly, as the index
// does), then its own turn first, then as the index orders them.
func sortHints(hs []hint) {
	slices.SortFunc(hs, func(a, b hint) int {
		ka, kb := rdb.KeyOf(a.job), rdb.KeyOf(b.job)
		return cmp.Or(cmp.Compare(ka.Priority, kb.Priority), cmp.Compare(a.rank, b.rank), ka.Compare(kb))
	})
}
