package main

import (
	"fmt"
	"slices"
	"time"
)

// rate prints a rate in jobs/s, blank when it was not measured.
func rate(v float64) string {
	if v == 0 {
		return ""
	}
	return fmt.Sprintf("%.0f", v)
}

// ratio prints a ÷ b as "1.72×", blank when either was not measured.
func ratio(a, b float64) string {
	if a == 0 || b == 0 {
		return ""
	}
	return fmt.Sprintf("%.2f×", a/b)
}

// pct is the p-th percentile of ds (zero for none).
func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(float64(len(s)-1) * p / 100)
	return s[i]
}

// ms prints d in milliseconds, blank when it was not measured.
func ms(d time.Duration) string {
	if d == 0 {
		return ""
	}
	return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
}
