package processor

import (
	"context"
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/internal/rdb"
	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// fakeStore is a table in memory with the claim and outcome rules of internal/rdb, so
// that the producer's decisions are tested without a server. Another queue's claims are
// simulated by takenElsewhere.
type fakeStore struct {
	mu      sync.Mutex
	queueID string
	jobs    map[string]*job.Job
	bad     []rdb.Candidate
	// takenElsewhere makes every claim miss, as if another queue always came first.
	takenElsewhere bool
	workers        []string
	// limits is the limits table; limitReads and beatLimitReads count its reads alone
	// and with a beat.
	limits                     rdb.LimitSet
	limitReads, beatLimitReads int
	// failBeatLimits is how many more beats that ask for the limits fail.
	failBeatLimits int
	// entries counts the worker entries written.
	entries int

	reads  int // ReadCandidates calls
	heads  int // HeadPriority calls
	claims int // Claim calls
	// claimLooks counts the ClaimAndLook calls among them.
	claimLooks int
	follows    int // FinishRelease calls whose parent's outcome landed
	// loseFinish is how many more Finish calls land and then lose their answer.
	loseFinish int
	// finished are the outcomes Finish applied, in order.
	finished []rdb.RunKey
	asked    []int
	skips    [][]any
	// duePriorities are the reads' Skip.DuePriority, in order.
	duePriorities []*float64
	// holdClaims is how many more Claim calls fail without landing; held keeps them, for
	// land to apply later (a claim the server ran after the client gave it up).
	holdClaims int
	held       [][]rdb.Claim
	// wholeParts makes a part read short of its Enough say that it saw the whole index
	// (rdb.Candidates.Whole).
	wholeParts bool
}

// land applies the i-th claim held back, as the server would run it late.
func (s *fakeStore) land(i int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.apply(s.held[i], time.Now())
}

func newFakeStore(queueID string) *fakeStore {
	return &fakeStore{queueID: queueID, jobs: make(map[string]*job.Job)}
}

// add puts a waiting job in the table, due at enable, with the given priority.
func (s *fakeStore) add(p job.Priority, enable time.Time) *job.Job {
	j := job.New(nil, job.Options{Priority: p})
	j.Status, j.DateEnable = job.Waiting, enable
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[j.ID] = j
	c := *j
	return &c
}

// deadline gives the stored job id a start deadline at t, past or not.
func (s *fakeStore) deadline(id string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	j := s.jobs[id]
	if j.Fields == nil {
		j.Fields = map[string]any{}
	}
	j.Fields["rjqDeadline"] = t
}

func (s *fakeStore) ReadCandidates(_ context.Context, n int, skip rdb.Skip) (rdb.Candidates, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	s.asked = append(s.asked, n)
	s.skips = append(s.skips, skip.IDs)
	s.duePriorities = append(s.duePriorities, skip.DuePriority)
	now := time.Now()
	var waiting []*job.Job
	for _, j := range s.jobs {
		if (j.Status == job.Waiting || j.Status == job.Failed) && !slices.Contains(skip.Names, j.Name) {
			waiting = append(waiting, j)
		}
	}
	slices.SortFunc(waiting, func(a, b *job.Job) int { return rdb.KeyOf(a).Compare(rdb.KeyOf(b)) })
	var c rdb.Candidates
	for _, b := range s.bad {
		if !slices.Contains(skip.IDs, b.ID) && len(c.List) < n {
			c.List = append(c.List, b)
		}
	}
	for _, j := range waiting {
		switch {
		case j.DateEnable.After(now):
			if c.NextDue.IsZero() || j.DateEnable.Before(c.NextDue) {
				c.NextDue = j.DateEnable
			}
		case len(c.List) < n:
			cp := *j
			c.List = append(c.List, rdb.Candidate{ID: j.ID, Job: &cp, Key: rdb.KeyOf(j)})
		}
	}
	if len(c.List) == n {
		c.NextDue = time.Time{} // a full read does not look further, as rdb's
	}
	enough := n
	if skip.Enough > 0 && skip.Enough < n {
		enough = skip.Enough
	}
	// The fake's part read sees every part, and its window, when s.wholeParts, the whole
	// table.
	c.Whole = skip.Part.Of > 1 && s.wholeParts && len(c.List) < enough
	return c, nil
}

// HeadPriority is the priority of the first due job that skip leaves, as rdb's (without
// its window).
func (s *fakeStore) HeadPriority(_ context.Context, skip rdb.Skip) (float64, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.heads++
	h := s.head(skip)
	return h.Priority, h.OK, nil
}

// head is HeadPriority's answer; s.mu must be held.
func (s *fakeStore) head(skip rdb.Skip) rdb.Head {
	now := time.Now()
	best, ok := 0.0, false
	for _, j := range s.jobs {
		if (j.Status == job.Waiting || j.Status == job.Failed) && !j.DateEnable.After(now) &&
			!slices.Contains(skip.Names, j.Name) && !slices.Contains(skip.IDs, any(j.ID)) &&
			(!ok || float64(j.Priority) < best) {
			best, ok = float64(j.Priority), true
		}
	}
	return rdb.Head{Priority: best, OK: ok}
}

func (s *fakeStore) NewClaim(j *job.Job, at, leaseEnd time.Time) rdb.Claim {
	return rdb.Claim{ID: j.ID, Status: j.Status, ProcessCount: j.ProcessCount, RetryCount: j.RetryCount,
		At: at, LeaseEnd: leaseEnd}
}

// Expire cancels those of ids that wait with a passed start deadline, as rdb does.
func (s *fakeStore) Expire(_ context.Context, ids []string, now time.Time) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []string
	for _, id := range ids {
		j, ok := s.jobs[id]
		if ok && (j.Status == job.Waiting || j.Status == job.Failed) && rdb.Passed(j, now) {
			j.Status, j.DateFinished = job.Cancelled, now
			out = append(out, id)
		}
	}
	return out, nil
}

