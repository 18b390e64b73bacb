// Command rjqsoak runs the queue for a long time under faults and checks, at the end,
// that no acknowledged job was lost, none was stranded, no run was repeated without a
// reason, every job's status agrees with what its handler said, and no worker process
// crashed.
//
//	go run ./cmd/rjqsoak -rethinkdb /path/to/rethinkdb -duration 60m
//	go run ./cmd/rjqsoak -addr 127.0.0.1:28015 -duration 10m   # a server you run: no restarts
//
// It starts (with -rethinkdb) its own RethinkDB server in a temporary directory, and a
// fault proxy (internal/testing/wirecount) in front of it, through which every other
// process talks to the server: a producer process that adds jobs at -rate jobs a second
// (four priorities, some delayed, some with more retries than others), and -workers
// worker processes at -concurrency, whose handlers fail -fail of their runs, each a
// Queue Master. Every -faults-every (a random time between its two values) it makes one
// fault: it SIGKILLs a worker and starts another, cuts every connection, partitions the
// network for 2–8 s (connections reset, new ones refused), makes every connection silent
// for 2–8 s (packets dropped: no reset, the peer just stops answering), or (with
// -rethinkdb) kills the server and starts it again.
//
// Each handler run appends "start" and then "end … ok|fail" lines for its job and claim
// (processCount) to its worker's ledger, fsynced; the producer appends each job it has
// an acknowledgement for. At the end the producer stops, the queue drains, and the
// checks run on the table, the ledgers and the jobs' logs. The last line sums them up;
// the exit status is 1 when any count that must be zero is not.
//
// With -triggers, it soaks a trigger (queue.Trigger): a writer process inserts and
// updates the documents of a table "orders" of the soak's database at -write-rate writes
// a second, through the proxy, each write setting the document's version v (one more
// per document) and updatedAt = r.now() (the trigger's index), and every worker declares
// the trigger "orders", whose job "order" carries {doc, v}. The writer appends each write
// to its ledger, fsynced: "ack" with the updatedAt the server wrote, "unknown" when the
// answer was lost ("try" before each write, in case the writer dies during it). The producer then adds -rate 20 jobs a second unless told otherwise.
// With -runners-down, every worker is stopped for that long in the middle of the soak
// while the writer goes on, and started again: the trigger catches up. At the end the
// writer stops, the soak waits for the trigger to catch up and the queue to drain, and
// checks that every document's last version has a job, that every job of the trigger is
// completed, of a version written, and the only one of its version; a second line sums
// those up, with the share of the intermediate versions (overwritten by a later one)
// that got a job, overall and among those written more than the trigger's lease and
// re-scan window (11 s) away from any fault.
//
// With -features too, the trigger's jobs use the queue's features, by document: every
// job in a group with a running limit (g0: 2, g1: 3, the default 6), the even documents'
// in a sequence keyed by the document, one document in 7 with a unique key, and the
// handler of one in 5 adds a child job that depends on the order's job. A third line sums
// up their checks, from the workers' ledgers: no group above its limit at any time but
// beside a run whose lease may have ended, each sequence's jobs one after the other in
// the order they were added, no child started before its parent completed, no job (or
// unique key) run twice at once.
//
//	go run ./cmd/rjqsoak -rethinkdb /path/to/rethinkdb -triggers -duration 30m
//	go run ./cmd/rjqsoak -rethinkdb /path/to/rethinkdb -triggers -duration 15m -runners-down 10m
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	role := flag.String("role", "", "internal: producer or worker (the orchestrator starts them)")
	addr := flag.String("addr", "", "a RethinkDB server to use (host:port), instead of -rethinkdb")
	server := flag.String("rethinkdb", "", "a RethinkDB binary: the soak starts its own server, and restarts it as a fault")
	duration := flag.Duration("duration", 10*time.Minute, "how long to add jobs and make faults")
	workers := flag.Int("workers", 3, "worker processes")
	concurrency := flag.Int("concurrency", 8, "jobs each worker runs at once")
	rate := flag.Float64("rate", 140, "jobs added per second")
	fail := flag.Float64("fail", 0.05, "the share of handler runs that fail")
	faultsMin := flag.Duration("faults-min", 10*time.Second, "the shortest wait between faults")
	faultsMax := flag.Duration("faults-max", 40*time.Second, "the longest wait between faults")
	kinds := flag.String("kinds", "kill,cut,partition,silent,restart", "the kinds of fault to make (restart: with -rethinkdb only)")
	dir := flag.String("dir", "", "where the ledgers and logs go (default: a new temporary directory)")
	db := flag.String("db", "rjqsoak", "internal: the database")
	ledger := flag.String("ledger", "", "internal: this process's ledger file")
	triggers := flag.Bool("triggers", false, "soak a trigger: a writer process writes the table orders, the workers run the trigger's jobs")
	writeRate := flag.Float64("write-rate", 100, "with -triggers: writes a second to the table orders")
	runnersDown := flag.Duration("runners-down", 0, "with -triggers: stop every worker for this long in the middle of the soak (the trigger catches up after)")
	features := flag.Bool("features", false, "with -triggers: the trigger's jobs use groups with running limits, sequences, unique keys and children")
	flag.Parse()
	if *triggers && *role == "" && !flagGiven("rate") {
		*rate = 20 // the trigger's jobs are most of the work: a few others beside them
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch *role {
	case "producer":
		err = runProducer(ctx, *addr, *db, *ledger, *rate, *concurrency)
	case "worker":
		err = runWorker(ctx, *addr, *db, *ledger, *concurrency, *fail, *triggers, *features)
	case "writer":
		err = runWriter(ctx, *addr, *db, *ledger, *writeRate, writerConns)
	case "":
		if (*addr == "") == (*server == "") {
			log.Fatal("rjqsoak: give one of -addr (a server you run) and -rethinkdb (a binary the soak runs and restarts)")
		}
		if *dir == "" {
			if *dir, err = os.MkdirTemp("", "rjqsoak-"); err != nil {
				log.Fatal(err)
			}
		}
		o := &orchestrator{
			addr: *addr, server: *server, dir: *dir, duration: *duration, workers: *workers,
			concurrency: *concurrency, rate: *rate, fail: *fail, faultsMin: *faultsMin, faultsMax: *faultsMax,
			kinds: strings.Split(*kinds, ","), triggers: *triggers, features: *triggers && *features,
			writeRate: *writeRate, runnersDown: *runnersDown,
		}
		err = o.run(ctx)
	default:
		err = fmt.Errorf("unknown -role %q", *role)
	}
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "rjqsoak:", err)
		os.Exit(1)
	}
}

// flagGiven reports whether the flag name was set on the command line.
func flagGiven(name string) bool {
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	return given
}

// ledgerFile opens path for appending lines, each synced to disk before it returns.
type ledgerFile struct{ f *os.File }

func openLedger(path string) (*ledgerFile, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return &ledgerFile{f}, nil
}

// write appends one line made of fields and syncs it.
func (l *ledgerFile) write(fields ...string) error {
	if _, err := l.f.WriteString(strings.Join(fields, " ") + "\n"); err != nil {
		return err
	}
	return l.f.Sync()
}

// writeUnsynced appends one line made of fields, without syncing it: it survives the
// process's death, not the machine's.
func (l *ledgerFile) writeUnsynced(fields ...string) error {
	_, err := l.f.WriteString(strings.Join(fields, " ") + "\n")
	return err
}

func (l *ledgerFile) Close() error { return l.f.Close() }
