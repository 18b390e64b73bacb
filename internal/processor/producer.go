package processor

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// The producer claims due jobs for the free slots, one claim at a time, and hands them to
// the executor. It has two ways to find them:
//
//   - a read of the table's claim index (rdb.Table.ReadCandidates) for as many jobs as
//     there are free slots, in priority order: while the queue is busy, at every claim;
//   - hints: jobs it was told of as they became claimable, added by this queue or seen
//     on the changefeed. Once a read came back short (the table held no more due jobs:
//     the queue is idle), the producer claims hinted jobs by id, without reading, and a
//     freed slot costs no read. A job added elsewhere then starts within milliseconds
//     of its insert, for the price of one claim query.
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

// claimTimeout bounds one round of the producer's queries, which Stop cannot cut short. A
// round on a healthy server takes milliseconds; one that runs out of time met a
// connection gone silent, and the session is replaced (Config.Stalled). With heartbeats
// on, a round is given up within a quarter of a lease (see roundTimeout), so that a claim
// whose answer was lost is found while its lease lasts.
const claimTimeout = 10 * time.Second

// roundTimeout is how long one round of the producer may take.
func (p *Processor) roundTimeout() time.Duration {
	if p.cfg.Heartbeat <= 0 {
		return claimTimeout
	}
	return min(claimTimeout, max(HeartbeatLease(p.cfg.Heartbeat)/4, minWriteTimeout))
}

// maxClaimBackoff bounds the wait between claims that fail (database unreachable, say).
const maxClaimBackoff = 30 * time.Second

// skipFor is how long a document that cannot be claimed is left out of claims before it
// is looked at again (someone may have mended it).
const skipFor = 10 * time.Minute

// maxSkipped bounds the documents left out of claims, and maxReported the ids remembered
// as reported, so that a table full of garbage cannot grow them without end.
const (
	maxSkipped  = 1000
	maxReported = 10000
)

type producer struct {
	p *Processor
	// wakeCh asks the loop to go round; a send never blocks (capacity 1).
	wakeCh chan struct{}

	mu sync.Mutex
	// readWanted asks the next round to read the table; readAt is when a round must read
	// it at the latest (a delayed job falls due, a held name may start); zero: no time.
	readWanted bool
	readAt     time.Time
	// idle is set when a read came back short: the table held no due job beyond what the
	// producer claimed and the hints it holds.
	idle  bool
	hints map[string]hint
	// peers are the queue ids of the table's live workers, sorted, for the stagger.
	peers []string

	// buf holds, in processing order, the jobs a read found beyond the free slots, for
	// the next rounds; bufAt is when they were read, bufRead how many it held then, and
	// bufDropped is set when a missed claim emptied it.
	buf        []*job.Job
	bufAt      time.Time
	bufRead    int
	bufDropped bool
	// bufChecked is when a look at the head of the table last found no job of a higher
	// priority than those a round claimed from the buffer (see checkBuffer); zero since
	// the last read.
	bufChecked time.Time
	// head is what the look at the head that went with the last claim found, and headAt
	// that claim's time (see lookWithClaim).
	head   rdb.Head
	headAt time.Time
	// lastClaim is when the last claim was made.
	lastClaim time.Time
	// ahead is how many jobs a read takes beyond the free slots (see prefetch); -1
	// before the first read.
	ahead int
	// duePriority is the priority whose due jobs the next part read takes the part's own
	// from (rdb.Skip.DuePriority): set by a part read that filled the free slots with
	// jobs of that one priority, cleared by any other read.
	duePriority *float64

	// unsure are jobs an insert that lost its answer may have claimed (see Unreserve):
	// the loop looks for them as for lost.
	unsure []string

	// lost holds, for each job a claim whose answer was lost may hold, what that claim
	// would have written (see lostClaim): the heartbeat renews those leases too, so that
	// a claim that landed is still the queue's when the loop finds it, and until the last
	// lease ends the claim may still land (a server too busy to run it before the round
	// gave it up), so the loop looks for it again every lostRecheck (see adoptLost).
	lostAt map[string]lostClaim

	// The loop's own state.
	lost []string
	// later are the lost claims not found yet, looked for again at laterAt.
	later    []string
	laterAt  time.Time
	skip     map[string]skipped
	reported map[string]bool
	backoff  time.Duration
	// contended is the pause after rounds whose claims all missed.
	contended time.Duration
	lim       limiter
	// seqIndexAsked is set once this producer has asked for the index of sequences
	// (firstOfSequences).
	seqIndexAsked bool
}

