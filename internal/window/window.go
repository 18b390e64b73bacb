// Package window is the daily time window of a job name's limit: the clock times between
// which its jobs may start, in a time zone, and when a closed window opens next.
package window

import (
	"errors"
	"fmt"
	"time"
)

// Window is a daily window, from one clock time to another (past midnight when To comes
// first), in a location.
type Window struct {
	from, to clock
	loc      *time.Location
}

// clock is a time of day.
type clock struct{ h, m int }

func (c clock) minutes() int { return c.h*60 + c.m }

func parseClock(s string) (clock, error) {
	t, err := time.Parse("15:04", s)
	if err != nil {
		return clock{}, fmt.Errorf("%q is not a clock time such as 09:30", s)
	}
	return clock{t.Hour(), t.Minute()}, nil
}

// Parse reads a window from clock times ("09:00", "17:30") and an IANA location (UTC
// when empty).
func Parse(from, to, location string) (Window, error) {
	f, err := parseClock(from)
	if err != nil {
		return Window{}, err
	}
	t, err := parseClock(to)
	if err != nil {
		return Window{}, err
	}
	if f == t {
		return Window{}, errors.New("From and To are the same time")
	}
	loc, err := time.LoadLocation(location)
	if err != nil {
		return Window{}, err
	}
	return Window{from: f, to: t, loc: loc}, nil
}

// At reports whether the window is open at t, and when closed, when it opens next.
func (w Window) At(t time.Time) (open bool, opens time.Time) {
	t = t.In(w.loc)
	now := t.Hour()*60 + t.Minute()
	from, to := w.from.minutes(), w.to.minutes()
	if from < to {
		open = now >= from && now < to
	} else {
		open = now >= from || now < to
	}
	if open {
		return true, time.Time{}
	}
	opens = time.Date(t.Year(), t.Month(), t.Day(), w.from.h, w.from.m, 0, 0, w.loc)
	if !opens.After(t) {
		opens = time.Date(t.Year(), t.Month(), t.Day()+1, w.from.h, w.from.m, 0, 0, w.loc)
	}
	return false, opens
}
