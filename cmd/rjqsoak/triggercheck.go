package main

import (
	"bufio"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rjqgo/rethinkdb-job-queue/job"
)

// span is when a fault lasted (from = to for an instant one: a kill, a cut).
type span struct{ from, to time.Time }

// version is a document's version in the orders table: its number and its updatedAt.
type version struct {
	v  int
	at time.Time
}

// ledgered is one write of the writer's ledger.
type ledgered struct {
	doc     string
	v       int
	outcome int       // writeAcked, writeUnknown or writeNoop
	at      time.Time // its updatedAt, for an acknowledged write
}

// orderJob is one job the trigger made (or, with features, a child of one), as the
// queue's table holds it.
type orderJob struct {
	id, name, doc string // doc and v: its payload
	v             int
	status        job.Status
	processCount  int
	// trigger, markDoc and at are its rjqTrigger field: the trigger's name, the document
	// and the version's index value.
	trigger, markDoc string
	at               time.Time
	// group, seqKey, seqAt, uniqueKey and parents are its features (-features): its
	// group, its sequence's key and place, its unique key, and its parents.
	group, seqKey, uniqueKey string
	seqAt                    int64
	parents                  []string
}

// triggerResult is what the checks of the trigger found.
type triggerResult struct {
	writes, acked, unknown, noop int
	docs, jobs                   int
	uniqueDocs                   int // documents whose jobs have a unique key
	// missed counts the documents whose last version has no job; unfinished the
	// trigger's jobs not completed; doubled the versions with two jobs or more; phantoms
	// the jobs of no version written; lostWrites the documents the table holds behind
	// their last acknowledged write, or at a version never written.
	missed, unfinished, doubled, phantoms, lostWrites int
	// intermediate counts the acknowledged versions that are not their document's last,
	// intermediateJobs those of them with a job; quiet and quietJobs the same of the
	// versions written in a stretch without faults.
	intermediate, intermediateJobs, quiet, quietJobs int
	details                                          []string
	noted                                            map[string]int
}

func (t triggerResult) clean() bool {
	return t.missed == 0 && t.unfinished == 0 && t.doubled == 0 && t.phantoms == 0 && t.lostWrites == 0
}

func (t triggerResult) String() string {
	return fmt.Sprintf("soak triggers: %d writes to %d documents (%d acknowledged, %d unknown, %d superseded), %d jobs; "+
		"%d documents whose last version has no job, %d jobs not completed, %d versions with two jobs or more, "+
		"%d jobs of a version never written, %d documents behind their last acknowledged write; "+
		"intermediate versions with a job: %s, in the stretches without faults %s%s",
		t.writes, t.docs, t.acked, t.unknown, t.noop, t.jobs, t.missed, t.unfinished, t.doubled, t.phantoms, t.lostWrites,
		share(t.intermediateJobs, t.intermediate), share(t.quietJobs, t.quiet), uniqueNote(t.uniqueDocs))
}

// uniqueNote says how many documents were left out of the counts of the last and the
// intermediate versions for their unique key.
func uniqueNote(n int) string {
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d documents with a unique key left out of both: its rules coalesce their versions)", n)
}

// share is "n of of (p%)".
func share(n, of int) string {
	if of == 0 {
		return "0 of 0"
	}
	return fmt.Sprintf("%d of %d (%.2f%%)", n, of, 100*float64(n)/float64(of))
}

// maxNoted is how many details of one kind a result keeps.
const maxNoted = 20

// note keeps a detail of kind, up to maxNoted of each.
func (t *triggerResult) note(kind, format string, args ...any) {
	if t.noted == nil {
		t.noted = map[string]int{}
	}
	t.noted[kind]++
	if t.noted[kind] <= maxNoted {
		t.details = append(t.details, kind+": "+fmt.Sprintf(format, args...))
	}
}

// docVersion is a document's version number.
type docVersion struct {
	doc string
	v   int
}

