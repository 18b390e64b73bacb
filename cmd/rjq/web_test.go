package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/queuetest"
	"github.com/rjqgo/rethinkdb-job-queue/internal/testing/testserver"
	"github.com/rjqgo/rethinkdb-job-queue/job"
	"github.com/rjqgo/rethinkdb-job-queue/queue"
)

// chromium finds the browser for the dashboard test: RJQ_CHROMIUM, else the usual names
// on PATH. Without one the test skips, since a browser is not a Go dependency.
func chromium(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("RJQ_CHROMIUM"); p != "" {
		path, err := exec.LookPath(p)
		require.NoError(t, err, "RJQ_CHROMIUM=%s", p)
		return path
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	t.Skip("the dashboard's browser test needs Chromium: install it (Debian: apt-get install chromium) or set RJQ_CHROMIUM to its path")
	return ""
}

// startWeb runs the built `rjq [global...] web --listen 127.0.0.1:0 [web...]`, on a port
// the system picks, and returns the dashboard's URL; the server gets Ctrl-C when the test
// ends.
func startWeb(t *testing.T, bin string, global []string, web ...string) string {
	t.Helper()
	args := append(append(global, "web", "--listen", "127.0.0.1:0"), web...)
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "RJQ_ADDR=")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		_ = cmd.Wait()
	})
	first := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			first <- sc.Text()
		}
		close(first)
		for sc.Scan() { // read to the end, as Wait wants
		}
	}()
	select {
	case line, ok := <-first:
		if !ok {
			_ = cmd.Wait()
			t.Fatalf("rjq web exited before serving: %s", stderr.String())
		}
		// "rjq web: http://127.0.0.1:PORT/ (queue …)"
		fields := strings.Fields(line)
		require.GreaterOrEqual(t, len(fields), 3, "rjq web printed %q", line)
		return fields[2]
	case <-time.After(time.Minute):
		t.Fatal("rjq web printed no address within a minute")
	}
	return ""
}

// within runs browser actions under a deadline of their own, so a wait that never ends
// fails the test with what it waited for instead of hanging it.
func within(t *testing.T, ctx context.Context, d time.Duration, what string, actions ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	require.NoError(t, chromedp.Do(ctx, actions...), "waiting for %s", what)
}

// click clicks the element sel in the page itself, once it is there: the dashboard
// redraws its tables every few seconds, and a node that chromedp.Click found may be gone
// by the time it clicks it ("Could not find node with given id").
func click(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	poll[bool](t, ctx, 20*time.Second, what, fmt.Sprintf(`(() => {
		const e = document.querySelector(%q);
		if (!e) return false;
		e.click();
		return true;
	})()`, sel))
}

// poll waits for a JavaScript expression to become truthy and returns its value.
func poll[T any](t *testing.T, ctx context.Context, d time.Duration, what, expr string) T {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Poll[T](expr, chromedp.WithPollingTimeout(d)))
	require.NoError(t, err, "waiting for %s", what)
	return v
}

// screenshot saves the page as docs/NAME when RJQ_SCREENSHOTS is set: the README shows
// these, and making them from the test keeps them true to the page.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("RJQ_SCREENSHOTS") == "" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join("..", "..", "docs", name)
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("saved %s", path)
}

// barWidth is a JavaScript expression: the rendered width of the progress bar that the
// selector bar finds, in percent of its track, once it is within half a percent of want;
// else 0. The rendered width, not the style, is what a user sees move.
func barWidth(bar string, want float64) string {
	return fmt.Sprintf(`(() => {
		const b = document.querySelector(%q);
		if (!b) return 0;
		const w = b.getBoundingClientRect().width / b.parentElement.getBoundingClientRect().width * 100;
		return Math.abs(w - %g) < 0.5 ? w : 0;
	})()`, bar, want)
}

