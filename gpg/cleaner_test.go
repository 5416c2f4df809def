package gpg

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/yarnfed/yarnfed/gpg/gpgtest"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/internal/simrm"
	"github.com/yarnfed/yarnfed/internal/simrm/simrmtest"
	"github.com/yarnfed/yarnfed/internal/testpoll"
	pb "github.com/yarnfed/yarnfed/statestore/storepb"
)

// cleanEnv is a federation of two simulated RMs and a fake store holding
// homes of: an application running in each RM, one finished in SC-1,
// three rows no RM knows (failed submissions), and one such row written
// a moment ago.
type cleanEnv struct {
	st         *gpgtest.FakeStore
	rm1, rm2   *simrm.RM
	run1, run2 string
	finished   string
	ghosts     []string
	young      string
}

func newCleanEnv(t *testing.T, restartDuringList bool) *cleanEnv {
	t.Helper()
	e := &cleanEnv{st: gpgtest.NewFakeStore(nil)}
	rms := simrmtest.StartN(t, 2, nil)
	e.rm1, e.rm2 = rms[0], rms[1]
	web2 := e.rm2.Addrs().Web
	if restartDuringList {
		// YARN-11387: the RM restarts (without recovery) while the GPG
		// lists its applications, so /apps answers a partial (empty) list.
		target, _ := url.Parse("http://" + web2)
		proxy := httputil.NewSingleHostReverseProxy(target)
		var once sync.Once
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path == "/ws/v1/cluster/apps" {
				once.Do(func() {
					if err := e.rm2.Restart(context.Background(), false); err != nil {
						t.Errorf("restart: %v", err)
					}
				})
			}
			proxy.ServeHTTP(w, r)
		}))
		t.Cleanup(srv.Close)
		web2 = strings.TrimPrefix(srv.URL, "http://")
	}
	for i, web := range []string{e.rm1.Addrs().Web, web2} {
		sc := subCluster([]string{"SC-1", "SC-2"}[i], pb.SubClusterState_SC_RUNNING, "")
		sc.RmWebServiceAddress = web
		e.st.Register(sc)
	}
	e.run1, e.run2 = submit(t, e.rm1, true), submit(t, e.rm2, true)
	e.finished = submit(t, e.rm1, false)
	rc := rmrest.NewClient(e.rm1.Addrs().Web)
	testpoll.Poll(t, "the managed application to finish", func() bool {
		s, err := rc.GetAppState(context.Background(), e.finished)
		return err == nil && s == "FINISHED"
	})
	old := time.Now().Add(-time.Hour)
	e.st.AddHome(e.run1, "SC-1", old)
	e.st.AddHome(e.run2, "SC-2", old)
	e.st.AddHome(e.finished, "SC-1", old)
	for i, home := range []string{"SC-1", "SC-2", "SC-2"} {
		id := "application_1_" + string(rune('7'+i)) + "000"
		e.ghosts = append(e.ghosts, id)
		e.st.AddHome(id, home, old.Add(time.Duration(i)*time.Minute))
	}
	e.young = "application_1_9999"
	e.st.AddHome(e.young, "SC-1", time.Now())
	return e
}

