package hostport

import (
	"net"
	"slices"
	"testing"
)

func TestSplitListTrimsAndDropsEmptyEntries(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"rm1:8032", []string{"rm1:8032"}},
		{" rm1:8032 ,, rm2:8032 ", []string{"rm1:8032", "rm2:8032"}},
	} {
		if got := SplitList(c.in); !slices.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("SplitList(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestIPDropsThePort(t *testing.T) {
	for _, c := range []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.ParseIP("10.0.0.7"), Port: 4242}, "10.0.0.7"},
		{&net.TCPAddr{IP: net.ParseIP("::1"), Port: 1}, "::1"},
		{&net.UDPAddr{IP: net.ParseIP("10.0.0.8"), Port: 53}, "10.0.0.8"},
		{&net.UnixAddr{Name: "/run/x.sock", Net: "unix"}, "/run/x.sock"},
	} {
		if got := IP(c.addr); got != c.want {
			t.Errorf("IP(%v) = %q, want %q", c.addr, got, c.want)
		}
	}
}
