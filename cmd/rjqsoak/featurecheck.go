package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// featureResult is what the checks of -features found in the ledgers' runs.
type featureResult struct {
	// peaks is the most runs of each group seen at once; overCap counts the runs that
	// started while their group's limit was reached, overCapExplained those of them
	// beside a run whose lease may have ended (cancelled, its worker killed, or longer
	// than a lease).
	peaks, limits             map[string]int
	overCap, overCapExplained int
	// sequenced counts the jobs in a sequence; outOfOrder those that started before the
	// job ahead of them in their sequence had ended.
	sequenced, outOfOrder int
	// children counts the child jobs; childEarly those that started before their parent
	// completed; childMissing the completed parents without their child; childUnfinished
	// the children not completed.
	children, childEarly, childMissing, childUnfinished int
	// twiceAtOnce counts the runs that started while another run of their job (of their
	// unique key, for a job that has one) had not ended, overlapExplained those beside a
	// run whose lease may have ended.
	twiceAtOnce, twiceExplained int
	// uniqueRuns counts the runs of unique-key jobs; uniqueLastRan the unique-key
	// documents whose last version ran (the others' were coalesced into a job that was
	// waiting when the version came: the unique key's rules); phantomRuns the runs of a
	// version never written.
	uniqueRuns, uniqueDocs, uniqueLastRan, phantomRuns int
	details                                            []string
	noted                                              map[string]int
}

func (f featureResult) clean() bool {
	return f.overCap == f.overCapExplained && f.outOfOrder == 0 && f.childEarly == 0 && f.childMissing == 0 &&
		f.childUnfinished == 0 && f.twiceAtOnce == f.twiceExplained && f.phantomRuns == 0
}

func (f featureResult) String() string {
	var peaks []string
	for _, g := range slices.Sorted(maps.Keys(f.peaks)) {
		peaks = append(peaks, fmt.Sprintf("%s %d/%d", g, f.peaks[g], limitOf(f.limits, g)))
	}
	return fmt.Sprintf("soak features: group peaks (running/limit) %s, %d runs over a limit (%d beside a lease that may have ended); "+
		"%d jobs in sequences, %d out of order; %d children, %d started before their parent completed, %d missing, %d not completed; "+
		"%d runs while their job or unique key ran (%d beside a lease that may have ended); %d runs of unique-key jobs, "+
		"%d of %d unique-key documents whose last version ran; %d runs of a version never written",
		strings.Join(peaks, ", "), f.overCap, f.overCapExplained, f.sequenced, f.outOfOrder,
		f.children, f.childEarly, f.childMissing, f.childUnfinished, f.twiceAtOnce, f.twiceExplained,
		f.uniqueRuns, f.uniqueLastRan, f.uniqueDocs, f.phantomRuns)
}

func (f *featureResult) note(kind, format string, args ...any) {
	if f.noted == nil {
		f.noted = map[string]int{}
	}
	f.noted[kind]++
	if f.noted[kind] <= maxNoted {
		f.details = append(f.details, kind+": "+fmt.Sprintf(format, args...))
	}
}

// limitOf is group's running limit in limits: its own, or the default ("").
func limitOf(limits map[string]int, group string) int {
	if n, ok := limits[group]; ok {
		return n
	}
	return limits[""]
}

// leaseLimit is the longest a run may last without its job's lease ending (the workers'
// heartbeat of 10 s, plus 1 s).
const leaseLimit = 11 * time.Second

// runEnd is when r ended: its end line, or its worker's death; zero when neither is known.
func runEnd(r run) time.Time {
	if !r.end.IsZero() {
		return r.end
	}
	return r.worker.killed
}

// mayOutliveLease reports whether r's job may have been taken from it while it ran: it
// was cancelled, its worker was killed, it has no end, or it lasted more than a lease.
func mayOutliveLease(r run) bool {
	end := runEnd(r)
	return r.outcome == "cancelled" || r.outcome == "" || end.IsZero() || end.Sub(r.start) > leaseLimit
}

