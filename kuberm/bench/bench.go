// Package bench is `yarnfed bench kuberm`: how long a YARN container takes
// from the ApplicationMaster's request to running, through kuberm (a pod
// placed by kube-scheduler and started by a kubelet) against a real Hadoop
// ResourceManager and NodeManager on the same machine, in one run, with the
// ratio printed last.
//
// The same code measures both: the bench is an unmanaged ApplicationMaster
// written in Go that speaks only YARN's protocols (ApplicationClientProtocol
// to submit itself and take its AMRMToken from the report,
// ApplicationMasterProtocol to register and allocate,
// ContainerManagementProtocol with the NM tokens to start, poll and stop its
// containers), so neither side gets code of its own. Rounds alternate
// between the two targets, so load from elsewhere on the machine falls on
// both alike.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/yarnfed/yarnfed/internal/procstat"
)

// Target is one RM to measure: its client port (submit, reports) and its
// scheduler port (the AM's). The NodeManagers are found from the NodeIds of
// the containers the RM hands out.
type Target struct {
	Name      string
	ClientRM  string
	Scheduler string
}

// ErrBadTarget: a target flag that does not name both addresses.
var ErrBadTarget = errors.New("bench kuberm: a target is clientrm=host:port,amrm=host:port")

// ParseTarget reads "clientrm=host:port,amrm=host:port" (the subcluster
// agent's --rm spelling) into a Target named name.
func ParseTarget(name, s string) (Target, error) {
	t := Target{Name: name}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok {
			return Target{}, fmt.Errorf("%w: %q", ErrBadTarget, s)
		}
		if _, _, err := net.SplitHostPort(v); err != nil {
			return Target{}, fmt.Errorf("%w: %s=%q: %w", ErrBadTarget, k, v, err)
		}
		switch k {
		case "clientrm":
			t.ClientRM = v
		case "amrm":
			t.Scheduler = v
		default:
			return Target{}, fmt.Errorf("%w: unknown key %q", ErrBadTarget, k)
		}
	}
	if t.ClientRM == "" || t.Scheduler == "" {
		return Target{}, fmt.Errorf("%w: %q", ErrBadTarget, s)
	}
	return t, nil
}

// Config shapes a run.
type Config struct {
	// Subject is what is measured (kuberm), Peer the baseline (a real
	// Hadoop RM and NodeManager); ratios are Subject / Peer.
	Subject, Peer Target
	// User submits both applications (SIMPLE login): an RM hands an
	// unmanaged AM's token only to its owner.
	User  string
	Queue string
	// Containers are asked at once in each round; Rounds per target.
	Containers int
	Rounds     int
	// MemoryMB and VCores size each container.
	MemoryMB int64
	VCores   int32
	// Command is what each container runs (a shell command line; its
	// output goes to the container's stdout and stderr files). It must
	// still run when its container is observed running: it is stopped then.
	Command string
	// Heartbeat is the pause between allocate calls; StatusPoll between
	// getContainerStatuses calls. Each bounds the resolution of its phase,
	// and each call is load on the RM and NodeManager measured.
	Heartbeat  time.Duration
	StatusPoll time.Duration
	// Hold is how long the round's containers keep running once all are
	// seen running, before the stop: a NodeManager reports RUNNING as it
	// launches the script, so a stop at once can kill the command before
	// it did anything.
	Hold time.Duration
	// RoundTimeout bounds one round (request to every container completed)
	// and Setup the submission and registration of each AM.
	RoundTimeout time.Duration
	Setup        time.Duration
	Logger       *slog.Logger
}

// DefaultConfig is a short run: 2 containers per round (the 2-core
// reference node fits two 1-vcore pods beside the cluster's own), 5 rounds.
func DefaultConfig() Config {
	return Config{
		User: "kbench", Queue: "default",
		Containers: 2, Rounds: 5,
		MemoryMB: 256, VCores: 1,
		Command: "sleep 30",
		// Spark's AM heartbeat while containers are pending
		// (spark.yarn.scheduler.initial-allocation.interval); AMRMClientAsync
		// users (distributed shell, MapReduce) beat every second.
		Heartbeat:    200 * time.Millisecond,
		StatusPoll:   200 * time.Millisecond,
		Hold:         time.Second,
		RoundTimeout: 5 * time.Minute,
		Setup:        2 * time.Minute,
	}
}