// checkOrders checks the trigger's jobs against the writer's ledger and the table's last
// versions (final): every document's last version has a job; every job is completed, of
// a version written (acknowledged with its updatedAt, or unknown), and the only one of
// its version; the table holds no document behind its last acknowledged write. It counts
// the intermediate versions (acknowledged, not their document's last) that got a job,
// overall and among those written more than margin away from every fault span. The
// documents unique reports true for (nil: none) have jobs with a unique key, whose rules
// coalesce versions: their last versions and intermediate versions are not counted.
// Jobs named shipJobName are not the trigger's, and left out.
func checkOrders(writes []ledgered, final map[string]version, all []orderJob, spans []span, margin time.Duration,
	unique func(doc string) bool) triggerResult {
	var t triggerResult
	if unique == nil {
		unique = func(string) bool { return false }
	}
	var jobs []orderJob
	for _, j := range all {
		if j.name != shipJobName {
			jobs = append(jobs, j)
		}
	}
	byKey := make(map[docVersion]ledgered, len(writes))
	lastAck := map[string]int{} // every document written, with its last acknowledged version (0: none)
	for _, w := range writes {
		t.writes++
		switch w.outcome {
		case writeAcked:
			t.acked++
		case writeUnknown:
			t.unknown++
		case writeNoop:
			t.noop++
		}
		lastAck[w.doc] = max(lastAck[w.doc], ackedV(w))
		byKey[docVersion{w.doc, w.v}] = w
	}
	t.docs = len(final)
	t.jobs = len(jobs)
	jobsOf := checkJobs(&t, byKey, final, jobs)
	for _, doc := range slices.Sorted(maps.Keys(lastAck)) {
		checkLast(&t, doc, lastAck[doc], byKey, final, jobsOf, unique(doc))
	}
	for _, w := range writes {
		f, ok := final[w.doc]
		if w.outcome != writeAcked || !ok || w.v >= f.v || unique(w.doc) {
			continue
		}
		jobbed := len(jobsOf[docVersion{w.doc, w.v}]) > 0
		t.intermediate++
		if jobbed {
			t.intermediateJobs++
		}
		if near, ok := nearestSpan(w.at, spans, margin); ok {
			t.quiet++
			if jobbed {
				t.quietJobs++
			} else {
				t.note("no job in a stretch without faults", "document %s version %d, written %s, %v from the nearest fault",
					w.doc, w.v, w.at.Format("15:04:05.000"), near.Round(time.Millisecond))
			}
		}
	}
	return t
}

// ackedV is w's version when it was acknowledged, else 0.
func ackedV(w ledgered) int {
	if w.outcome == writeAcked {
		return w.v
	}
	return 0
}

// checkJobs checks each job (completed, of a version written, the only one of its
// version) and returns the jobs by version.
func checkJobs(t *triggerResult, byKey map[docVersion]ledgered, final map[string]version, jobs []orderJob) map[docVersion][]orderJob {
	jobsOf := make(map[docVersion][]orderJob, len(jobs))
	for _, j := range jobs {
		k := docVersion{j.doc, j.v}
		jobsOf[k] = append(jobsOf[k], j)
		if j.status != job.Completed {
			t.unfinished++
			t.note("not completed", "job %s of document %s version %d is %s", j.id, j.doc, j.v, j.status)
		}
		w, ok := byKey[k]
		f, isLast := final[j.doc]
		isLast = isLast && f.v == j.v
		switch {
		case j.trigger != ordersTrigger || j.markDoc != j.doc:
			t.phantoms++
			t.note("never written", "job %s of document %s version %d is marked trigger %q document %q", j.id, j.doc, j.v, j.trigger, j.markDoc)
		case !ok || w.outcome == writeNoop:
			t.phantoms++
			t.note("never written", "job %s of document %s version %d: no such write", j.id, j.doc, j.v)
		case w.outcome == writeAcked && !sameMilli(w.at, j.at):
			t.phantoms++
			t.note("never written", "job %s of document %s version %d is at %s, written at %s", j.id, j.doc, j.v, stamp(j.at), stamp(w.at))
		case w.outcome == writeUnknown && isLast && !sameMilli(f.at, j.at):
			t.phantoms++
			t.note("never written", "job %s of document %s version %d is at %s, the table's at %s", j.id, j.doc, j.v, stamp(j.at), stamp(f.at))
		}
	}
	for k, js := range jobsOf {
		if len(js) > 1 {
			t.doubled++
			t.note("doubled", "document %s version %d has %d jobs", k.doc, k.v, len(js))
		}
	}
	return jobsOf
}

