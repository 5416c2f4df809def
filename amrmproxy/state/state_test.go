package state

import (
	"reflect"
	"testing"
)

func TestRoundTripAndReopen(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	a := Attempt{Attempt: "appattempt_1_0001_000001", Home: "SC-1", Queue: "default", User: "alice", Register: []byte{1}, Response: []byte{2}}
	if err := s.PutAttempt(a); err != nil {
		t.Fatal(err)
	}
	if err := s.PutUAM(a.Attempt, UAM{SubCluster: "SC-2", Token: []byte("t"), Registered: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateContainers(a.Attempt, map[string]string{"c1": "SC-1", "c2": "SC-2", "c3": "SC-2", "c4": "SC-2"}, nil, nil, &Delivery{ResponseID: 4, Containers: [][]byte{{9}}}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateContainers(a.Attempt, nil, []string{"c3"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	// c4's sub-cluster was lost: it leaves the live map for the aborted set.
	if err := s.UpdateContainers(a.Attempt, nil, nil, map[string]string{"c4": "SC-2"}, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	want := []Recovered{{Attempt: a, UAMs: []UAM{{SubCluster: "SC-2", Token: []byte("t"), Registered: true}},
		Containers: map[string]string{"c1": "SC-1", "c2": "SC-2"}, Aborted: map[string]string{"c4": "SC-2"}, Delivery: &Delivery{ResponseID: 4, Containers: [][]byte{{9}}}}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if err := s.DeleteAttempt(a.Attempt); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Load(); len(got) != 0 {
		t.Fatalf("after delete: %+v", got)
	}
	if err := s.DeleteAttempt(a.Attempt); err != nil {
		t.Fatalf("second delete: %v", err)
	}
}

func FuzzDecodeUAM(f *testing.F) {
	f.Add([]byte(`{"sub_cluster":"SC-2","token":"dA==","registered":true}`))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		u, err := DecodeUAM(b)
		if err != nil {
			return
		}
		if u.SubCluster == "" {
			t.Fatal("accepted a UAM without sub-cluster")
		}
	})
}

func FuzzDecodeAttempt(f *testing.F) {
	f.Add([]byte(`{"attempt":"appattempt_1_0001_000001","home":"SC-1","register_request":"AQ=="}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, _ = DecodeAttempt(b)
	})
}

func FuzzDecodeDelivery(f *testing.F) {
	f.Add([]byte(`{"response_id":3,"containers":["CgA="],"nm_tokens":[]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := DecodeDelivery(b)
		if err == nil && d.ResponseID < 0 {
			t.Fatal("accepted a negative responseId")
		}
	})
}
