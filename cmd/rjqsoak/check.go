package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// result is what the checks found.
type result struct {
	took                                   time.Duration
	added, finished, completed, terminated int
	lost, stranded, duplicates, mismatches int
	crashes                                int
	explainedReruns                        int
	faults                                 map[string]int
	details                                []string
}

func (r result) clean() bool {
	return r.lost == 0 && r.stranded == 0 && r.duplicates == 0 && r.mismatches == 0 && r.crashes == 0
}

func (r result) String() string {
	var fs []string
	total := 0
	for k, n := range r.faults {
		fs = append(fs, fmt.Sprintf("%d %s", n, k))
		total += n
	}
	sort.Strings(fs)
	return fmt.Sprintf("soak: %v, %d jobs added, %d finished (%d completed, %d terminated), %d lost, %d stranded, "+
		"%d unexplained duplicate runs, %d outcome mismatches, %d crashes; %d faults (%s); %d reruns explained by a kill or a failure",
		r.took.Round(time.Second), r.added, r.finished, r.completed, r.terminated, r.lost, r.stranded,
		r.duplicates, r.mismatches, r.crashes, total, strings.Join(fs, ", "), r.explainedReruns)
}

// run is one handler run of a job, from a worker's ledger.
type run struct {
	pc         int
	worker     *child
	start, end time.Time // end: zero when the run has no end line
	outcome    string    // ok, fail, cancelled, or "" when the run has no end line
	// name, doc and v are, for the trigger's jobs and their children, the job's name and
	// the version its payload names.
	name, doc string
	v         int
}

// killedBefore reports whether r's worker was killed before t (or at all, for the zero t).
func (r run) killedBefore(t time.Time) bool {
	k := r.worker.killed
	return !k.IsZero() && (t.IsZero() || k.Before(t))
}

// check waits for the queue to drain (see drain), then checks every acknowledged job
// against the table and the ledgers.
func (o *orchestrator) check(ctx context.Context, q *queue.Queue, started time.Time) (result, error) {
	var res result
	added, err := readAdded(filepath.Join(o.dir, "producer.ledger"))
	if err != nil {
		return res, err
	}
	res.added = len(added)
	ids := make([]string, 0, len(added))
	for id := range added {
		ids = append(ids, id)
	}
	o.drain(ctx, q)
	jobs := map[string]*job.Job{}
	for chunk := range slices.Chunk(ids, 1000) {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		got, err := q.GetJob(cctx, chunk...)
		cancel()
		if err != nil && !strings.Contains(err.Error(), "not found") {
			return res, fmt.Errorf("read the jobs: %w", err)
		}
		for _, j := range got {
			jobs[j.ID] = j
		}
		if err != nil {
			// Some are missing: read them one by one to know which.
			for _, id := range chunk {
				if g, err := q.GetJob(ctx, id); err == nil {
					jobs[id] = g[0]
				}
			}
		}
	}
	runs, err := o.readRuns()
	if err != nil {
		return res, err
	}
	for _, id := range ids {
		j, ok := jobs[id]
		if !ok {
			res.lost++
			res.details = append(res.details, "lost: "+id)
			continue
		}
		if !j.Status.Finished() {
			res.stranded++
			res.details = append(res.details, fmt.Sprintf("stranded: %s %s", id, j.Status))
			continue
		}
		res.finished++
		switch j.Status {
		case job.Completed:
			res.completed++
		case job.Terminated:
			res.terminated++
		}
		o.judge(&res, j, runs[id])
	}
	for _, d := range res.details {
		o.logf("%s", d)
	}
	return res, nil
}

// judge checks one finished job's runs: each claim ran at most once; a claim ran again
// only after a failure or a run whose worker was killed; and the job's status agrees
// with its last run.
func (o *orchestrator) judge(res *result, j *job.Job, rs []run) {
	byPC := map[int][]run{}
	for _, r := range rs {
		byPC[r.pc] = append(byPC[r.pc], r)
	}
	for pc, same := range byPC {
		if len(same) > 1 {
			res.duplicates++
			res.details = append(res.details, fmt.Sprintf("duplicate: job %s claim %d ran %d times", j.ID, pc, len(same)))
		}
	}
	for pc := 1; pc < j.ProcessCount; pc++ {
		prev := byPC[pc]
		if len(prev) == 0 {
			// A claim whose run left no line: its worker died between claim and handler.
			if o.anyKilled() {
				res.explainedReruns++
				continue
			}
			res.duplicates++
			res.details = append(res.details, fmt.Sprintf("unexplained: job %s claim %d has no run in any ledger", j.ID, pc))
			continue
		}
		r := prev[0]
		var next time.Time // when the job's next run started, if a ledger has it
		for later := pc + 1; later <= j.ProcessCount && next.IsZero(); later++ {
			if rs := byPC[later]; len(rs) > 0 {
				next = rs[0].start
			}
		}
		switch {
		case r.outcome == "fail":
			res.explainedReruns++ // a retry
		case r.killedBefore(next):
			res.explainedReruns++ // its worker was killed before the outcome was written
		default:
			res.duplicates++
			res.details = append(res.details, fmt.Sprintf("unexplained: job %s ran again after claim %d ended %q in %s, which was not killed",
				j.ID, pc, r.outcome, r.worker.name))
		}
	}
	last := byPC[j.ProcessCount]
	if len(last) == 0 {
		if j.Status == job.Terminated && o.anyKilled() {
			return // its last claim's worker died before the handler ran; a Master ended it
		}
		res.mismatches++
		res.details = append(res.details, fmt.Sprintf("mismatch: job %s is %s, and its last claim %d has no run", j.ID, j.Status, j.ProcessCount))
		return
	}
	r := last[0]
	switch {
	case j.Status == job.Completed && r.outcome == "ok":
	case j.Status == job.Terminated && r.outcome == "fail":
	case j.Status == job.Terminated && r.killedBefore(time.Time{}):
		// Its worker was killed: a Master failed the run when its lease ended.
	default:
		res.mismatches++
		res.details = append(res.details, fmt.Sprintf("mismatch: job %s is %s, but its last run (claim %d, %s) ended %q",
			j.ID, j.Status, j.ProcessCount, r.worker.name, r.outcome))
	}
}

