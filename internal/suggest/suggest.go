// Package suggest finds the known name closest to a mistyped one, for
// "did you mean" in error messages.
//
// It consumes a name and the known names and produces the closest known
// name within a small edit distance, or nothing.
package suggest

import "strings"

// maxDistance is the largest edit distance still worth suggesting: two
// typos, a dropped or doubled letter.
const maxDistance = 2

// Closest returns the known name nearest to name (case-insensitively) by
// edit distance, if one lies within two edits; ties go to the first.
func Closest(name string, known []string) (string, bool) {
	best, bestD := "", maxDistance+1
	for _, k := range known {
		if d := distance(strings.ToLower(name), strings.ToLower(k)); d < bestD {
			best, bestD = k, d
		}
	}
	return best, best != ""
}

// distance is the Levenshtein distance between a and b, in bytes.
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
