package config

import (
	"encoding/json"
	"testing"
	"time"
)

func TestDurationJSON(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     time.Duration
		wantErr  bool
	}{
		{"milliseconds", `"500ms"`, 500 * time.Millisecond, false},
		{"compound", `"1m30s"`, 90 * time.Second, false},
		{"zero", `"0s"`, 0, false},
		{"bare number is ambiguous", `10`, 0, true},
		{"no unit", `"10"`, 0, true},
		{"garbage", `"soon"`, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var d Duration
			err := json.Unmarshal([]byte(tc.in), &d)
			if (err != nil) != tc.wantErr || d.D() != tc.want {
				t.Fatalf("Unmarshal(%s) = %v, %v; want %v, error %v", tc.in, d.D(), err, tc.want, tc.wantErr)
			}
			if err != nil {
				return
			}
			b, err := json.Marshal(d)
			var back Duration
			if err != nil || json.Unmarshal(b, &back) != nil || back != d {
				t.Fatalf("round trip of %v: %s %v -> %v", d.D(), b, err, back.D())
			}
		})
	}
}

func TestDurationFlagValue(t *testing.T) {
	var d Duration
	if err := d.Set("2s"); err != nil || d.D() != 2*time.Second || d.String() != "2s" || d.Type() != "duration" {
		t.Fatalf("Set(2s): %v %v %q %q", err, d.D(), d.String(), d.Type())
	}
	if err := d.Set("x"); err == nil {
		t.Fatal("Set(x) succeeded")
	}
}

func TestListFlagAndJSON(t *testing.T) {
	var l List
	for _, tc := range []struct {
		set  string
		want string
	}{{"a:1, b:2", "a:1,b:2"}, {"c:3", "c:3"}, {" , ", ""}} {
		if err := l.Set(tc.set); err != nil || l.String() != tc.want {
			t.Fatalf("Set(%q) = %q, %v; want %q (each use replaces)", tc.set, l.String(), err, tc.want)
		}
	}
	for _, tc := range []struct{ in, want string }{{`["a:1"," b:2 ",""]`, "a:1,b:2"}, {`"x:1,y:2"`, "x:1,y:2"}} {
		if err := json.Unmarshal([]byte(tc.in), &l); err != nil || l.String() != tc.want {
			t.Fatalf("Unmarshal(%s) = %q, %v; want %q", tc.in, l.String(), err, tc.want)
		}
	}
	if err := json.Unmarshal([]byte(`5`), &l); err == nil {
		t.Fatal("a number was accepted as a list")
	}
}