// checkFeatures checks the runs of the trigger's jobs and their children (runs by job id,
// from the workers' ledgers) against the features their documents have: group limits,
// sequences, children after their parents, no job or unique key run twice at once, and
// no run of a version never written (writes, final: the writer's ledger and the table).
// limits are the groups' running limits ("": the default).
func checkFeatures(jobs []orderJob, runs map[string][]run, writes []ledgered, final map[string]version, limits map[string]int) featureResult {
	f := featureResult{limits: limits}
	byID := make(map[string]orderJob, len(jobs))
	for _, j := range jobs {
		byID[j.id] = j
	}
	checkGroups(&f, jobs, runs)
	checkSequences(&f, jobs, runs)
	checkChildren(&f, jobs, byID, runs)
	checkOverlaps(&f, jobs, runs)
	checkUniqueRuns(&f, jobs, runs, writes, final)
	return f
}

// checkGroups sweeps the runs of each group in time and counts those that started while
// their group's limit was reached.
func checkGroups(f *featureResult, jobs []orderJob, runs map[string][]run) {
	type event struct {
		at    time.Time
		delta int
		r     *run
	}
	byGroup := map[string][]event{}
	for _, j := range jobs {
		if j.group == "" {
			continue
		}
		for i := range runs[j.id] {
			r := &runs[j.id][i]
			if end := runEnd(*r); !end.IsZero() {
				byGroup[j.group] = append(byGroup[j.group], event{r.start, 1, r}, event{end, -1, r})
			}
		}
	}
	f.peaks = map[string]int{}
	for g, evs := range byGroup {
		limit := limitOf(f.limits, g)
		slices.SortFunc(evs, func(a, b event) int {
			return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.delta, b.delta)) // ends first
		})
		running := map[*run]bool{}
		for _, e := range evs {
			if e.delta < 0 {
				delete(running, e.r)
				continue
			}
			running[e.r] = true
			f.peaks[g] = max(f.peaks[g], len(running))
			if len(running) <= limit {
				continue
			}
			f.overCap++
			explained := false
			for r := range running {
				explained = explained || mayOutliveLease(*r)
			}
			if explained {
				f.overCapExplained++
				continue
			}
			f.note("over the limit", "group %s: %d runs at %s (limit %d)", g, len(running), stamp(e.at), limit)
		}
	}
}

// firstStart is when the first of rs started (zero: none).
func firstStart(rs []run) time.Time {
	var first time.Time
	for _, r := range rs {
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
	}
	return first
}

// lastEnd is when the last of rs ended; false when one has no known end.
func lastEnd(rs []run) (time.Time, bool) {
	var last time.Time
	for _, r := range rs {
		end := runEnd(r)
		if end.IsZero() {
			return time.Time{}, false
		}
		if end.After(last) {
			last = end
		}
	}
	return last, true
}

// checkSequences checks that the jobs of each sequence ran one after the other, in the
// order they were added: every run of a job after every run of the one ahead of it.
func checkSequences(f *featureResult, jobs []orderJob, runs map[string][]run) {
	byKey := map[string][]orderJob{}
	for _, j := range jobs {
		if j.seqKey != "" {
			byKey[j.seqKey] = append(byKey[j.seqKey], j)
			f.sequenced++
		}
	}
	for key, js := range byKey {
		slices.SortFunc(js, func(a, b orderJob) int { return cmp.Or(cmp.Compare(a.seqAt, b.seqAt), cmp.Compare(a.v, b.v)) })
		for i := 1; i < len(js); i++ {
			a, b := js[i-1], js[i]
			if len(runs[b.id]) == 0 {
				continue // b never ran: nothing to put in order
			}
			bFirst := firstStart(runs[b.id])
			aLast, known := lastEnd(runs[a.id])
			switch {
			case !known:
				continue // a run of a has no known end: no telling
			case len(runs[a.id]) > 0 && aLast.Before(bFirst):
				continue
			}
			f.outOfOrder++
			f.note("out of order", "sequence %s: job %s (version %d) started at %s; job %s ahead of it (version %d) ran %d times, last ended %s",
				key, b.id, b.v, stamp(bFirst), a.id, a.v, len(runs[a.id]), stamp(aLast))
		}
	}
}