// checkLast checks one document's last version in the table: not behind its last
// acknowledged write (lastAck), a version written, with a job (unless unique).
func checkLast(t *triggerResult, doc string, lastAck int, byKey map[docVersion]ledgered, final map[string]version,
	jobsOf map[docVersion][]orderJob, unique bool) {
	f, ok := final[doc]
	if !ok {
		if lastAck > 0 {
			t.lostWrites++
			t.note("behind", "document %s is not in the table; version %d was acknowledged", doc, lastAck)
		}
		return // none of its writes landed
	}
	if f.v < lastAck {
		t.lostWrites++
		t.note("behind", "document %s is at version %d; version %d was acknowledged", doc, f.v, lastAck)
	}
	w, ok := byKey[docVersion{doc, f.v}]
	if !ok || w.outcome == writeNoop || (w.outcome == writeAcked && !sameMilli(w.at, f.at)) {
		t.lostWrites++
		t.note("behind", "document %s is at version %d (%s), which no write of the ledger wrote", doc, f.v, stamp(f.at))
	}
	if unique {
		t.uniqueDocs++
		return
	}
	if len(jobsOf[docVersion{doc, f.v}]) == 0 {
		t.missed++
		t.note("missed", "document %s: its last version %d (%s) has no job", doc, f.v, stamp(f.at))
	}
}

// nearestSpan reports whether at is more than margin away from every span, and how far
// the nearest is (0 when there is none).
func nearestSpan(at time.Time, spans []span, margin time.Duration) (time.Duration, bool) {
	nearest := time.Duration(-1)
	for _, s := range spans {
		var d time.Duration
		switch {
		case at.Before(s.from):
			d = s.from.Sub(at)
		case at.After(s.to):
			d = at.Sub(s.to)
		}
		if nearest < 0 || d < nearest {
			nearest = d
		}
	}
	return max(nearest, 0), nearest < 0 || nearest > margin
}

// sameMilli reports whether a and b are the same millisecond (RethinkDB keeps times to the
// millisecond; a time's round trip through its float may move it by a microsecond).
func sameMilli(a, b time.Time) bool {
	return a.Round(time.Millisecond).Equal(b.Round(time.Millisecond))
}

func stamp(t time.Time) string { return t.Format("15:04:05.000") }

// readWrites reads the writer's ledger.
func readWrites(path string) ([]ledgered, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return collectWrites(bufio.NewScanner(f))
}

// collectWrites reads the writer's ledger lines: each write once, with its outcome; a
// write tried whose outcome has no line (its writer died meanwhile) is unknown.
func collectWrites(sc *bufio.Scanner) ([]ledgered, error) {
	var out []ledgered
	at := map[docVersion]int{} // index in out
	for sc.Scan() {
		w, ok := parseWrite(sc.Text())
		if !ok {
			continue
		}
		k := docVersion{w.doc, w.v}
		if i, seen := at[k]; seen {
			if w.outcome != writeTried {
				out[i] = w
			}
			continue
		}
		at[k] = len(out)
		out = append(out, w)
	}
	for i := range out {
		if out[i].outcome == writeTried {
			out[i].outcome = writeUnknown
		}
	}
	return out, sc.Err()
}

// parseWrite parses a line of the writer's ledger (see ledgerLine); a line cut short is
// not one.
func parseWrite(line string) (ledgered, bool) {
	fs := strings.Fields(line)
	if len(fs) < 3 {
		return ledgered{}, false
	}
	v, err := strconv.Atoi(fs[2])
	if err != nil {
		return ledgered{}, false
	}
	w := ledgered{doc: fs[1], v: v}
	switch {
	case fs[0] == "ack" && len(fs) == 4:
		ns, err := strconv.ParseInt(fs[3], 10, 64)
		if err != nil {
			return ledgered{}, false
		}
		w.outcome, w.at = writeAcked, time.Unix(0, ns)
	case fs[0] == "unknown" && len(fs) == 3:
		w.outcome = writeUnknown
	case fs[0] == "try" && len(fs) == 3:
		w.outcome = writeTried
	case fs[0] == "noop" && len(fs) == 3:
		w.outcome = writeNoop
	default:
		return ledgered{}, false
	}
	return w, true
}