// lostClaim is what claims of one job whose answers were lost would have written: the
// processCount of the latest, their times (a job may be claimed again, and lost again,
// before the first claim is found), and when the last of their leases ends.
type lostClaim struct {
	pc    int
	at    []time.Time
	until time.Time
}

// stamped reports whether t is one of the claims' times, to the millisecond (the most a
// time stored in RethinkDB keeps).
func (lc lostClaim) stamped(t time.Time) bool {
	return slices.ContainsFunc(lc.at, func(at time.Time) bool {
		d := t.Sub(at)
		return d < time.Millisecond && d > -time.Millisecond
	})
}

// hint is a job the producer was told of, and when it may claim it.
type hint struct {
	job *job.Job
	// at is when the job falls due and it is this queue's turn.
	at time.Time
	// rank orders this queue's claims of hints: its own first (0), then by how far it
	// stands behind the queue whose turn comes first.
	rank int
}

// skipped is a document left out of claims until until.
type skipped struct {
	id    any
	until time.Time
}

func newProducer(p *Processor) *producer {
	return &producer{
		p:          p,
		wakeCh:     make(chan struct{}, 1),
		readWanted: true,
		hints:      make(map[string]hint),
		skip:       make(map[string]skipped),
		reported:   make(map[string]bool),
		ahead:      -1,
	}
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

// loop claims until the processor quits or gives up waiting; review runs first.
func (p *producer) loop(review func()) {
	pr := p.p
	if review != nil && pr.cfg.Ready(pr.hard) == nil {
		review()
	}
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-pr.quit:
			return
		case <-pr.hard.Done():
			return
		case <-p.wakeCh:
		case <-timer.C:
		}
		next := p.round()
		timer.Stop()
		if next >= 0 {
			timer.Reset(next)
		}
	}
}

// round claims what the free slots allow and starts the jobs. It returns when to go
// round again: 0 for at once, a positive wait, -1 to wait for a wake.
func (p *producer) round() time.Duration {
	pr := p.p
	if pr.cfg.Ready(pr.hard) != nil {
		return -1
	}
	ctx, cancel := context.WithTimeout(pr.hard, pr.roundTimeout())
	defer cancel()
	defer func() { pr.timedOut(ctx, ctx.Err()) }()
	p.mu.Lock()
	p.lost, p.unsure = append(p.lost, p.unsure...), nil
	p.mu.Unlock()
	if len(p.later) > 0 && !time.Now().Before(p.laterAt) {
		p.lost, p.later = append(p.lost, p.later...), nil
	}
	if len(p.lost) > 0 {
		if err := p.adoptLost(ctx); err != nil {
			return p.failed(err)
		}
	}
	pr.gather(gatherWindow, gatherWindow)
	free, ok := p.beginClaim()
	if !ok {
		return p.recheckWait()
	}
	defer p.endClaim()
	now := time.Now()
	hold, heldUntil := p.held(ctx, now)
	var found []*job.Job
	var more bool // the table may hold more due jobs than this round took
	var nextRead time.Time
	read, check := p.shouldRead(now, free)
	if check {
		fresh, err := p.checkBuffer(ctx, now, free, hold)
		if err != nil {
			return p.failed(err)
		}
		read = !fresh
	}
	if read {
		var err error
		if found, more, nextRead, err = p.read(ctx, now, free, hold); err != nil {
			return p.failed(err)
		}
	} else {
		found = p.known(now, free, hold)
		more = len(p.buf) > 0
	}
	proposed := len(found)
	found = p.expire(ctx, found)
	expired := len(found) < proposed // their slots go to the jobs behind them
	kept, tokens := p.admit(ctx, found, now)
	kept, slots := p.takeSlots(ctx, kept, now)
	if t, ok := p.lim.soonest(now); ok && (heldUntil.IsZero() || t.Before(heldUntil)) {
		heldUntil = t
	}
	nextRead = earliest(nextRead, heldUntil)
	p.readBy(nextRead)
	var look *rdb.Skip
	if p.lookWithClaim(now) {
		skip := p.skipFor(now, hold)
		look = &skip
	}
	won, missed, err := p.claim(ctx, kept, tokens, slots, look)
	if err != nil {
		return p.failed(err)
	}
	p.backoff = 0
	if won == 0 {
		pr.act.starve(true)
		pr.announceIdle()
	}
	switch {
	case missed > 0 && won == 0:
		// Every job this round aimed at was taken or changed elsewhere first: aim again,
		// after a pause that grows while it lasts, so that queues that keep aiming at the
		// same jobs drift apart (and a job whose claim can never match cannot spin).
		p.contended = min(max(2*p.contended, time.Millisecond), 100*time.Millisecond)
		return p.contended/2 + rand.N(p.contended/2+1)
	case more || missed > 0 || len(kept) < len(found) || expired:
		// Slots filled, candidates taken elsewhere, held back by a limit or past their
		// deadline: there may be more.
		p.contended = 0
		return 0
	}
	p.contended = 0
	wait := p.next(now)
	if r := p.recheckWait(); r >= 0 && (wait < 0 || r < wait) {
		wait = r
	}
	return wait
}

