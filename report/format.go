package report

import (
	"fmt"
	"math"
)

// Formatting shared by the writers here and the plots and HTML page of
// package chart, so every output writes a figure the same way.

// FormatNumber formats a figure for a sentence: thousands separated, one
// decimal below 100 ("1,983", "7.8").
func FormatNumber(v float64) string { return num(v) }

// FormatPercent formats a fraction as a percentage, with a minus sign when
// negative ("99.6 %", "−1.7 %").
func FormatPercent(f float64) string { return pct(f) }

// FormatChange formats a relative change with its sign ("+7.4 %").
func FormatChange(f float64) string { return signedPct(f) }

// FormatMS formats a millisecond figure of a distribution with n samples,
// or "-" when there were none.
func FormatMS(v float64, n int64) string { return ms(v, n) }

// FormatDecimal formats x with at most digits decimals, trailing zeros
// dropped ("12.5", "3").
func FormatDecimal(x float64, digits int) string { return trimFloat(x, digits) }

// FormatLatency formats a latency of a distribution with n samples for a
// table: milliseconds as a bare number below 10 s (as FormatMS), and above
// that in the units a person reads ("12.3 s", "6 min 24 s", "1 h 02 min"),
// so a long stream's 383,517 ms does not have to be counted in digits; "-"
// when there were no samples.
func FormatLatency(v float64, n int64) string {
	if n == 0 {
		return "-"
	}
	if v < 10_000 {
		return ms(v, n)
	}
	return FormatSeconds(v / 1000)
}

// FormatSeconds formats a duration given in seconds in the units a person
// reads: "850 ms", "9.85 s", "29.6 s", "6 min 24 s", "2 min", "1 h 02 min".
func FormatSeconds(s float64) string {
	switch {
	case s < 1:
		return trimFloat(s*1000, 0) + " ms"
	case s < 10:
		return trimFloat(s, 2) + " s"
	case s < 59.95:
		return trimFloat(s, 1) + " s"
	case s < 3600-0.5:
		t := int64(math.Round(s))
		if t%60 == 0 {
			return fmt.Sprintf("%d min", t/60)
		}
		return fmt.Sprintf("%d min %d s", t/60, t%60)
	default:
		t := int64(math.Round(s / 60))
		return fmt.Sprintf("%d h %02d min", t/60, t%60)
	}
}

// FormatCount writes a count with its noun in the right number: "1
// request", "2 requests", "0 requests". Every count a sentence gives goes
// through it (or FormatCountOf), so that no report says "1 requests".
func FormatCount[T ~int | ~int64](n T, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// FormatCountOf writes a figure that counts things with its noun: num(v)
// and the singular only when v is exactly 1 ("1 request", "1.5 requests",
// "2,300 requests").
func FormatCountOf(v float64, one, many string) string {
	if v == 1 {
		return "1 " + one
	}
	return num(v) + " " + many
}

// were is the verb after a count: "1 of 300 arrivals was dropped", "2 of
// 300 arrivals were dropped".
func were[T ~int | ~int64](n T) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
