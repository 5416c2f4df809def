package gpg

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// Status is what /gpg/v1/status reports.
type Status struct {
	ID        string             `json:"id"`
	Holding   bool               `json:"holding"`
	Policy    string             `json:"policy"`
	ReadOnly  bool               `json:"readOnly"`
	DryRun    bool               `json:"cleanerDryRun"`
	LastRound time.Time          `json:"lastRound,omitzero"`
	LastError string             `json:"lastError,omitempty"`
	Target    map[string]float64 `json:"targetWeights,omitempty"`
	// QueueTargets and QueueInputs: each managed queue's own target and
	// its input ("per_queue", or "cluster-wide: <reason> (<sub-cluster>)").
	QueueTargets map[string]Weights `json:"queueTargetWeights,omitempty"`
	QueueInputs  map[string]string  `json:"queueInputs,omitempty"`
	Written      []string           `json:"queuesWrittenLastRound,omitempty"`
	Pinned       []string           `json:"pinnedQueues,omitempty"`
	LastClean    time.Time          `json:"lastCleanerRound,omitzero"`
	Cleaner      string             `json:"lastCleanerResult,omitempty"`
	LastReap     time.Time          `json:"lastUAMReaperRound,omitzero"`
	// Reaper: "reaped N of M candidates" (or "would reap" in dry-run), or
	// the round's error.
	Reaper string `json:"lastUAMReaperResult,omitempty"`
	// Kubernetes is what SetKubeStatus reports (gpg/kube's push and
	// write-back: what they leave to another writer).
	Kubernetes any `json:"kubernetes,omitempty"`
}

// SetKubeStatus sets what /gpg/v1/status reports under "kubernetes" (the
// role wires gpg/kube's pushers and writers here).
func (g *GPG) SetKubeStatus(f func() any) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.kubeStatus = f
}

// Status reports the GPG's current view.
func (g *GPG) Status() Status {
	g.mu.Lock()
	defer g.mu.Unlock()
	s := Status{ID: g.cfg.ID, Holding: g.lease.holding(), Policy: g.cfg.Generator.Policy, ReadOnly: g.cfg.Generator.ReadOnly,
		DryRun: g.cfg.Cleaner.DryRun, LastRound: g.lastRound, Target: g.last.Target,
		QueueTargets: g.last.QueueTargets, QueueInputs: g.last.QueueInputs, Pinned: g.last.Pinned, LastClean: g.lastClean}
	if g.lastErr != nil {
		s.LastError = g.lastErr.Error()
	}
	for _, p := range g.last.Policies {
		s.Written = append(s.Written, p.GetQueue())
	}
	if g.kubeStatus != nil {
		s.Kubernetes = g.kubeStatus()
	}
	switch {
	case g.lastClean.IsZero():
	case g.cleanResult.Complete:
		s.Cleaner = "complete"
	default:
		s.Cleaner = "incomplete: " + g.cleanResult.Reason
	}
	switch {
	case g.lastReap.IsZero():
	case g.reapErr != nil:
		s.Reaper = "error: " + g.reapErr.Error()
	case g.cfg.UAMReaper.DryRun:
		s.Reaper = fmt.Sprintf("dry run: would reap %d of %d candidates", len(g.reapResult.Reaped), g.reapResult.Candidates)
	default:
		s.Reaper = fmt.Sprintf("reaped %d of %d candidates", len(g.reapResult.Reaped), g.reapResult.Candidates)
	}
	return s
}

func (g *GPG) serveStatus(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(g.Status())
}