// shouldRead tells whether this round reads the table, or claims jobs it knows of: those
// an earlier read found beyond the free slots (while they are fresh and enough), and,
// once a read came back short and the changefeed tells what comes, its hints. check is
// set instead of read for a buffer that only a look at the table's head can keep (see
// checkBuffer).
func (p *producer) shouldRead(now time.Time, free int) (read, check bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.readAt.IsZero() && !now.Before(p.readAt) {
		p.readAt = time.Time{}
		p.readWanted = true
	}
	enough := len(p.buf) >= free
	fresh := bufferFresh(now, p.bufAt, p.bufChecked, p.bufferAge())
	read = p.readWanted || !(enough && fresh || p.idle && p.p.cfg.Feed)
	check = read && !p.readWanted && enough && !p.p.cfg.Feed && now.Sub(p.bufAt) < feedBufferAge
	p.readWanted = false
	return read && !check, check
}

// bufferFresh tells whether a buffer read at readAt, and last found to hold the head's
// priority at checkedAt (zero: never), may still be claimed from at now, with age the
// producer's bufferAge.
func bufferFresh(now, readAt, checkedAt time.Time, age time.Duration) bool {
	return now.Sub(readAt) < age || now.Sub(checkedAt) < age && now.Sub(readAt) < feedBufferAge
}

// checkBuffer looks at the head of the table for a buffer that has grown older than
// bufferAge without a changefeed, and keeps it when the first due job there is of no
// higher priority than the last of the free buffered jobs this round would claim: then
// no job of a higher priority than theirs was added since the buffer was read, which is
// what bufferAge guards. A worker of several on one table claims a buffer's jobs further
// apart than bufferAge (with 8 processes at concurrency 50, about 0.55 s apart): the look
// costs the server a tenth of the read it saves, or less (see rdb.Table.HeadPriority).
// The buffer is kept for feedBufferAge at most, as with a changefeed.
//
// The look that went with the last claim (see lookWithClaim), when it is younger than
// bufferAge, stands for a look of its own: then the buffer stays fresh for bufferAge from
// that claim's time, so a job of a higher priority added since still waits behind the
// buffer bufferAge at most.
func (p *producer) checkBuffer(ctx context.Context, now time.Time, free int, hold holdBack) (bool, error) {
	p.mu.Lock()
	worst := p.buf[min(free, len(p.buf))-1].Priority // the buffer is in processing order
	head, at := p.head, p.headAt
	p.mu.Unlock()
	if now.Sub(at) >= bufferAge {
		var err error
		if head.Priority, head.OK, err = p.p.cfg.Store.HeadPriority(ctx, p.skipFor(now, hold)); err != nil {
			return false, err
		}
		at = now
	}
	if !head.OK || head.Priority < float64(worst) {
		return false, nil
	}
	p.mu.Lock()
	p.bufChecked = at
	p.mu.Unlock()
	return true, nil
}

// lookWithClaim tells whether the claim of a round at now looks at the head of the table
// in the same query (rdb.Table.ClaimAndLook): without a changefeed, when jobs read ahead
// will be left in the buffer that the next claim, if it comes up to twice as long after
// this one as this one after the last, may take only after a look (see checkBuffer). A
// worker of several on one table claims every 0.2–0.6 s, and not evenly: the look then
// costs no query of its own, which it would cost for every claim from a buffer older than
// bufferAge. A worker that empties its buffer well within bufferAge does not look at all.
func (p *producer) lookWithClaim(now time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	age := now.Sub(p.bufAt)
	since := min(now.Sub(p.lastClaim), bufferAge) // no claim yet: a long time
	return !p.p.cfg.Feed && len(p.buf) > 0 && age < feedBufferAge && age+2*since >= bufferAge
}