// The dashboard as a user sees it in a real browser: a job added meanwhile appears, its
// cancel button cancels it, progress bars move as the handler reports progress, and the
// throughput chart counts finished runs, all without a reload.
func TestDashboardInABrowser(t *testing.T) {
	browserPath := chromium(t)
	srv := testserver.Get(t)
	db := testserver.DB(t)
	addr := net.JoinHostPort(srv.Host, strconv.Itoa(srv.Port))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "emails"
	lib, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{Name: name, MasterInterval: -1, NoChangeFeed: true}))
	require.NoError(t, err)
	defer func() { _ = lib.Stop(context.Background()) }()
	require.NoError(t, lib.Ready(ctx))
	// A job for later, so the dashboard shows a waiting one.
	_, err = lib.AddJob(ctx, lib.CreateJob("monthly").SetName("report").SetDateEnable(time.Now().Add(time.Hour)))
	require.NoError(t, err)

	bin := binary(t)
	base := []string{"--addr", addr, "--db", db, "--queue", name}
	// Mounted under a prefix, so that every URL the page uses must be relative to it.
	url := startWeb(t, bin, base, "--actions", "--prefix", "/ops/queue")
	require.True(t, strings.HasSuffix(url, "/ops/queue/"), "rjq web serves at %s", url)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browserPath),
		chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, // Chromium runs as root in CI
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx, chromedp.WithLogf(t.Logf))
	defer cancelBrowser()
	// The first run starts the browser; it must not carry a deadline, which would end it.
	require.NoError(t, chromedp.Do(bctx), "start %s", browserPath)
	start := time.Now()

	// Accept every confirmation dialog, keeping its message for the checks.
	var dialogMu sync.Mutex
	var dialogs []string
	opened := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for ev, err := range opened {
			if err != nil {
				return
			}
			dialogMu.Lock()
			dialogs = append(dialogs, ev.Message)
			dialogMu.Unlock()
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()

	within(t, bctx, 30*time.Second, "the dashboard",
		chromedp.Navigate(url),
		chromedp.WaitVisible(chromedp.CSS("#count-waiting")),
	)
	// A reload would lose this; the checks at the end look for it.
	_, err = chromedp.Run(bctx, chromedp.Evaluate[string](`window.rjqTestMarker = "same page"`))
	require.NoError(t, err)

	t.Run("a job added meanwhile appears", func(t *testing.T) {
		added, err := lib.AddJob(ctx, lib.CreateJob("to ann").SetName("cancel-me"))
		require.NoError(t, err)
		id := added[0].ID
		row := fmt.Sprintf(`tr[data-id=%q]`, id)
		within(t, bctx, 20*time.Second, "the new job's row", chromedp.WaitVisible(chromedp.CSS(row)))
		status, err := chromedp.Run(bctx, chromedp.Text(chromedp.CSS(row+" .status")))
		require.NoError(t, err)
		assert.Equal(t, "waiting", status)

		t.Run("its cancel button cancels it", func(t *testing.T) {
			click(t, bctx, "the cancel button", row+" button.cancel")
			require.Eventually(t, func() bool {
				got, err := lib.GetJob(ctx, id)
				return err == nil && got[0].Status == job.Cancelled
			}, 20*time.Second, 50*time.Millisecond, "the job is cancelled in the database")
			got, err := lib.GetJob(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, "cancelled from the rjq dashboard", got[0].GetLastLog().Message)
			dialogMu.Lock()
			assert.Contains(t, dialogs, "cancel job "+id+"?", "the button asked first")
			dialogMu.Unlock()
			poll[bool](t, bctx, 20*time.Second, "the row to say cancelled",
				fmt.Sprintf(`document.querySelector(%q)?.textContent === "cancelled"`, row+" .status"))
		})
	})

	// A worker: quick jobs complete, "flaky" fails and waits an hour for its retry, "broken"
	// fails for good, and "progress" reports progress a step at a time when the test says.
	steps := make(chan float64)
	var closeSteps sync.Once
	finish := func() { closeSteps.Do(func() { close(steps) }) }
	defer finish()
	worker, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
		queuetest.Options(queue.Options{Name: name, MasterInterval: -1, Concurrency: 2})) // the feed wakes it for new jobs
	require.NoError(t, err)
	defer func() { _ = worker.Stop(context.Background()) }()
	require.NoError(t, worker.Ready(ctx))
	require.NoError(t, worker.Process(func(ctx context.Context, j *job.Job) (any, error) {
		switch j.Name {
		case "flaky":
			return nil, errors.New("the mail server said no")
		case "broken":
			return nil, errors.New("no such recipient")
		case "progress":
			for {
				select {
				case p, ok := <-steps:
					if !ok {
						return "sent", nil
					}
					if err := j.UpdateProgress(ctx, p); err != nil {
						return nil, err
					}
					if err := j.AddLog(ctx, nil, fmt.Sprintf("sent %.0f%% of the batch", p), "", ""); err != nil {
						return nil, err
					}
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
		}
		return "ok", nil
	}))

	t.Run("the chart counts finished runs", func(t *testing.T) {
		_, err := lib.AddJob(ctx,
			lib.CreateJob(1).SetName("welcome"), lib.CreateJob(2).SetName("welcome"), lib.CreateJob(3).SetName("welcome"),
			lib.CreateJob(4).SetName("flaky").SetRetryMax(1).SetRetryDelay(time.Hour),
			lib.CreateJob(5).SetName("broken").SetRetryMax(0))
		require.NoError(t, err)
		poll[bool](t, bctx, 30*time.Second, "3 completed and 2 failed runs in the chart", `(() => {
			const s = document.getElementById("throughput");
			return +s.dataset.completed === 3 && +s.dataset.failed === 2 &&
				s.querySelectorAll("rect.completed").length > 0 && s.querySelectorAll("rect.failed").length > 0;
		})()`)
	})

	t.Run("progress bars move as the handler reports", func(t *testing.T) {
		added, err := lib.AddJob(ctx, lib.CreateJob(map[string]any{"batch": 7}).SetName("progress"))
		require.NoError(t, err)
		id := added[0].ID
		row := fmt.Sprintf(`tr[data-id=%q]`, id)
		poll[bool](t, bctx, 30*time.Second, "the job to be active",
			fmt.Sprintf(`document.querySelector(%q)?.textContent === "active"`, row+" .status"))
		var last float64
		for _, p := range []float64{25, 50} {
			steps <- p
			w := poll[float64](t, bctx, 20*time.Second, fmt.Sprintf("the row's bar at %.0f%%", p), barWidth(row+" .progress", p))
			assert.Greater(t, w, last, "the bar moved")
			last = w
		}
		screenshot(t, bctx, "rjq-web-dashboard.png")

		// The job's page, reached by its link, moves its own bar.
		click(t, bctx, "the job's link", row+" a")
		within(t, bctx, 20*time.Second, "the job's page", chromedp.WaitVisible(chromedp.CSS("#jobview")))
		poll[float64](t, bctx, 20*time.Second, "the page's bar at 50%", barWidth("#jobprogress", 50))
		steps <- 75
		poll[float64](t, bctx, 20*time.Second, "the page's bar at 75%", barWidth("#jobprogress", 75))
		poll[bool](t, bctx, 20*time.Second, "the step in the page's log",
			`document.getElementById("joblog").textContent.includes("sent 75% of the batch")`)
		screenshot(t, bctx, "rjq-web-job.png")

		finish()
		poll[bool](t, bctx, 20*time.Second, "the page to say completed",
			`document.getElementById("job-status")?.textContent === "completed"`)
		poll[float64](t, bctx, 20*time.Second, "the page's bar at 100%", barWidth("#jobprogress", 100))
		poll[bool](t, bctx, 20*time.Second, "one run, completed, by this host's worker", `(() => {
			const runs = document.querySelectorAll("#jobruns tr.run");
			return runs.length === 1 && runs[0].children[4].textContent === "completed" && runs[0].children[1].textContent.includes(" pid ");
		})()`)
	})

	marker, err := chromedp.Run(bctx, chromedp.Evaluate[string](`window.rjqTestMarker`))
	require.NoError(t, err)
	assert.Equal(t, "same page", marker, "everything above happened without a reload")

	t.Run("the overview lists every queue and links to each one's dashboard", func(t *testing.T) {
		reports, err := queue.New(ctx, &queue.ConnectOptions{Host: srv.Host, Port: srv.Port, DB: db},
			queuetest.Options(queue.Options{Name: "reports", MasterInterval: -1, NoChangeFeed: true}))
		require.NoError(t, err)
		defer func() { _ = reports.Stop(context.Background()) }()
		_, err = reports.AddJob(ctx, reports.CreateJob(1).SetName("quarterly"), reports.CreateJob(2).SetName("quarterly"))
		require.NoError(t, err)
		row := `#queues tr[data-queue="reports"]`
		_, err = chromedp.Run(bctx, chromedp.Evaluate[string](`location.hash = ""`))
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "the new queue in the overview, with its 2 waiting jobs",
			fmt.Sprintf(`document.querySelector(%q)?.children[1]?.textContent === "2"`, row))
		screenshot(t, bctx, "rjq-web-overview.png")
		click(t, bctx, "the other queue's link", row+" a")
		within(t, bctx, 20*time.Second, "the other queue's dashboard", chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
		poll[bool](t, bctx, 20*time.Second, "its own counts", `document.getElementById("queue").textContent === "reports" &&
			document.getElementById("count-waiting").textContent.includes("2")`)
		loc, err := chromedp.Run(bctx, chromedp.Evaluate[string](`location.pathname`))
		require.NoError(t, err)
		assert.True(t, strings.HasSuffix(loc, "/ops/queue/q/reports/"), "under the mount's prefix: %s", loc)
		click(t, bctx, "the first queue's link", `#queues tr[data-queue="`+name+`"] a`)
		within(t, bctx, 20*time.Second, "back to the first queue", chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
		poll[bool](t, bctx, 20*time.Second, "the first queue again", fmt.Sprintf(`document.getElementById("queue").textContent === %q`, name))
	})

	t.Run("the completed jobs page back and forth in time order", func(t *testing.T) {
		resp, err := http.Get(url + "api/jobs?status=completed&limit=100")
		require.NoError(t, err)
		var all []struct{ ID string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&all))
		resp.Body.Close()
		require.GreaterOrEqual(t, len(all), 4, "enough completed jobs for two pages of two")
		rows := `Array.from(document.querySelectorAll("#jobs tr")).map(r => r.dataset.id).join(",")`
		page := func(from int) string { return all[from].ID + "," + all[from+1].ID }
		within(t, bctx, 20*time.Second, "pages of two",
			chromedp.Navigate(url+"?limit=2"),
			chromedp.WaitVisible(chromedp.CSS("#count-waiting")),
		)
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			const s = document.getElementById("status");
			s.value = "completed";
			return s.dispatchEvent(new Event("change"));
		})()`))
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "the newest two", fmt.Sprintf(`%s === %q`, rows, page(0)))
		// A refresh begun before the click whose answer comes after the next page's (an
		// event's refresh on a busy server) must not draw the first page over it: hold the
		// answer to the next read back until the click's has been drawn.
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			const real = window.fetch;
			window.rjqLate = "held";
			window.fetch = (u, ...rest) => {
				window.fetch = real;
				return real(u, ...rest).then(r => new Promise(ok => setTimeout(() => { ok(r); setTimeout(() => { window.rjqLate = "drawn"; }, 100); }, 1500)));
			};
			jobs(false);
			return true;
		})()`))
		require.NoError(t, err)
		within(t, bctx, 20*time.Second, "next page", chromedp.Click(chromedp.CSS("#more")))
		poll[bool](t, bctx, 20*time.Second, "the next two", fmt.Sprintf(`%s === %q`, rows, page(2)))
		poll[bool](t, bctx, 20*time.Second, "the late answer to the earlier read", `window.rjqLate === "drawn"`)
		shown, err := chromedp.Run(bctx, chromedp.Evaluate[string](rows))
		require.NoError(t, err)
		assert.Equal(t, page(2), shown, "the next page stays: the earlier read's late answer is dropped")
		if testserver.Get(t).IsReqlite() {
			// Jobs finished by one outcome write share their dateFinished, and reqlite
			// reads the entries of one index key in no set order (RethinkDB: by id), so
			// the page back may hold other jobs of the same time.
			return
		}
		within(t, bctx, 20*time.Second, "previous page", chromedp.Click(chromedp.CSS("#newer")))
		poll[bool](t, bctx, 20*time.Second, "the newest two again", fmt.Sprintf(`%s === %q`, rows, page(0)))
		disabled, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("newer").disabled`))
		require.NoError(t, err)
		assert.True(t, disabled, "nothing before the first page")
	})

	t.Run("a search on a field of data finds the job", func(t *testing.T) {
		resp, err := http.Get(url + "api/jobs?status=completed&field=batch&value=7")
		require.NoError(t, err)
		var found []struct{ ID string }
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&found))
		resp.Body.Close()
		require.Len(t, found, 1, "the progress job, whose data is {\"batch\": 7}")
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			document.getElementById("field").value = "batch";
			document.getElementById("value").value = "7";
			document.getElementById("find").click();
			return true;
		})()`))
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "only the job with that data", fmt.Sprintf(
			`Array.from(document.querySelectorAll("#jobs tr")).map(r => r.dataset.id).join(",") === %q && document.getElementById("scanned").textContent.startsWith("looked at")`, found[0].ID))
		screenshot(t, bctx, "rjq-web-search.png")
	})

	t.Run("a restarted dashboard's chart reads the last hour from the table", func(t *testing.T) {
		again := startWeb(t, bin, base)
		resp, err := http.Get(again + "api/throughput")
		require.NoError(t, err)
		defer resp.Body.Close()
		var chart struct {
			Minutes []struct{ Completed, Failed int }
		}
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&chart))
		require.Len(t, chart.Minutes, 60, "the last hour, a minute each")
		completed, failed := 0, 0
		for _, m := range chart.Minutes {
			completed += m.Completed
			failed += m.Failed
		}
		assert.Equal(t, 4, completed, "3 welcome jobs and the progress job")
		assert.Equal(t, 2, failed, "flaky waiting for its retry, broken terminated")
	})
	t.Run("a bulk retry reanimates every failed job", func(t *testing.T) {
		added, err := lib.AddJob(ctx, lib.CreateJob(6).SetName("flaky").SetRetryMax(1).SetRetryDelay(time.Hour),
			lib.CreateJob(7).SetName("flaky").SetRetryMax(1).SetRetryDelay(time.Hour))
		require.NoError(t, err)
		failed := func() []*job.Job {
			s, err := lib.Summary(ctx)
			require.NoError(t, err)
			if s.Failed != 3 {
				return nil
			}
			jobs, err := lib.FindJob(ctx, map[string]any{"status": "failed"})
			require.NoError(t, err)
			return jobs
		}
		require.Eventually(t, func() bool { return len(failed()) == 3 }, 20*time.Second, 50*time.Millisecond, "three flaky jobs failed")
		_ = added
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`(() => {
			for (const id of ["field", "value", "text"]) document.getElementById(id).value = "";
			const s = document.getElementById("status");
			s.value = "failed";
			return s.dispatchEvent(new Event("change"));
		})()`))
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "the bulk buttons", `!document.getElementById("bulk").hidden && !document.getElementById("bulkreanimate").hidden`)
		within(t, bctx, 20*time.Second, "reanimate all", chromedp.Click(chromedp.CSS("#bulkreanimate")))
		poll[bool](t, bctx, 20*time.Second, "the count", `document.getElementById("bulkresult").textContent === "reanimated 3 jobs"`)
		dialogMu.Lock()
		assert.Contains(t, dialogs, "reanimate every failed job?", "asked first")
		dialogMu.Unlock()
		// Each was reanimated (and, flaky, has failed again since, or soon will).
		jobs, err := lib.FindJob(ctx, map[string]any{"name": "flaky"})
		require.NoError(t, err)
		require.Len(t, jobs, 3)
		for _, j := range jobs {
			reanimated := slices.ContainsFunc(j.Log, func(e job.LogEntry) bool { return e.Message == job.MessageReanimated })
			assert.True(t, reanimated, "job %s was reanimated", j.ID)
		}
	})

	t.Run("workers, schedules and limits, and removing a limit", func(t *testing.T) {
		require.NoError(t, lib.Schedule(ctx, "nightly", "0 3 * * *", "report", nil))
		require.NoError(t, lib.SetLimit(ctx, "welcome", queue.Limit{Starts: 10, Per: time.Minute, Running: 2}))
		require.NoError(t, lib.SetGroupLimit(ctx, "acme", 3))
		// Two jobs of the group that wait an hour: the group's row counts them.
		later := lib.CreateJob(nil).SetGroup("acme").SetDateEnable(time.Now().Add(time.Hour))
		_, err := lib.AddJob(ctx, later, lib.CreateJob(nil).SetGroup("acme").SetDateEnable(time.Now().Add(time.Hour)))
		require.NoError(t, err)
		// And a sequence of two jobs that wait an hour: its row names the first.
		head := lib.CreateJob(nil).SetSequence("ledger-7").SetDateEnable(time.Now().Add(time.Hour))
		_, err = lib.AddJob(ctx, head, lib.CreateJob(nil).SetSequence("ledger-7").SetDateEnable(time.Now().Add(time.Hour)))
		require.NoError(t, err)
		within(t, bctx, 20*time.Second, "the page", chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
		_, err = chromedp.Run(bctx, chromedp.Evaluate[bool](`document.getElementById("side").open = true`))
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "the group's row with its 2 waiting jobs",
			`document.querySelector('#groups tr[data-group="acme"]')?.children[3]?.textContent === "2"`)
		poll[bool](t, bctx, 20*time.Second, "the worker, the schedule, the limit and the group's", `(() => {
			const text = id => document.getElementById(id).textContent;
			return text("workers").includes(":emails:") && text("schedules").includes("nightly") && text("schedules").includes("0 3 * * *") &&
				text("limits").includes("10 per 60 s") && text("limits").includes("at most 2") &&
				text("groups").includes("acme") && text("groups").includes("at most 3");
		})()`)
		poll[bool](t, bctx, 20*time.Second, "the sequence's row: 2 waiting, held by the first", `(() => {
			const row = document.querySelector('#sequences tr[data-sequence="ledger-7"]');
			return row?.children[1]?.textContent === "2" && row.children[4].textContent.includes("`+head.ID+` (waiting)");
		})()`)
		click(t, bctx, "the limit's remove button", `#limits button[data-name="welcome"]`)
		require.Eventually(t, func() bool {
			limits, err := lib.Limits(ctx)
			return err == nil && len(limits) == 0
		}, 20*time.Second, 50*time.Millisecond, "the limit is gone from the table")
		poll[bool](t, bctx, 20*time.Second, "the page says so", `document.getElementById("limits").textContent.includes("none")`)
	})

	t.Run("dark mode follows the system, and a phone scrolls tables rather than the page", func(t *testing.T) {
		_, err := chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
			Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: "dark"}}})
		require.NoError(t, err)
		within(t, bctx, 20*time.Second, "the dashboard in dark mode",
			chromedp.Navigate(url), chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
		poll[bool](t, bctx, 20*time.Second, "a dark background", `getComputedStyle(document.body).backgroundColor === "rgb(22, 24, 28)"`)
		screenshot(t, bctx, "rjq-web-dark.png")
		_, err = chromedp.Call(bctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
			Width: 390, Height: 844, DeviceScaleFactor: 1, Mobile: true})
		require.NoError(t, err)
		poll[bool](t, bctx, 20*time.Second, "no sideways scroll of the page at 390 px",
			`document.documentElement.scrollWidth <= window.innerWidth + 1`)
		_, err = chromedp.Call(bctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		require.NoError(t, err)
		_, err = chromedp.Call(bctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{})
		require.NoError(t, err)
	})

	t.Run("a write from another origin or without the token is refused, and changes nothing", func(t *testing.T) {
		added, err := lib.AddJob(ctx, lib.CreateJob("to bob").SetName("keep-me").SetDateEnable(time.Now().Add(time.Hour)))
		require.NoError(t, err)
		id := added[0].ID
		cancelPath := "api/jobs/" + id + "/cancel"
		stillWaiting := func(what string) {
			t.Helper()
			got, err := lib.GetJob(ctx, id)
			require.NoError(t, err)
			assert.Equal(t, job.Waiting, got[0].Status, what)
		}

		// A page of another origin (localhost, not 127.0.0.1) posts to the dashboard: the
		// browser marks the request cross-site, and the dashboard refuses it.
		other := strings.Replace(url, "127.0.0.1", "localhost", 1)
		tab, closeTab := chromedp.NewContext(bctx)
		defer closeTab()
		// The tab's first run opens it; like the browser's, it must carry no deadline.
		require.NoError(t, chromedp.Do(tab), "open a tab")
		eval := func(expr string) (any, error) {
			ectx, cancel := context.WithTimeout(tab, 20*time.Second)
			defer cancel()
			return chromedp.Run(ectx, chromedp.Evaluate[any](expr, chromedp.EvalAwaitPromise))
		}
		within(t, tab, 20*time.Second, "the dashboard at another origin", chromedp.Navigate(other), chromedp.WaitVisible(chromedp.CSS("#count-waiting")))
		sent, err := eval(fmt.Sprintf(`fetch(%q, {method: "POST", mode: "no-cors"}).then(() => "sent", e => "failed: " + e)`, url+cancelPath))
		require.NoError(t, err)
		assert.Equal(t, "sent", sent, "the browser sent it (its answer is hidden from the page)")
		stillWaiting("a cross-origin post cancels nothing")
		req, err := http.NewRequest(http.MethodPost, url+cancelPath, nil)
		require.NoError(t, err)
		req.Header.Set("Origin", strings.TrimSuffix(other, "/ops/queue/"))
		req.Header.Set("Sec-Fetch-Site", "cross-site")
		res, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		res.Body.Close()
		assert.Equal(t, http.StatusForbidden, res.StatusCode, "what that post got")
		stillWaiting("nor does a post that says it comes from there")

		// A dashboard behind a token: the same post from its own page, without the token, is
		// refused; with it, it cancels.
		guarded := startWeb(t, bin, base, "--actions", "--token", "s3cret")
		within(t, tab, 20*time.Second, "the guarded dashboard", chromedp.Navigate(guarded))
		post := func(auth string) int {
			status, err := eval(fmt.Sprintf(`fetch(%q, {method: "POST", headers: %s}).then(r => r.status)`, guarded+cancelPath, auth))
			require.NoError(t, err)
			n, _ := status.(float64)
			return int(n)
		}
		assert.Equal(t, http.StatusUnauthorized, post(`{}`), "no token")
		assert.Equal(t, http.StatusUnauthorized, post(`{"Authorization": "Bearer wrong"}`), "the wrong token")
		stillWaiting("a post without the right token cancels nothing")
		assert.Equal(t, http.StatusOK, post(`{"Authorization": "Bearer s3cret"}`), "the token")
		got, err := lib.GetJob(ctx, id)
		require.NoError(t, err)
		assert.Equal(t, job.Cancelled, got[0].Status, "with the token, the post cancels")
	})
	t.Logf("browser part took %v", time.Since(start).Round(100*time.Millisecond))
}