func (o *orchestrator) anyKilled() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, c := range o.children {
		if !c.killed.IsZero() {
			return true
		}
	}
	return false
}

// readAdded reads the producer's ledger: job id → retryMax.
func readAdded(path string) (map[string]int, error) {
	out := map[string]int{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return out, nil // no producer ran (-rate 0)
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) == 3 && fs[0] == "added" {
			out[fs[1]], _ = strconv.Atoi(fs[2])
		}
	}
	return out, sc.Err()
}

// readRuns reads every worker's ledger: job id → its runs.
func (o *orchestrator) readRuns() (map[string][]run, error) {
	o.mu.Lock()
	children := slices.Clone(o.children)
	o.mu.Unlock()
	out := map[string][]run{}
	for _, c := range children {
		f, err := os.Open(c.ledger)
		if err != nil {
			if os.IsNotExist(err) {
				continue
			}
			return nil, err
		}
		open := map[string]int{} // job+pc → index in out[job]
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			fs := strings.Fields(sc.Text())
			if len(fs) < 4 {
				continue // a line cut short by a kill
			}
			pc, _ := strconv.Atoi(fs[2])
			key := fs[1] + " " + fs[2]
			switch fs[0] {
			case "start":
				r := run{pc: pc, worker: c, start: unixNano(fs, 4)}
				if len(fs) >= 8 {
					r.name, r.doc = fs[5], fs[6]
					r.v, _ = strconv.Atoi(fs[7])
				}
				out[fs[1]] = append(out[fs[1]], r)
				open[key] = len(out[fs[1]]) - 1
			case "end":
				if i, ok := open[key]; ok && len(fs) >= 5 {
					out[fs[1]][i].outcome = fs[4]
					out[fs[1]][i].end = unixNano(fs, 5)
				}
			}
		}
		f.Close()
		if err := sc.Err(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// unixNano is the time fs[i] holds in Unix nanoseconds (zero: none).
func unixNano(fs []string, i int) time.Time {
	if i >= len(fs) {
		return time.Time{}
	}
	ns, err := strconv.ParseInt(fs[i], 10, 64)
	if err != nil {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

// drainStall is how long the drain waits for the live jobs to go down before it gives up:
// what is left then is stranded.
const drainStall = 2 * time.Minute

// drain waits until the queue holds no live job (waiting, active or failed), for as long as
// their number keeps going down: a backlog the workers are still working through (a soak
// that added faster than they process) is drained, however long it takes, and a job that
// cannot finish stops the wait after drainStall without progress. It reads the live counts
// only (Summary: three index counts), so that the wait does not slow the workers.
func (o *orchestrator) drain(ctx context.Context, q *queue.Queue) {
	best, progressed, logged := -1, time.Now(), time.Time{}
	for {
		sctx, cancel := context.WithTimeout(ctx, time.Minute)
		s, err := q.Summary(sctx)
		cancel()
		live := s.Waiting + s.Active + s.Failed
		switch {
		case err != nil:
			o.logf("soak: reading the live jobs: %v", err)
		case live == 0:
			return
		case best < 0 || live < best:
			best, progressed = live, time.Now()
		}
		if time.Since(progressed) > drainStall || ctx.Err() != nil {
			o.logf("soak: %d live jobs, none finished for %v: giving up the drain", live, drainStall)
			return
		}
		if time.Since(logged) >= 30*time.Second {
			logged = time.Now()
			o.logf("soak: draining, %d live jobs (%d waiting, %d active, %d failed)", live, s.Waiting, s.Active, s.Failed)
		}
		select {
		case <-time.After(2 * time.Second):
		case <-ctx.Done():
		}
	}
}