// bufferAge is how long jobs a read found beyond the free slots are claimed from without
// reading again, or, without a changefeed, without a look at the head of the table
// (checkBuffer): how long a job of a higher priority added meanwhile may wait behind them.
const bufferAge = 500 * time.Millisecond

// feedBufferAge is bufferAge for a queue that follows the changefeed. Its hints bring the
// jobs added or made claimable meanwhile into the claims' order (see known), and a feed
// that reopens makes the producer read again, so the buffer ages only by jobs that fall
// due (a higher priority's make it read then: see readBy) and by the claims of other
// workers, which it learns of by missing them. A longer age lets one read serve more
// claims: with 4 worker processes at 250 jobs/s each, a read of 4 × the concurrency
// serves 4 claims rather than 2.
const feedBufferAge = 2 * time.Second

// bufferAge is how long this producer claims from its buffer without reading again.
func (p *producer) bufferAge() time.Duration {
	if p.p.cfg.Feed {
		return feedBufferAge
	}
	return bufferAge
}

// maxPrefetch bounds the jobs one read takes.
const maxPrefetch = 1000

// prefetch is how many jobs a read for free slots takes: the free slots, and as many
// more as the rounds that follow will claim from the buffer before it is too old. A read
// costs the server for every document it reads, used or not (on RethinkDB 2.4.4, about
// 0.06 ms each; a part read reads four times what it returns, with four workers), so
// the reads ahead follow what the buffer was used for: they shrink to what was used when
// jobs were left in it, and double, up to 4 × the concurrency, when it ran dry.
func (p *producer) prefetch(free int) int {
	c := p.p.cfg.Concurrency()
	most := min(4*c, maxPrefetch)
	switch {
	case p.ahead < 0:
		p.ahead = most
	case p.bufDropped:
		// A missed claim emptied the buffer: it says nothing of its use.
	case len(p.buf) > 0:
		used := p.bufRead - len(p.buf)
		p.ahead = used + used/2
	default:
		p.ahead = max(2*p.ahead, c)
	}
	p.ahead = min(p.ahead, most)
	p.bufDropped = false
	return max(free, min(free+p.ahead, most))
}

// part is this queue's part of the table's jobs (see rdb.PartOf): the zero Part when it
// is the table's only known worker.
func (p *producer) part() rdb.Part {
	p.mu.Lock()
	defer p.mu.Unlock()
	n, me := len(p.peers), indexOf(p.peers, p.p.cfg.QueueID)
	if n < 2 || me < 0 {
		return rdb.Part{}
	}
	return rdb.Part{Index: me, Of: n}
}

// read reads the table for free slots, and keeps what it found beyond them for the next
// rounds. Workers of one table that read its head together find the same jobs; if each
// claimed the first ones, all but one would lose every claim, round after round. So each
// job belongs to one of the table's live workers, by its id (rdb.PartOf), and a worker
// claims its own jobs first within a priority, but never one of a lower priority while the
// head holds one of a higher priority in another's part (a worker that died, or is full,
// holds nothing back; see rdb.Table.ReadCandidates). Only when the head holds fewer due
// jobs than its free slots does it read the whole index, and not when the part read's
// window held all of it (at the end of a backlog: rdb.Candidates.Whole).
func (p *producer) read(ctx context.Context, now time.Time, free int, hold holdBack) (found []*job.Job, more bool, nextRead time.Time, err error) {
	pr := p.p
	want := p.prefetch(free)
	skip := p.skipFor(now, hold)
	var c rdb.Candidates
	due := p.duePriority
	p.duePriority = nil
	if part := p.part(); part.Of > 1 {
		skip.Part, skip.Enough, skip.DuePriority = part, free, due
		if c, err = pr.cfg.Store.ReadCandidates(ctx, want, skip); err != nil {
			return nil, false, time.Time{}, err
		}
		if jobs := p.usable(c.List); len(jobs) >= free {
			p.mu.Lock()
			p.idle = false
			p.mu.Unlock()
			p.duePriority = onePriority(jobs)
			p.buf, p.bufAt, p.bufRead, p.bufChecked = jobs[free:], now, len(jobs)-free, time.Time{}
			return jobs[:free], len(c.List) == want || len(jobs) > free, c.NextDue, nil
		}
		skip.DuePriority = nil
		if !c.Whole {
			skip.Part = rdb.Part{}
			if c, err = pr.cfg.Store.ReadCandidates(ctx, want, skip); err != nil {
				return nil, false, time.Time{}, err
			}
		}
	} else if c, err = pr.cfg.Store.ReadCandidates(ctx, want, skip); err != nil {
		return nil, false, time.Time{}, err
	}
	more = len(c.List) == want
	p.mu.Lock()
	p.idle = !more
	p.mu.Unlock()
	jobs := p.usable(c.List)
	if part := p.part(); part.Of > 1 {
		// By priority still, but its own jobs first within one.
		others := func(j *job.Job) int { return b2i(rdb.PartOf(j.ID, part.Of) != part.Index) }
		slices.SortStableFunc(jobs, func(a, b *job.Job) int {
			return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(others(a), others(b)))
		})
	}
	found = jobs[:min(free, len(jobs))]
	p.buf, p.bufAt, p.bufRead, p.bufChecked = nil, now, 0, time.Time{}
	if len(jobs) > free {
		p.buf, p.bufRead = jobs[free:], len(jobs)-free
	}
	return found, more, c.NextDue, nil
}

