// Package loopback is servebench's one rule for where load may go: by
// default only to this machine's loopback addresses (127.0.0.0/8, ::1) or
// the name "localhost", in any letter case; anywhere when the user opts in
// explicitly (Policy.AllowRemote: target.allow_remote, --allow-remote).
// Scenario validation, the client's dialer, the scraper, the simulator's
// listener and a sweep's readiness poll all ask it, so they cannot
// disagree.
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

// CheckURLHost reports whether raw is a URL whose host is loopback.
func CheckURLHost(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && Host(u.Hostname())
}

// Policy is where load may go. The zero value allows loopback only;
// AllowRemote, set only by an explicit opt-in, allows any host.
type Policy struct {
	AllowRemote bool
}

// Host reports whether the policy allows host (a name or an IP literal).
func (p Policy) Host(host string) bool { return host != "" && (p.AllowRemote || Host(host)) }

// CheckURL returns an error unless raw is an absolute http or https URL
// whose host the policy allows. The error names the URL without
// credentials and says how to opt in.
func (p Policy) CheckURL(raw string) error {
	if !p.AllowRemote {
		if err := CheckURL(raw); err != nil {
			return fmt.Errorf("%w (set target.allow_remote: true, or pass --allow-remote, to send load to another machine)", err)
		}
		return nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%q: %w", raw, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Hostname() == "" {
		return fmt.Errorf("%s: want an http or https URL with a host", u.Redacted())
	}
	return nil
}

// DialControl returns the net.Dialer Control function of the policy: the
// loopback check of every resolved address, or none when remote hosts are
// allowed.
func (p Policy) DialControl() func(network, address string, c syscall.RawConn) error {
	if p.AllowRemote {
		return nil
	}
	return DialControl
}