// --token and --basic-auth make the dashboard's Auth: either admits, and a malformed
// --basic-auth is bad usage. (rjqweb's tests check the 401 and its challenge.)
func TestWebAuthFlags(t *testing.T) {
	type creds struct{ bearer, user, pass string }
	for _, tc := range []struct {
		name, token, basic string
		admitted, refused  []creds
	}{
		{name: "token", token: "s3cret",
			admitted: []creds{{bearer: "s3cret"}}, refused: []creds{{}, {bearer: "other"}, {user: "ops", pass: "s3cret"}}},
		{name: "basic", basic: "ops:pw:with:colons",
			admitted: []creds{{user: "ops", pass: "pw:with:colons"}}, refused: []creds{{}, {user: "ops", pass: "pw"}, {bearer: "pw:with:colons"}}},
		{name: "both", token: "s3cret", basic: "ops:pw",
			admitted: []creds{{bearer: "s3cret"}, {user: "ops", pass: "pw"}}, refused: []creds{{}, {bearer: "pw"}, {user: "ops", pass: "s3cret"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := webAuth(tc.token, tc.basic)
			require.NoError(t, err)
			request := func(c creds) *http.Request {
				req := httptest.NewRequest("GET", "/", nil)
				if c.bearer != "" {
					req.Header.Set("Authorization", "Bearer "+c.bearer)
				}
				if c.user != "" {
					req.SetBasicAuth(c.user, c.pass)
				}
				return req
			}
			for _, c := range tc.admitted {
				assert.True(t, auth(request(c)), "%+v admitted", c)
			}
			for _, c := range tc.refused {
				assert.False(t, auth(request(c)), "%+v refused", c)
			}
		})
	}
	auth, err := webAuth("", "")
	require.NoError(t, err)
	assert.Nil(t, auth, "no flag, no authentication")
	for _, bad := range []string{"ops", "ops:", ":pw"} {
		_, err := webAuth("", bad)
		var ue usageError
		assert.ErrorAs(t, err, &ue, "--basic-auth %q", bad)
	}
}