// onePriority is the priority of jobs when they are all of one (read in priority order),
// else nil.
func onePriority(jobs []*job.Job) *float64 {
	if len(jobs) == 0 || jobs[0].Priority != jobs[len(jobs)-1].Priority {
		return nil
	}
	p := rdb.KeyOf(jobs[0]).Priority
	return &p
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readBy records that a read falls due at readAt (zero: none): a job falls due that may
// go before the ones the producer read ahead, or a held name may start. A busy producer
// claims from what it read ahead until then.
func (p *producer) readBy(readAt time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !readAt.IsZero() && (p.readAt.IsZero() || readAt.Before(p.readAt)) {
		p.readAt = readAt
	}
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

// usable returns the candidates that can be processed; those that cannot are left out of
// the next claims and reported once.
func (p *producer) usable(list []rdb.Candidate) []*job.Job {
	jobs := make([]*job.Job, 0, len(list))
	for _, c := range list {
		if c.Err != nil {
			p.noteMalformed(c.ID, c.Err)
			continue
		}
		jobs = append(jobs, c.Job)
	}
	return jobs
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

// claim claims jobs, hands those it won to the executor and returns how many it won and
// missed. tokens are the rate tokens the jobs took, put back for those not won.
// With look, the claim looks at the head of the table with that skip too (see
// lookWithClaim).
func (p *producer) claim(ctx context.Context, jobs []*job.Job, tokens map[string]string, slots map[string][]string, look *rdb.Skip) (won, missed int, err error) {
	pr := p.p
	if len(jobs) == 0 {
		return 0, 0, nil
	}
	at := now()
	claims := make([]rdb.Claim, len(jobs))
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		claims[i] = pr.cfg.Store.NewClaim(j, at, pr.cfg.LeaseEnd(j, at))
		ids[i] = j.ID
	}
	var res rdb.ClaimResult
	var head rdb.Head
	if look != nil {
		res, head, err = pr.cfg.Store.ClaimAndLook(ctx, pr.cfg.Jobs, claims, *look)
	} else {
		res, err = pr.cfg.Store.Claim(ctx, pr.cfg.Jobs, claims)
	}
	if err != nil {
		// Whether the write landed is unknown: look for its claims before anything else,
		// and keep their leases meanwhile.
		p.lost = append(p.lost, ids...)
		p.mu.Lock()
		if p.lostAt == nil {
			p.lostAt = make(map[string]lostClaim)
		}
		for _, c := range claims {
			lc := p.lostAt[c.ID]
			lc.pc, lc.at, lc.until = c.ProcessCount+1, append(lc.at, c.At), latest(lc.until, c.LeaseEnd)
			p.lostAt[c.ID] = lc
		}
		p.mu.Unlock()
		return 0, 0, err
	}
	// Run them in the order they were asked for: processing order.
	order := make(map[string]int, len(ids))
	for i, id := range ids {
		order[id] = i
	}
	slices.SortFunc(res.Claimed, func(a, b *job.Job) int { return cmp.Compare(order[a.ID], order[b.ID]) })
	p.mu.Lock()
	p.lastClaim = at
	if look != nil {
		p.head, p.headAt = head, at
	}
	for _, id := range ids {
		delete(p.hints, id)
	}
	if len(res.Missed) > 0 {
		// Jobs it knew of were taken or changed elsewhere: the table says what is due now.
		p.readWanted = true
		p.buf, p.bufDropped = nil, true
	}
	p.mu.Unlock()
	if len(tokens) > 0 || len(slots) > 0 {
		won := make(map[string]bool, len(res.Claimed))
		for _, j := range res.Claimed {
			won[j.ID] = true
		}
		p.returnTokens(ctx, tokens, func(id string) bool { return !won[id] })
		p.settleSlots(ctx, jobs, slots, won)
	}
	for id, err := range res.Unreadable {
		p.report(id, fmt.Errorf("queue %s: claimed job %s cannot be read; it is left active for the review: %w", pr.cfg.Name, id, err))
	}
	p.start(res.Claimed)
	return len(res.Claimed), len(res.Missed), nil
}

// start hands claimed jobs to the executor, unless Stop gave up meanwhile.
func (p *producer) start(jobs []*job.Job) {
	pr := p.p
	if len(jobs) == 0 {
		return
	}
	if pr.hard.Err() != nil {
		// Claimed as Stop gave up waiting: they go back to waiting unrun (see handBack).
		pr.exec.handBackUnstarted(jobs)
		return
	}
	pr.act.starve(false)
	if pr.cfg.Hooks.Claimed != nil {
		pr.cfg.Hooks.Claimed(len(jobs))
	}
	for _, j := range jobs {
		pr.emit(Event{Type: EventActive, JobID: j.ID})
		pr.exec.start(j)
	}
}

// lostClaims returns the jobs that claims whose answers were lost may hold, with the
// processCount they would hold them in, for the heartbeat to renew.
func (p *producer) lostClaims() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.lostAt) == 0 {
		return nil
	}
	out := make(map[string]int, len(p.lostAt))
	for id, lc := range p.lostAt {
		out[id] = lc.pc
	}
	return out
}

