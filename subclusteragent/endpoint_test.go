package subclusteragent_test

import (
	"net"
	"testing"

	"github.com/yarnfed/yarnfed/subclusteragent"
)

func TestParseRMEndpoint(t *testing.T) {
	tests := []struct {
		name, in string
		want     subclusteragent.RMEndpoint
		wantErr  bool
	}{
		{"bare host uses Hadoop ports", "rm1", subclusteragent.RMEndpoint{ClientRM: "rm1:8032", AMRM: "rm1:8030", Admin: "rm1:8033", Web: "rm1:8088"}, false},
		{"explicit keys", "clientrm=a:1,amrm=a:2,admin=a:3,web=b:4", subclusteragent.RMEndpoint{ClientRM: "a:1", AMRM: "a:2", Admin: "a:3", Web: "b:4"}, false},
		{"missing keys default on the first host", "clientrm=h:18032", subclusteragent.RMEndpoint{ClientRM: "h:18032", AMRM: "h:8030", Admin: "h:8033", Web: "h:8088"}, false},
		{"unknown key", "rpc=h:1", subclusteragent.RMEndpoint{}, true},
		{"no port", "clientrm=h", subclusteragent.RMEndpoint{}, true},
		{"bad port", "web=h:99999", subclusteragent.RMEndpoint{}, true},
		{"duplicate key", "web=h:1,web=h:2", subclusteragent.RMEndpoint{}, true},
		{"bare host with port", "h:8032", subclusteragent.RMEndpoint{}, true},
		{"empty", "", subclusteragent.RMEndpoint{}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := subclusteragent.ParseRMEndpoint(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseRMEndpoint(%q) = %+v, %v", tc.in, got, err)
			}
		})
	}
}

func FuzzParseRMEndpoint(f *testing.F) {
	for _, s := range []string{"rm1", "clientrm=a:1,web=b:2", "web=[::1]:8088", "x=y", ",,", "clientrm=:1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ep, err := subclusteragent.ParseRMEndpoint(s)
		if err != nil {
			return
		}
		for _, a := range []string{ep.ClientRM, ep.AMRM, ep.Admin, ep.Web} {
			if _, _, err := net.SplitHostPort(a); err != nil {
				t.Fatalf("%q gave unusable address %q", s, a)
			}
		}
	})
}
