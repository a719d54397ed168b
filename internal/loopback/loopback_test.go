package loopback

import (
	"errors"
	"strings"
	"testing"
)

// TestPolicy checks the policy as a function: no address here is dialled.
func TestPolicy(t *testing.T) {
	t.Parallel()
	hosts := []struct {
		host string
		want bool
	}{
		{"localhost", true}, {"LOCALHOST", true}, {"LocalHost", true},
		{"127.0.0.1", true}, {"127.9.8.7", true}, {"::1", true},
		{"10.0.0.1", false}, {"0.0.0.0", false}, {"example.com", false}, {"localhost.example.com", false},
		{"", false}, {"::", false}, {"[::1]", false},
	}
	for _, tc := range hosts {
		if got := Host(tc.host); got != tc.want {
			t.Errorf("Host(%q) = %v, want %v", tc.host, got, tc.want)
		}
	}
	urls := []struct {
		url string
		ok  bool
	}{
		{"http://127.0.0.1:8000/v1", true}, {"https://LOCALHOST:1", true}, {"http://[::1]:9/metrics", true},
		{"http://192.168.1.2:8000", false}, {"http://user:pw@10.1.1.1/", false}, {"ftp://127.0.0.1/", false},
		{"sim://tiny", false}, {"127.0.0.1:8000", false},
	}
	for _, tc := range urls {
		err := CheckURL(tc.url)
		if (err == nil) != tc.ok {
			t.Errorf("CheckURL(%q) = %v, want ok %v", tc.url, err, tc.ok)
		}
	}
	if err := CheckURL("http://u:secret@10.1.1.1/"); err == nil || !errors.Is(err, ErrNotLoopback) || strings.Contains(err.Error(), "secret") {
		t.Errorf("CheckURL with credentials: %v", err)
	}
	for _, tc := range []struct {
		addr string
		want bool
	}{{"127.0.0.1:0", true}, {"localhost:8000", true}, {"[::1]:80", true}, {"0.0.0.0:8000", false}, {"127.0.0.1", false}} {
		if got := Addr(tc.addr); got != tc.want {
			t.Errorf("Addr(%q) = %v, want %v", tc.addr, got, tc.want)
		}
		if err := DialControl("tcp", tc.addr, nil); (err == nil) != (tc.want && tc.addr != "localhost:8000") {
			t.Errorf("DialControl(%q) = %v", tc.addr, err)
		}
	}
}

// TestPolicyRemoteOptIn: a non-loopback target is refused by the default
// policy and allowed with the explicit opt-in. Nothing is dialled: the
// policy is a function of the URL.
func TestPolicyRemoteOptIn(t *testing.T) {
	t.Parallel()
	strict, open := Policy{}, Policy{AllowRemote: true}
	for _, u := range []string{"http://10.0.0.5:8000/v1", "https://vllm.example.internal", "http://192.168.1.2:30000"} {
		if err := strict.CheckURL(u); err == nil || !strings.Contains(err.Error(), "--allow-remote") {
			t.Errorf("strict.CheckURL(%q) = %v, want a refusal that names the opt-in", u, err)
		}
		if err := open.CheckURL(u); err != nil {
			t.Errorf("open.CheckURL(%q) = %v", u, err)
		}
	}
	for _, u := range []string{"ftp://10.0.0.5/", "http:///v1", "sim://tiny"} {
		if err := open.CheckURL(u); err == nil {
			t.Errorf("open.CheckURL(%q) accepted", u)
		}
	}
	if strict.Host("10.0.0.5") || !open.Host("10.0.0.5") || open.Host("") || !strict.Host("localhost") {
		t.Error("Policy.Host disagrees with CheckURL")
	}
	if strict.DialControl() == nil || open.DialControl() != nil {
		t.Error("the strict policy must check dials; the open one need not")
	}
	if err := strict.DialControl()("tcp", "10.0.0.5:8000", nil); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("strict dial control = %v", err)
	}
}
