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
// How it reads is in reads.go, its hints are in hints.go, and the claims whose answers
// were lost in lost.go.

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
	if err := p.findLost(ctx); err != nil {
		return p.failed(err)
	}
	pr.gather()
	free, ok := p.beginClaim()
	if !ok {
		return p.recheckWait()
	}
	defer p.endClaim()
	now := time.Now()
	hold, heldUntil := p.held(ctx, now)
	found, more, nextRead, err := p.find(ctx, now, free, hold)
	if err != nil {
		return p.failed(err)
	}
	proposed := len(found)
	found = p.expire(ctx, found)
	expired := len(found) < proposed // their slots go to the jobs behind them
	// Running slots before rate tokens: a job that gets no slot takes no token, which
	// would hold its name back until the next token while the bucket has room.
	capped, slots := p.takeSlots(ctx, found, now)
	kept, tokens := p.admit(ctx, capped, now)
	p.dropSlots(ctx, capped, kept, slots)
	if t, ok := p.lim.soonest(now); ok && (heldUntil.IsZero() || t.Before(heldUntil)) {
		heldUntil = t
	}
	p.readBy(earliest(nextRead, heldUntil))
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
	return p.after(now, won, missed, more || len(kept) < len(found) || expired)
}

// find returns the jobs this round proposes to claim for free slots: read from the table,
// or known already (see shouldRead); more is set when the table may hold more due jobs
// than this round took, and nextRead is when a read falls due (zero: none).
func (p *producer) find(ctx context.Context, now time.Time, free int, hold holdBack) (found []*job.Job, more bool, nextRead time.Time, err error) {
	read, check := p.shouldRead(now, free)
	if check {
		fresh, err := p.checkBuffer(ctx, now, free, hold)
		if err != nil {
			return nil, false, time.Time{}, err
		}
		read = !fresh
	}
	if read {
		return p.read(ctx, now, free, hold)
	}
	found = p.known(now, free, hold)
	return found, len(p.buf) > 0, time.Time{}, nil
}

// after is the wait before the next round, once a round at now won and missed so many
// claims; again is set when there may be more to claim at once (slots filled, candidates
// held back by a limit or past their deadline).
func (p *producer) after(now time.Time, won, missed int, again bool) time.Duration {
	switch {
	case missed > 0 && won == 0:
		// Every job this round aimed at was taken or changed elsewhere first: aim again,
		// after a pause that grows while it lasts, so that queues that keep aiming at the
		// same jobs drift apart (and a job whose claim can never match cannot spin).
		p.contended = min(max(2*p.contended, time.Millisecond), 100*time.Millisecond)
		return p.contended/2 + rand.N(p.contended/2+1)
	case again || missed > 0:
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
