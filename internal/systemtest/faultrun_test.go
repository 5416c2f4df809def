package systemtest

import (
	"syscall"
	"testing"
	"time"
)

// TestFederationFaultRun (issue 21): three store replicas, two simrm
// sub-clusters with agents, a router; four clients submit without pause
// while, in turn, the store leader is SIGKILLed (and restarted), a store
// follower is paused (SIGSTOP, then SIGCONT), the router is SIGKILLed and
// restarted, and SC-2's agent is SIGKILLed and restarted. The clients do
// not retry on their own; afterwards every failed submission is retried
// once with the same ApplicationId. Every acknowledged or retried
// submission must be held by exactly one RM (asked directly), the one the
// store names, and be listed once by the router: counts are logged
// (go test -v).
func TestFederationFaultRun(t *testing.T) {
	skipShort(t)
	f := startFederation(t, 3)
	h := f.h
	r := h.startRouter("router-1", f.st)
	y := dialYARN(t, r.clientrm)
	s := startStream(t, dialYARN(t, r.clientrm, noRetry), 4)
	s.waitAcked(t, 10, "before the first fault")
	start := time.Now()

	leader := f.st.leader(t)
	leader.p.Kill()
	t.Logf("fault: store leader %s SIGKILLed (%d acknowledged)", leader.id, s.nAcked.Load())
	s.waitAcked(t, 30, "with the store leader dead")
	h.restart(leader.p)
	waitFor(t, 30*time.Second, "store replicas agree on a leader after the restart", f.st.agreedLeader)

	var follower *storeNode
	now := f.st.leader(t)
	for _, nd := range f.st.nodes {
		if nd != now {
			follower = nd
			break
		}
	}
	signal(t, follower.p, syscall.SIGSTOP)
	t.Logf("fault: store follower %s paused (%d acknowledged)", follower.id, s.nAcked.Load())
	s.waitAcked(t, 30, "with a store follower paused")
	signal(t, follower.p, syscall.SIGCONT)

	r.p.Kill()
	t.Logf("fault: router SIGKILLed (%d acknowledged)", s.nAcked.Load())
	h.restartRouter(r)
	s.waitAcked(t, 30, "through the restarted router")

	agent := f.rms[1].agent
	agent.Kill()
	t.Logf("fault: agent of %s SIGKILLed (%d acknowledged)", f.rms[1].id, s.nAcked.Load())
	s.waitAcked(t, 30, "with SC-2's agent dead")
	h.restart(agent)
	s.waitAcked(t, 10, "after the agent restarted")
	attempts := s.stop()
	elapsed := time.Since(start)

	var all []string
	acked, retried := 0, 0
	for _, a := range attempts {
		all = append(all, appID(a.id))
		if a.acked {
			acked++
			continue
		}
		retried++
		if err := y.submit(a.id); err != nil {
			t.Errorf("retried submission of %s: %v", appID(a.id), err)
		}
	}
	held, homes := f.holders(t), f.homes(t)
	lost, dup, misplaced := 0, 0, 0
	for _, id := range all {
		switch n := len(held[id]); {
		case n == 0:
			lost++
		case n > 1:
			dup++
		case homes[id] != held[id][0]:
			misplaced++
		}
	}
	t.Logf("fault run: %d submissions in %v under 4 faults: %d acknowledged at once, %d failed and retried; lost %d, duplicated %d, home differs from holder %d",
		len(attempts), elapsed.Round(time.Second), acked, retried, lost, dup, misplaced)
	f.checkExactlyOnce(t, y, all)
}
