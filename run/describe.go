package run

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/servebench/servebench/internal/loopback"
	"github.com/servebench/servebench/internal/simurl"
	"github.com/servebench/servebench/load"
	"github.com/servebench/servebench/scenario"
)

// Describe says, in one line per stage, where the load goes and what it is:
// what a user should read before a run sends load to another machine. For
// a shard (Count > 1) it describes the shard's share.
func Describe(sc *scenario.Scenario, sh scenario.Shard) string {
	var b strings.Builder
	host := sc.Target.URL
	if u, err := url.Parse(sc.Target.URL); err == nil && u.Host != "" {
		host = u.Redacted()
	}
	where := "this machine"
	if !simurl.Is(sc.Target.URL) && !loopback.CheckURLHost(sc.Target.URL) {
		where = "ANOTHER MACHINE (target.allow_remote)"
	}
	fmt.Fprintf(&b, "load goes to %s, %s; at most %s\n", host, where, sc.Load.MaxDuration)
	if sh.Count > 1 {
		fmt.Fprintf(&b, "shard %s: this machine sends its share of each stage\n", sh)
	}
	for i, line := range load.Describe(sc, sh) {
		fmt.Fprintf(&b, "  stage %s: %s\n", sc.Load.Stages[i].Name, line)
	}
	fmt.Fprintf(&b, "  %s\n", load.DescribeBreaker(sc))
	return b.String()
}
