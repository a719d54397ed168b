// Package textable lays out plain-text tables for terminal reports.
//
// It consumes rows of cells and produces lines whose columns are padded
// to their widest cell (counted in runes): the first column left-aligned,
// the others right-aligned, and optionally the last one left as it is (a
// free-text note).
package textable

import "strings"

// Format returns rows laid out as columns two spaces apart, one line per
// row. With lastAsIs the last column is written unpadded (for a note).
func Format(rows [][]string, lastAsIs bool) string {
	if len(rows) == 0 {
		return ""
	}
	widths := make([]int, len(rows[0]))
	for _, r := range rows {
		for i, c := range r {
			if i < len(widths) {
				widths[i] = max(widths[i], len([]rune(c)))
			}
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, c := range r {
			pad := ""
			if i < len(widths) {
				pad = strings.Repeat(" ", widths[i]-len([]rune(c)))
			}
			switch {
			case i == 0:
				b.WriteString(c + pad)
			case lastAsIs && i == len(r)-1:
				b.WriteString("  " + c)
			default:
				b.WriteString("  " + pad + c)
			}
		}
		b.WriteByte('\n')
	}
	return b.String()
}