// ErrConfig: a Config that cannot run.
var ErrConfig = errors.New("bench kuberm: bad configuration")

func (c *Config) validate() error {
	switch {
	case c.Subject.ClientRM == "" || c.Subject.Scheduler == "" || c.Peer.ClientRM == "" || c.Peer.Scheduler == "":
		return fmt.Errorf("%w: both targets need their client and scheduler addresses", ErrConfig)
	case c.User == "":
		return fmt.Errorf("%w: no user", ErrConfig)
	case c.Containers < 1 || c.Rounds < 1:
		return fmt.Errorf("%w: containers and rounds must be at least 1", ErrConfig)
	case c.MemoryMB < 1 || c.VCores < 1:
		return fmt.Errorf("%w: a container needs memory and a vcore", ErrConfig)
	case strings.TrimSpace(c.Command) == "":
		return fmt.Errorf("%w: no command", ErrConfig)
	case c.Heartbeat <= 0 || c.StatusPoll <= 0 || c.RoundTimeout <= 0 || c.Setup <= 0 || c.Hold < 0:
		return fmt.Errorf("%w: intervals and timeouts must be positive", ErrConfig)
	}
	return nil
}

// Sample is one container's timeline: asked (the allocate call carrying the
// ask was sent), allocated (the answer handing it out arrived), started
// (startContainers answered), running (the first getContainerStatuses
// answer with RUNNING/RUNNING arrived).
type Sample struct {
	Asked, Allocated, Started, Running time.Time
}

// Phases of a sample, in table order.
var phases = []struct {
	name string
	of   func(Sample) time.Duration
}{
	{"request -> allocated", func(s Sample) time.Duration { return s.Allocated.Sub(s.Asked) }},
	{"allocated -> started (startContainers)", func(s Sample) time.Duration { return s.Started.Sub(s.Allocated) }},
	{"allocated -> running", func(s Sample) time.Duration { return s.Running.Sub(s.Allocated) }},
	{"request -> running", func(s Sample) time.Duration { return s.Running.Sub(s.Asked) }},
}

// Outcome is one target's run: its application, its samples, and the
// counts the leak check compares.
type Outcome struct {
	Target      Target
	App         string
	Samples     []Sample
	Asked       int // containers asked for, over all rounds
	Allocated   int // handed out (extra ones, released, included)
	Completed   int // reported completed by the RM after their stop or release
	FinalState  string
	FinalStatus string
}

// Result is the whole run.
type Result struct {
	Subject, Peer Outcome
}

