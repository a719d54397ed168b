package report

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
