// Command startreqlite installs reqlite from the kit in testdata/reqlite and starts it in
// the background, for test runs that are given a server through RJQ_TEST_ADDR, as .ci/run
// does. It is the same installer the tests use when they start reqlite themselves.
//
//	go run ./internal/testing/testserver/startreqlite [-port N] [-pidfile FILE] [-log FILE]
//
// It prints "reqlite pid PID on 127.0.0.1:PORT" once the server accepts connections and
// exits, leaving reqlite running; stop it with kill PID. The pid file is written as soon as
// reqlite has started. When reqlite does not come up, it is killed, the pid file removed,
// and the exit status is 1; its output stays in the log file. Run it from inside the module,
// where it finds the kit.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
)

func main() {
	port := flag.Int("port", 0, "driver port, above 28015 (0: a free one)")
	pidFile := flag.String("pidfile", "reqlite.pid", "file for reqlite's pid")
	logFile := flag.String("log", "reqlite.log", "file for reqlite's output")
	flag.Parse()
	if flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	s, pid, err := testserver.StartDetached(*port, *logFile, *pidFile)
	if err != nil {
		fmt.Fprintln(os.Stderr, "startreqlite:", err)
		os.Exit(1)
	}
	fmt.Printf("reqlite pid %d on %s\n", pid, s.Addr)
}