func (s *fakeStore) Claim(_ context.Context, _ rdb.Store, claims []rdb.Claim) (rdb.ClaimResult, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claims++
	if s.holdClaims > 0 {
		s.holdClaims--
		s.held = append(s.held, claims)
		return rdb.ClaimResult{}, errors.New("claim timed out")
	}
	return s.apply(claims, time.Now()), nil
}

// ClaimAndLook is Claim, then HeadPriority's look, as rdb's, counted as a claim.
func (s *fakeStore) ClaimAndLook(ctx context.Context, st rdb.Store, claims []rdb.Claim, skip rdb.Skip) (rdb.ClaimResult, rdb.Head, error) {
	res, err := s.Claim(ctx, st, claims)
	if err != nil {
		return res, rdb.Head{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.claimLooks++
	return res, s.head(skip), nil
}

// apply applies claims as the server does; s.mu must be held.
func (s *fakeStore) apply(claims []rdb.Claim, now time.Time) rdb.ClaimResult {
	var res rdb.ClaimResult
	for _, c := range claims {
		j, ok := s.jobs[c.ID]
		if !ok || s.takenElsewhere || j.Status != c.Status || j.ProcessCount != c.ProcessCount ||
			j.RetryCount != c.RetryCount || j.DateEnable.After(now) || rdb.Passed(j, now) {
			res.Missed = append(res.Missed, c.ID)
			continue
		}
		j.Status, j.ProcessCount, j.DateStarted, j.DateEnable, j.QueueID = job.Active, j.ProcessCount+1, c.At, c.LeaseEnd, s.queueID
		cp := *j
		res.Claimed = append(res.Claimed, &cp)
	}
	slices.Reverse(res.Claimed) // a server's changes come in no particular order
	return res
}

func (s *fakeStore) ReadClaimedHere(_ context.Context, _ rdb.Store, ids []string) ([]*job.Job, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*job.Job
	for _, id := range ids {
		if j, ok := s.jobs[id]; ok && j.Status == job.Active && j.QueueID == s.queueID {
			cp := *j
			out = append(out, &cp)
		}
	}
	return out, nil
}

// insertClaimed puts a job in the table as an insert of a job claimed here would.
func (s *fakeStore) insertClaimed() *job.Job {
	j := job.New(nil, job.Options{})
	j.Status, j.ProcessCount, j.QueueID, j.DateStarted = job.Active, 1, s.queueID, time.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[j.ID] = j
	c := *j
	return &c
}

// FinishRelease is Finish that, once the outcome of f's parent landed, claims those of
// f's children that are blocked (the fake keeps no parents: a blocked job is a child).
func (s *fakeStore) FinishRelease(ctx context.Context, _ rdb.Store, outs []rdb.Outcome, f rdb.Follow) ([]rdb.RunKey, rdb.Released, error) {
	done, err := s.Finish(ctx, outs)
	if err != nil || !slices.ContainsFunc(done, func(k rdb.RunKey) bool { return k.ID == f.Parent }) {
		return done, rdb.Released{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.follows++
	var rel rdb.Released
	for _, id := range f.IDs {
		if j, ok := s.jobs[id]; ok && j.Status == job.Blocked {
			j.Status, j.ProcessCount, j.QueueID, j.DateStarted, j.DateEnable = job.Active, 1, s.queueID, f.Now, f.Now.Add(time.Minute)
			c := *j
			rel.Claimed = append(rel.Claimed, &c)
		}
	}
	return done, rel, nil
}

// blocked puts a blocked job in the table.
func (s *fakeStore) blocked() *job.Job {
	j := job.New(nil, job.Options{})
	j.Status = job.Blocked
	s.mu.Lock()
	defer s.mu.Unlock()
	s.jobs[j.ID] = j
	c := *j
	return &c
}

func (s *fakeStore) Finish(_ context.Context, outs []rdb.Outcome) ([]rdb.RunKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var done []rdb.RunKey
	for _, o := range outs {
		if j, ok := s.jobs[o.ID]; ok && j.Status == job.Active && j.ProcessCount == o.ProcessCount {
			j.Status, j.DateFinished, j.QueueID = o.Status, o.DateFinished, s.queueID
			if o.DateEnable != nil {
				j.DateEnable = *o.DateEnable
			}
			s.finished = append(s.finished, o.Key())
			done = append(done, o.Key())
		}
	}
	if s.loseFinish > 0 {
		// The write landed, and its answer is lost.
		s.loseFinish--
		return nil, errLostAnswer
	}
	return done, nil
}

// errLostAnswer is the error of a write whose answer the fake store loses.
var errLostAnswer = errors.New("fake: connection reset")

// Landed is rdb.Table.Landed's rule: the job holds the outcome's stamp, in a claim no
// earlier than the outcome's.
func (s *fakeStore) Landed(_ context.Context, outs []rdb.Outcome) ([]rdb.RunKey, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var done []rdb.RunKey
	for _, o := range outs {
		if j, ok := s.jobs[o.ID]; ok && j.QueueID == s.queueID && j.DateFinished.Equal(o.DateFinished) && j.ProcessCount >= o.ProcessCount {
			done = append(done, o.Key())
		}
	}
	return done, nil
}

func (s *fakeStore) ReadStamps(context.Context, []string) (map[string]rdb.StampedDoc, error) {
	return nil, nil
}

func (s *fakeStore) DeleteAny(context.Context, []string) error { return nil }

func (s *fakeStore) TakeTokens(_ context.Context, _ string, want int) (int, time.Duration, error) {
	return want, 0, nil
}

func (s *fakeStore) ReturnTokens(context.Context, string, int) error { return nil }

func (s *fakeStore) RenewLeases(context.Context, map[string]int, time.Duration) error { return nil }

func (s *fakeStore) DeleteWorker(context.Context) error { return nil }

func (s *fakeStore) PutWorker(_ context.Context, w rdb.WorkerBeat) (rdb.Beat, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]rdb.WorkerEntry, len(s.workers))
	for i, w := range s.workers {
		out[i] = rdb.WorkerEntry{QueueID: w}
	}
	if w.Limits && s.failBeatLimits > 0 {
		s.failBeatLimits--
		return rdb.Beat{}, errors.New("limits table unavailable")
	}
	s.entries++
	b := rdb.Beat{Workers: out}
	if w.Limits {
		s.beatLimitReads++
		set := s.limits
		b.Limits = &set
	}
	return b, nil
}

func (s *fakeStore) Limits(context.Context) (rdb.LimitSet, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limitReads++
	return s.limits, nil
}

func (s *fakeStore) counts() (reads, claims int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads, s.claims
}

// job returns a copy of the job id as the table holds it.
func (s *fakeStore) job(id string) *job.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := *s.jobs[id]
	return &c
}

func (s *fakeStore) status(id string) job.Status {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[id].Status
}

func (s *fakeStore) TakeSlots(context.Context, []rdb.SlotTake) (rdb.Slots, error) {
	return nil, errors.New("fakeStore: no running slots")
}

func (s *fakeStore) SequenceHeads(context.Context, []string) (map[string]rdb.Candidate, error) {
	return nil, errors.New("fakeStore: no sequences")
}

func (s *fakeStore) ReadSequenceJobs(context.Context, []string) (map[string]rdb.SequenceJob, error) {
	return nil, errors.New("fakeStore: no sequences")
}

func (s *fakeStore) EnsureSequenceIndex(context.Context) error { return nil }

func (s *fakeStore) ReleaseSlots(context.Context, map[string][]rdb.Holder) error { return nil }

func (s *fakeStore) Stale(context.Context, rdb.Slots, time.Time) (map[string][]string, error) {
	return nil, nil
}
