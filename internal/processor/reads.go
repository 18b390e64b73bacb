package processor

// The producer's reads, in one place: which runs when, and what each is worth. Each
// figure was measured on RethinkDB 2.4.4 (two cores, hard durability) against the floor,
// a bare loop that makes the same writes (docs/performance.md).
//
//   - No read at all: an idle queue that follows the changefeed claims hinted jobs by id
//     (hints.go). A job added to an idle worker costs one claim, not a read and a claim.
//   - The buffer: a read takes up to four times the concurrency (prefetch), and the
//     rounds that follow claim from what it found beyond the free slots while it is
//     fresh: bufferAge (500 ms), feedBufferAge (2 s) with the changefeed, whose hints
//     bring newer jobs into the claims' order. One read so serves several claims.
//   - Without the changefeed, a buffer older than bufferAge is kept after a look at the
//     head of the table (checkBuffer, rdb.Table.HeadPriority) finds no job of a higher
//     priority than the buffer's; the look rides on the claim before it when the next
//     claim would need one (lookWithClaim, rdb.Table.ClaimAndLook). The look costs the
//     server a tenth of the read it saves.
//   - The head read (rdb.Table.ReadCandidates): the due jobs at the head of the claim
//     index, for the table's only worker, and the bands of each priority only when the
//     head comes back short and the index holds more (a delayed job of high priority
//     never holds back due jobs).
//   - Part reads, for a worker of several (part): its own part of the head first, so
//     that workers reading together seldom aim at the same jobs (rdb/parts.go): through
//     a window of the index, or, while its last part read filled its slots with jobs of
//     one priority, through that priority's range of due jobs (duePriority), which cost
//     the server 2.83 ms a job against 3.34 through the window with 8 processes of
//     concurrency 10 (no difference at concurrency 50). A part read short of the free
//     slots reads the whole head, unless its window held the whole index.

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

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
