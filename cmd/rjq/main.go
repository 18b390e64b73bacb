// Command rjq inspects and steers rethinkdb-job-queue queues (Go or Node.js) from a
// terminal: counts by status, job lists and details, cancel, reanimate, remove, global
// pause and resume, a Master review, live events, and a small web dashboard with
// Prometheus metrics.
//
//	rjq [--addr host:port] [--db name] [--queue name] [--json] command [args]
//
// The global flags may also come after the command: rjq summary --queue mail.
//
// It uses the standard flag package rather than a command framework: a dozen
// subcommands with the same few flags need nothing more, and the module stays free of
// dependencies beyond the library's.
//
// Exit codes: 0 success, 1 the operation failed (server, database), 2 bad usage or input
// (unknown command, malformed id, a table that is not a queue), 3 a job id not found.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailed   = 1
	exitUsage    = 2
	exitNotFound = 3
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// usageError is bad input from the user: exit code 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// run executes one command line and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	cfg, rest, err := parseGlobal(args, stderr)
	if err != nil {
		if errors.Is(err, errHelp) {
			return exitOK
		}
		fmt.Fprintln(stderr, "rjq:", err)
		return exitUsage
	}
	if len(rest) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	if rest[0] == "help" || (len(rest) > 1 && slices.Contains([]string{"-h", "-help", "--help"}, rest[1])) {
		return help(rest, stdout, stderr)
	}
	cmd, ok := commands[rest[0]]
	if !ok {
		fmt.Fprintf(stderr, "rjq: unknown command %q\n%s", rest[0], usage)
		return exitUsage
	}
	err = cmd(ctx, cfg, rest[1:], stdout)
	var ue usageError
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, &ue):
		fmt.Fprintln(stderr, "rjq:", err)
		return exitUsage
	case errors.Is(err, errNotFound):
		fmt.Fprintln(stderr, "rjq:", err)
		return exitNotFound
	default:
		fmt.Fprintln(stderr, "rjq:", err)
		return exitFailed
	}
}

// help prints the usage asked for on stdout: `rjq help` all of it, `rjq help CMD` and
// `rjq CMD --help` that command's lines.
func help(rest []string, stdout, stderr io.Writer) int {
	name := rest[0]
	if name == "help" {
		if len(rest) == 1 {
			fmt.Fprint(stdout, usage)
			return exitOK
		}
		name = rest[1]
	}
	text := commandUsage(name)
	if text == "" {
		fmt.Fprintf(stderr, "rjq help: unknown command %q\n%s", name, usage)
		return exitUsage
	}
	fmt.Fprintf(stdout, "usage: rjq [global flags] %s\n%s(rjq help: the global flags and every command)\n", name, text)
	return exitOK
}

// commandUsage is the lines of usage that describe the command name: each entry whose
// first line names it ("pause | resume" names both), with its continuation lines; "" for
// no command of that name.
func commandUsage(name string) string {
	_, list, _ := strings.Cut(usage, "commands:\n")
	list, _, _ = strings.Cut(list, "\n\n")
	var b strings.Builder
	keep := false
	for _, line := range strings.Split(list, "\n") {
		if entry, ok := strings.CutPrefix(line, "  "); ok && !strings.HasPrefix(entry, " ") {
			// An entry's first line: its command, or commands ("pause | resume"), then
			// its arguments.
			first := strings.Fields(entry)[0]
			keep = first == name || (strings.HasPrefix(entry, name+" | ") || strings.Contains(entry, " | "+name+" "))
		}
		if keep {
			b.WriteString(line + "\n")
		}
	}
	return b.String()
}

const usage = `usage: rjq [--addr host:port] [--db name] [--queue name] [--json] [--tls | --tls-ca file] command [args]
(the global flags may also come after the command; --addr defaults to localhost:28015,
--db to rjqJobQueue and --queue to rjqJobList, the Node.js library's defaults)

commands:
  summary                  job counts by status
  list [--status s] [--name n] [--group g] [--sequence q] [--limit n]
       [--cursor c [--newer]] [--field path --value v] [--text t] [--after id]
                           with --status: that status's jobs in its time order (finished
                           ones newest first, waiting ones in the order workers take
                           them, blocked ones by id), a page at a time, through its
                           index; --field/--value search the payload, --text the log
                           messages and errors. --sequence: the sequence's unfinished
                           jobs (of --status, if given) in the order they run, through
                           its index. --group needs --status: no index holds groups, so
                           a page looks at 500 jobs of the status at most and says where
                           to go on. Without --status: every job in id order (--after
                           id: the page after it), the one order every table size can
                           afford
  show ID...               jobs with their logs, grouped by run: who ran each attempt
                           (host, pid), when, for how long, the outcome, error and stack,
                           and a completed job's result
  add [--data JSON] [--name n] [--priority p] [--delay d] [--timeout d] [--retry-max n]
      [--unique key [--unique-for d] [--debounce d]] [--deadline d]
      [--group g] [--sequence q] [--depends-on ID,ID...]
                           add one job; --depends-on adds it blocked until those jobs
                           (in the table) have completed
  cancel ID... [--reason r]
  reanimate ID...
  reanimate --status failed|terminated [--name n] [--batch n]
  remove ID...
  remove --status completed|cancelled|terminated --older-than 7d [--name n] [--batch n]
                           every job the filter selects, --batch (at most 1000) ids per
                           query, progress on stderr
  pause | resume           global, through the State Document
  review                   run a Queue Master review once
  watch                    live events, one line each, until Ctrl-C
  queues                   the queue tables of the database
  workers                  the live Go workers of the queue (from their heartbeats)
  schedules                the queue's cron schedules and their next runs
  limits                   the rate limits and time windows of job names, the running caps,
                           and the groups' limits and jobs
  sequences                each sequence with unfinished jobs: its jobs waiting, running
                           and failed (to be retried), and the job that holds it
  triggers                 the queue's triggers: the table each watches, its cursor and
                           lag, the process that runs it, the jobs it made and skipped
  web [--listen addr] [--actions] [--prefix /path/] [--token t] [--basic-auth user:pass]
      [--metric-names N] [--metric-groups N]
                           dashboard at the prefix (default /), Prometheus metrics under it
                           at metrics; --token (RJQ_WEB_TOKEN) and --basic-auth
                           (RJQ_WEB_BASIC_AUTH) require credentials; --metric-names and
                           --metric-groups label the run metrics with the first N job
                           names or groups seen, the rest as other

The address also comes from RJQ_ADDR; RJQ_USER and RJQ_PASSWORD give the account;
RJQ_TLS=1 or RJQ_TLS_CA=file turn TLS on.
`