// Run measures cfg.Rounds rounds on each target, alternating (subject,
// peer, subject, ...), then finishes both applications, checks that every
// container handed out was reported completed and that each application
// ended FINISHED/SUCCEEDED, and prints the table to w, the ratio last.
// A failure on either side fails the run; whatever was started is
// stopped and the applications are ended (finished, else killed).
func Run(ctx context.Context, cfg Config, w io.Writer) (Result, error) {
	if err := cfg.validate(); err != nil {
		return Result{}, err
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	cfg.Subject.Name = nameOr(cfg.Subject.Name, "kuberm")
	cfg.Peer.Name = nameOr(cfg.Peer.Name, "hadoop")
	loadStart := procstat.LoadAvg()
	fmt.Fprintf(w, "yarnfed bench kuberm: container request -> running, %d container(s) of <%d MB, %d vcores> asked at once per round, %d rounds per target, alternating; command %q; AM heartbeat %v, status poll %v, hold %v; %s at start\n",
		cfg.Containers, cfg.MemoryMB, cfg.VCores, cfg.Rounds, cfg.Command, cfg.Heartbeat, cfg.StatusPoll, cfg.Hold, loadStart)
	fmt.Fprintf(w, "  %s: client %s, scheduler %s\n  %s: client %s, scheduler %s\n",
		cfg.Subject.Name, cfg.Subject.ClientRM, cfg.Subject.Scheduler, cfg.Peer.Name, cfg.Peer.ClientRM, cfg.Peer.Scheduler)

	ams := make([]*am, 2)
	defer func() {
		for _, a := range ams {
			if a != nil {
				a.abort()
			}
		}
	}()
	for i, t := range []Target{cfg.Subject, cfg.Peer} {
		a, err := launch(ctx, cfg, t)
		if err != nil {
			return Result{}, err
		}
		ams[i] = a
		fmt.Fprintf(w, "  %s: unmanaged application %s registered after %v\n", t.Name, a.appID, a.setupTook.Round(time.Millisecond))
	}
	for r := 1; r <= cfg.Rounds; r++ {
		for _, a := range ams {
			took, err := a.round(ctx, r)
			if err != nil {
				return Result{}, err
			}
			cfg.Logger.Info("round done", "target", a.t.Name, "round", r, "took", took)
		}
	}
	var res Result
	for i, a := range ams {
		if err := a.finish(ctx); err != nil {
			return Result{}, err
		}
		o := a.outcome()
		if i == 0 {
			res.Subject = o
		} else {
			res.Peer = o
		}
		ams[i] = nil
	}
	printTable(w, res)
	return res, nil
}

func nameOr(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// Stats are one phase's figures over a target's samples.
type Stats struct {
	N             int
	P50, P99, Max time.Duration
}

// Summarize is one phase (of) over samples: n, p50, p99 and max (nearest
// rank).
func Summarize(samples []Sample, of func(Sample) time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	ds := make([]time.Duration, len(samples))
	for i, s := range samples {
		ds[i] = of(s)
	}
	slices.Sort(ds)
	return Stats{N: len(ds), P50: rank(ds, 0.50), P99: rank(ds, 0.99), Max: ds[len(ds)-1]}
}

// rank is the nearest-rank percentile of sorted ds.
func rank(ds []time.Duration, p float64) time.Duration {
	i := int(float64(len(ds))*p+0.999999) - 1
	return ds[max(0, min(i, len(ds)-1))]
}

func printTable(w io.Writer, res Result) {
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "phase\ttarget\tn\tp50\tp99\tmax\tp50 ratio\t")
	for _, ph := range phases {
		s := Summarize(res.Subject.Samples, ph.of)
		p := Summarize(res.Peer.Samples, ph.of)
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%s\t%s\t\n", ph.name, res.Subject.Target.Name, s.N, secs(s.P50), secs(s.P99), secs(s.Max), ratio(s.P50, p.P50))
		fmt.Fprintf(tw, "\t%s\t%d\t%s\t%s\t%s\t\t\n", res.Peer.Target.Name, p.N, secs(p.P50), secs(p.P99), secs(p.Max))
	}
	tw.Flush()
	fmt.Fprintln(w)
	for _, o := range []Outcome{res.Subject, res.Peer} {
		fmt.Fprintf(w, "%s: %s, %d containers asked, %d allocated, %d running, %d completed, %s %s\n",
			o.Target.Name, o.App, o.Asked, o.Allocated, len(o.Samples), o.Completed, o.FinalState, o.FinalStatus)
	}
	fmt.Fprintf(w, "%s at end (shared cores: compare the ratio within one run)\n", procstat.LoadAvg())
	rr := Summarize(res.Subject.Samples, phases[3].of)
	pr := Summarize(res.Peer.Samples, phases[3].of)
	fmt.Fprintf(w, "ratio %s / %s, request -> running p50: %s (%s vs %s)\n", res.Subject.Target.Name, res.Peer.Target.Name,
		ratio(rr.P50, pr.P50), secs(rr.P50), secs(pr.P50))
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

func ratio(a, b time.Duration) string {
	if b <= 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", float64(a)/float64(b))
}