func TestCleaner(t *testing.T) {
	cases := []struct {
		name     string
		restart2 bool // SC-2's RM restarts during the round
		cfg      func(*CleanerConfig)
		before   func(t *testing.T, e *cleanEnv)
		// wantDeleted names rows by role: "ghosts", "finished", "ghost0".
		wantDeleted  func(e *cleanEnv) []string
		wantComplete bool
	}{
		{name: "rows unknown to every RM (failed submissions) are deleted; running, finished-recently and young rows stay",
			wantDeleted: func(e *cleanEnv) []string { return e.ghosts }, wantComplete: true},
		{name: "finished longer ago than the retention is deleted",
			cfg:         func(c *CleanerConfig) { c.Retention = Duration(time.Nanosecond) },
			wantDeleted: func(e *cleanEnv) []string { return append(slices.Clone(e.ghosts), e.finished) }, wantComplete: true},
		{name: "grace period protects a just-written home",
			cfg:         func(c *CleanerConfig) { c.Grace = Duration(2 * time.Hour) },
			wantDeleted: func(*cleanEnv) []string { return nil }, wantComplete: true},
		{name: "at most max_per_round, oldest first",
			cfg:         func(c *CleanerConfig) { c.MaxPerRound = 2 },
			wantDeleted: func(e *cleanEnv) []string { return e.ghosts[:2] }, wantComplete: true},
		{name: "dry run deletes nothing",
			cfg:         func(c *CleanerConfig) { c.DryRun = true },
			wantDeleted: func(*cleanEnv) []string { return nil }, wantComplete: true},
		{name: "YARN-11387: an RM down (restarting) means no deletion at all",
			before:      func(t *testing.T, e *cleanEnv) { _ = e.rm2.Crash() },
			wantDeleted: func(*cleanEnv) []string { return nil }},
		{name: "YARN-11387: an RM restarting during the round (partial list) means no deletion",
			restart2:    true,
			wantDeleted: func(*cleanEnv) []string { return nil }},
		{name: "a standby RM (failover in progress) means no deletion",
			before:      func(t *testing.T, e *cleanEnv) { e.rm2.TransitionToStandby() },
			wantDeleted: func(*cleanEnv) []string { return nil }},
		{name: "an RM that started too recently (maybe still recovering) means no deletion",
			cfg:         func(c *CleanerConfig) { c.MinRMUptime = Duration(time.Hour) },
			wantDeleted: func(*cleanEnv) []string { return nil }},
		{name: "a LOST sub-cluster that does not answer keeps its rows; the others are cleaned",
			before: func(t *testing.T, e *cleanEnv) {
				_ = e.rm2.Crash()
				sc := e.st.SubCluster("SC-2")
				sc.State = pb.SubClusterState_SC_LOST
				e.st.Register(sc)
			},
			wantDeleted: func(e *cleanEnv) []string { return e.ghosts[:1] }, wantComplete: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newCleanEnv(t, tc.restart2)
			g := newTestGPG(t, e.st, nil, nil, func(c *Config) {
				c.Cleaner.MinRMUptime = 0
				c.Cleaner.RMTimeout = Duration(5 * time.Second)
				if tc.cfg != nil {
					tc.cfg(&c.Cleaner)
				}
			})
			acquire(t, g)
			if tc.before != nil {
				tc.before(t, e)
			}
			all := e.st.Homes()
			res, err := g.cleanApps(context.Background(), g.lease.fence())
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("round: complete=%v reason=%q candidates=%d deleted=%v", res.Complete, res.Reason, res.Candidates, res.Deleted)
			if res.Complete != tc.wantComplete {
				t.Fatalf("complete=%v (%s), want %v", res.Complete, res.Reason, tc.wantComplete)
			}
			want := tc.wantDeleted(e)
			var gone []string
			for _, id := range all {
				if !slices.Contains(e.st.Homes(), id) {
					gone = append(gone, id)
				}
			}
			slices.Sort(want)
			if !slices.Equal(gone, want) {
				t.Fatalf("deleted %v, want %v", gone, want)
			}
			if tc.cfg != nil && g.cfg.Cleaner.DryRun {
				if len(res.Deleted) != len(e.ghosts) || e.st.Writes("DeleteApplicationHomes") != 0 {
					t.Fatalf("dry run: would delete %v, %d writes", res.Deleted, e.st.Writes("DeleteApplicationHomes"))
				}
			}
			if !tc.wantComplete && e.st.Writes("") != 0 {
				t.Fatalf("an incomplete round wrote to the store %d times", e.st.Writes(""))
			}
		})
	}
}

// TestRESTListerHAPair: an HA sub-cluster's web address list is tried in
// order; the standby is passed over, the active answers.
func TestRESTListerHAPair(t *testing.T) {
	active, standby := simrmtest.StartHA(t, "SC-HA", nil)
	app := submit(t, active, true)
	l := &restLister{http: &http.Client{Timeout: 5 * time.Second}, now: time.Now}
	cases := []struct {
		name    string
		addrs   string
		wantErr error
	}{
		{"standby first, then active", standby.Addrs().Web + "," + active.Addrs().Web, nil},
		{"standby only", standby.Addrs().Web, ErrNoActiveRM},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sc := subCluster("SC-HA", pb.SubClusterState_SC_RUNNING, "")
			sc.RmWebServiceAddress = tc.addrs
			apps, err := l.ListApps(context.Background(), sc)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if st, ok := apps[app]; !ok || st.Final {
				t.Fatalf("apps %v: want %s running", apps, app)
			}
		})
	}
}
