package simrm

import (
	"fmt"
	"testing"
)

// FuzzParseIDs: the id parsers never panic, and what they accept prints
// back to a string that parses to the same id.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{
		"application_1700000000000_0001", "appattempt_1700000000000_0001_000002",
		"container_1700000000000_0001_01_000003", "container_e17_1700000000000_0001_01_000003",
		"container_e_1_1_1_1", "application__", "container_e99999999_1_1_1_1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if a, err := ParseAppID(s); err == nil {
			if b, err := ParseAppID(a.String()); err != nil || b != a {
				t.Fatalf("app %q -> %v -> %v %v", s, a, b, err)
			}
		}
		if a, err := ParseAttemptID(s); err == nil {
			if b, err := ParseAttemptID(a.String()); err != nil || b != a {
				t.Fatalf("attempt %q -> %v -> %v %v", s, a, b, err)
			}
		}
		if c, err := ParseContainerID(s); err == nil {
			if c.ID < 0 {
				t.Fatalf("negative raw id from %q", s)
			}
			if d, err := ParseContainerID(c.String()); err != nil || d != c {
				t.Fatalf("container %q -> %v -> %v %v", s, c, d, err)
			}
		}
	})
}

// FuzzAMRMTokenIdentifier: the token check (the decoder behind SASL logins
// on the scheduler port) never panics, and only our own identifiers pass.
func FuzzAMRMTokenIdentifier(f *testing.F) {
	s := newSecrets([]byte("0123456789abcdefghij"), 1)
	good := s.amrmToken(AttemptID{App: AppID{ClusterTimestamp: 1, ID: 2}, Attempt: 1}, "")
	f.Add(good.Identifier)
	f.Add([]byte{})
	f.Add([]byte{0x0a, 0x02, 0x08})
	f.Fuzz(func(t *testing.T, ident []byte) {
		id, pw, err := s.checkAMRM(ident)
		if err != nil {
			return
		}
		if string(pw) != string(s.sign(ident)) {
			t.Fatal("password is not the HMAC of the identifier")
		}
		if id.String() == "" {
			t.Fatal("empty attempt id")
		}
	})
}

func TestParseQueues(t *testing.T) {
	cases := []struct {
		name    string
		in      string
		want    []QueueConfig
		wantErr bool
	}{
		{name: "one", in: "default:100", want: []QueueConfig{{Name: "default", Capacity: 100}}},
		{name: "max", in: "a:70, b:30:100", want: []QueueConfig{{Name: "a", Capacity: 70}, {Name: "b", Capacity: 30, MaxCapacity: 100}}},
		{name: "empty", in: " ", wantErr: true},
		{name: "no capacity", in: "a", wantErr: true},
		{name: "junk", in: "a:x", wantErr: true},
		{name: "nan", in: "a:NaN", wantErr: true},
		{name: "too many parts", in: "a:1:2:3", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseQueues(tc.in)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err %v", err)
			}
			if !tc.wantErr && fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

// FuzzParseQueues: no panic; accepted lists validate or fail with a message.
func FuzzParseQueues(f *testing.F) {
	f.Add("default:100")
	f.Add("a:50:100,b:50")
	f.Add("::,")
	f.Fuzz(func(t *testing.T, s string) {
		qs, err := ParseQueues(s)
		if err != nil {
			return
		}
		cfg := TestConfig()
		cfg.Queues = qs
		_ = cfg.Validate() // must not panic on any accepted list
	})
}

// FuzzParseFaults: the control API decoder never panics and only accepts
// settings within range.
func FuzzParseFaults(f *testing.F) {
	f.Add([]byte(`{"latency":"200ms","errorRate":0.1,"stalled":true}`))
	f.Add([]byte(`{"errorRate":2}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fc, err := ParseFaults(b)
		if err != nil {
			return
		}
		if fc.ErrorRate < 0 || fc.ErrorRate > 1 || fc.Latency < 0 {
			t.Fatalf("accepted out-of-range faults %+v", fc)
		}
	})
}
