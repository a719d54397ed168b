// Package loopback is servebench's one rule for where load may go: only to
// this machine's loopback addresses (127.0.0.0/8, ::1) or the name
// "localhost", in any letter case. Scenario validation, the client's
// dialer, the scraper, the simulator's listener and a sweep's readiness
// poll all ask it, so they cannot disagree.
//
// It consumes host names, URLs and dial addresses and produces a yes or an
// error naming what was refused.
package loopback

import (
	"fmt"
	"net"
	"net/url"
	"strings"
	"syscall"
)

// Host reports whether host (a name or an IP literal, without port or
// brackets) is loopback.
func Host(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Addr reports whether a "host:port" address is loopback.
func Addr(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	return err == nil && Host(host)
}

// CheckURL returns an error unless raw is an absolute http or https URL
// whose host is loopback. The error names the URL without credentials.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s: want an http or https URL", u.Redacted())
	}
	if !Host(u.Hostname()) {
		return fmt.Errorf("%s: %w", u.Redacted(), ErrNotLoopback)
	}
	return nil
}

// ErrNotLoopback is the error of a refused host.
var ErrNotLoopback = errNotLoopback{}

type errNotLoopback struct{}

func (errNotLoopback) Error() string {
	return "not a loopback address: servebench only sends load to 127.0.0.0/8, ::1 or localhost"
}

// DialControl is a net.Dialer Control function that refuses every
// connection to a non-loopback IP: names that resolve elsewhere are caught
// after resolution, at dial time.
func DialControl(network, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("dial %s: %w", address, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("dial %s %s: %w", network, address, ErrNotLoopback)
	}
	return nil
}