// adoptLost looks for the claims of a write whose answer was lost, and runs them. A job
// active here that another claim of this queue won since (it is running, or its outcome
// is not written yet, or its dateStarted is not the lost claim's) is not the lost claim's
// and is left alone.
func (p *producer) adoptLost(ctx context.Context) error {
	pr := p.p
	// An id may be there twice (claimed and lost again before the first was found).
	slices.Sort(p.lost)
	p.lost = slices.Compact(p.lost)
	jobs, err := pr.cfg.Store.ReadClaimedHere(ctx, pr.cfg.Jobs, p.lost)
	if err != nil {
		return fmt.Errorf("queue %s: look for jobs a lost write claimed: %w", pr.cfg.Name, err)
	}
	mine := pr.exec.running()
	for _, rn := range pr.comp.unwritten() {
		mine[rn.claimed.ID] = rn.claimed.ProcessCount
	}
	now := time.Now()
	found := make(map[string]bool, len(jobs))
	var adopt []*job.Job
	p.mu.Lock()
	for _, j := range jobs {
		lc, watched := p.lostAt[j.ID]
		if _, ok := mine[j.ID]; ok || found[j.ID] || watched && !lc.stamped(j.DateStarted) {
			found[j.ID] = true
			continue
		}
		found[j.ID] = true
		pr.cfg.Log.Info("running a job whose claim's answer was lost", "job", j.ID)
		adopt = append(adopt, j)
	}
	for _, id := range p.lost {
		if lc, ok := p.lostAt[id]; ok && !found[id] && now.Before(lc.until) {
			// Not there yet: the claim may land until its lease would end (then the
			// review takes the job back in any case).
			p.later = append(p.later, id)
			continue
		}
		delete(p.lostAt, id)
	}
	p.mu.Unlock()
	if len(p.later) > 0 {
		p.laterAt = now.Add(lostRecheck)
	}
	p.lost = nil
	p.start(adopt)
	return nil
}

// latest is the later of two times.
func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lostRecheck is how often the loop looks again for a lost claim it has not found.
const lostRecheck = time.Second

// recheckWait is the wait until the loop looks again for lost claims, -1 when there are
// none to look for.
func (p *producer) recheckWait() time.Duration {
	if len(p.later) == 0 {
		return -1
	}
	return max(time.Until(p.laterAt), 0)
}