// checkChildren checks each child: completed, started after its parent's completing run
// ended; and that each completed parent whose document has children has its child.
func checkChildren(f *featureResult, jobs []orderJob, byID map[string]orderJob, runs map[string][]run) {
	hasChild := map[string]bool{}
	for _, c := range jobs {
		if c.name != shipJobName {
			continue
		}
		f.children++
		if c.status != job.Completed {
			f.childUnfinished++
			f.note("child not completed", "child %s of %v is %s", c.id, c.parents, c.status)
		}
		for _, p := range c.parents {
			hasChild[p] = true
			var completed time.Time // the end of the parent's last run that ended ok
			for _, r := range runs[p] {
				if r.outcome == "ok" && r.end.After(completed) {
					completed = r.end
				}
			}
			first := firstStart(runs[c.id])
			if len(runs[c.id]) > 0 && (completed.IsZero() || first.Before(completed)) {
				f.childEarly++
				f.note("child before its parent", "child %s started at %s, its parent %s completed at %s", c.id, stamp(first), p, stamp(completed))
			}
		}
	}
	for _, p := range jobs {
		if p.name != shipJobName && p.status == job.Completed && p.uniqueKey == "" && featuresOf(p.doc).child && !hasChild[p.id] {
			f.childMissing++
			f.note("child missing", "job %s of document %s version %d completed without its child", p.id, p.doc, p.v)
		}
	}
}

// checkOverlaps counts the runs that started while another run of their job (the same
// id: of the same unique key, for a job that has one) had not ended.
func checkOverlaps(f *featureResult, jobs []orderJob, runs map[string][]run) {
	for _, j := range jobs {
		rs := slices.Clone(runs[j.id])
		slices.SortFunc(rs, func(a, b run) int { return a.start.Compare(b.start) })
		for i := 1; i < len(rs); i++ {
			prev := rs[i-1]
			end := runEnd(prev)
			if end.IsZero() || !rs[i].start.Before(end) {
				continue
			}
			f.twiceAtOnce++
			if mayOutliveLease(prev) {
				f.twiceExplained++
				continue
			}
			f.note("twice at once", "job %s (key %q) started at %s in %s, its run in %s ended at %s",
				j.id, j.uniqueKey, stamp(rs[i].start), rs[i].worker.name, prev.worker.name, stamp(end))
		}
	}
}

// checkUniqueRuns counts the runs of unique-key jobs and the unique-key documents whose
// last version ran, and checks that every run of the trigger's jobs is of a version
// written (acknowledged or unknown).
func checkUniqueRuns(f *featureResult, jobs []orderJob, runs map[string][]run, writes []ledgered, final map[string]version) {
	written := make(map[docVersion]bool, len(writes))
	for _, w := range writes {
		written[docVersion{w.doc, w.v}] = w.outcome != writeNoop
	}
	ran := map[docVersion]bool{}
	for _, j := range jobs {
		for _, r := range runs[j.id] {
			if r.name != orderJobName {
				continue
			}
			if !written[docVersion{r.doc, r.v}] {
				f.phantomRuns++
				f.note("run of a version never written", "job %s ran document %s version %d", j.id, r.doc, r.v)
			}
			if j.uniqueKey != "" {
				f.uniqueRuns++
				if r.outcome == "ok" {
					ran[docVersion{r.doc, r.v}] = true
				}
			}
		}
	}
	for doc, v := range final {
		if featuresOf(doc).unique {
			f.uniqueDocs++
			if ran[docVersion{doc, v.v}] {
				f.uniqueLastRan++
			}
		}
	}
}