// beginClaim reports how many jobs to claim, and marks the claim as under way; ok is false
// when the queue takes no jobs (paused, stopping) or is full.
func (p *producer) beginClaim() (free int, ok bool) {
	pr := p.p
	// Mark the claim before looking at the pause, so that a Pause either sees the claim and
	// waits for it, or is seen here.
	reserved := 0
	pr.act.update(func(a *activity) { a.claiming, reserved = true, a.reserved })
	free = pr.cfg.Concurrency() - pr.exec.count() - reserved
	if free < 1 || !pr.cfg.Claiming() {
		p.endClaim()
		return 0, false
	}
	return free, true
}

// endClaim marks the claim as done, its jobs started.
func (p *producer) endClaim() {
	p.p.act.update(func(a *activity) { a.claiming = false })
}

// failed reports a failed query and returns the backoff before the next try.
func (p *producer) failed(err error) time.Duration {
	pr := p.p
	if pr.hard.Err() != nil {
		return -1
	}
	p.mu.Lock()
	p.readWanted = true
	p.mu.Unlock()
	p.backoff = min(max(2*p.backoff, 100*time.Millisecond), maxClaimBackoff)
	wait := p.backoff/2 + rand.N(p.backoff/2+1)
	pr.cfg.Log.Warn("processing query failed", "err", err, "retry in", wait)
	pr.emit(Event{Type: EventError, Err: err})
	return wait
}

// noteMalformed leaves a due document that cannot be processed out of the next claims,
// and reports it once.
func (p *producer) noteMalformed(id any, err error) {
	key := fmt.Sprintf("%#v", id)
	if len(p.skip) < maxSkipped {
		p.skip[key] = skipped{id: id, until: time.Now().Add(skipFor)}
	}
	p.report(fmt.Sprint(id), fmt.Errorf("queue %s: job %v cannot be processed, and is left as it is until it is mended or removed: %w", p.p.cfg.Name, id, err))
}

// report raises an error event and logs it, once per job id.
func (p *producer) report(id string, err error) {
	if p.reported[id] {
		return
	}
	if len(p.reported) >= maxReported {
		clear(p.reported)
	}
	p.reported[id] = true
	p.p.cfg.Log.Warn("job cannot be processed", "job", id, "err", err)
	p.p.emit(Event{Type: EventError, JobID: id, Err: err})
}

// skipFor is what a read leaves out at now: the ids set aside, and what hold holds back.
func (p *producer) skipFor(now time.Time, hold holdBack) rdb.Skip {
	return rdb.Skip{IDs: p.skipList(now), Names: hold.names, Groups: hold.groups, Sequences: hold.seqs}
}

// skipList returns the ids claims leave out, dropping expired entries.
func (p *producer) skipList(now time.Time) []any {
	ids := make([]any, 0, len(p.skip))
	for key, s := range p.skip {
		if now.After(s.until) {
			delete(p.skip, key)
			continue
		}
		ids = append(ids, s.id)
	}
	return ids
}

// expire cancels the jobs of found whose start deadline has passed (job.SetDeadline)
// rather than claim them, and returns the others. A job it could not cancel (the write
// failed) is left for the next round or the Queue Master; it is not claimed either.
func (p *producer) expire(ctx context.Context, found []*job.Job) []*job.Job {
	now := time.Now()
	var passed []string
	for _, j := range found {
		if rdb.Passed(j, now) {
			passed = append(passed, j.ID)
		}
	}
	if len(passed) == 0 {
		return found
	}
	pr := p.p
	cancelled, err := pr.cfg.Store.Expire(ctx, passed, now)
	if err != nil {
		pr.cfg.Log.Warn("cancelling jobs past their start deadline failed; they are not claimed", "jobs", len(passed), "err", err)
	}
	pr.expired(ctx, cancelled)
	for _, id := range passed {
		p.taken(id) // no longer claimable, whoever cancels it: its hint goes
	}
	return slices.DeleteFunc(found, func(j *job.Job) bool { return contains(passed, j.ID) })
}

// expired raises the cancelled events of jobs cancelled for their start deadline, and
// removes them when finished jobs go at once.
func (p *Processor) expired(ctx context.Context, ids []string) {
	if p.cfg.Hooks.Expired != nil && len(ids) > 0 {
		p.cfg.Hooks.Expired(len(ids))
	}
	for _, id := range ids {
		p.emit(Event{Type: EventCancelled, JobID: id, Reason: job.MessageDeadlinePassed})
	}
	if p.cfg.RemoveFinished {
		p.removeFinished(ctx, ids)
	}
}
