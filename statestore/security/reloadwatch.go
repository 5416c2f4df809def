package security

import (
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// reloadWatch is how a Reloader reports the outcome of re-reading its
// files: a failed reload keeps the previous pair, so without a log line
// and a metric a broken rotation would go unnoticed until the old
// certificate expires.
type reloadWatch struct {
	log      *slog.Logger
	failures prometheus.Counter // nil until Observe
	failing  prometheus.Gauge
}

// Observe makes r log the outcome of each change of its files on log
// (a failure once per distinct broken state, not once per check) and, when
// reg is set, count it there as <prefix>_tls_reload_failures_total with a
// <prefix>_tls_reload_failing gauge (1 while the files on disk cannot be
// loaded and the previous pair is still served). prefix is the owner's
// metric namespace, e.g. "yarnfed_statestore" for a replica.
func (r *Reloader) Observe(log *slog.Logger, reg prometheus.Registerer, prefix string) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := reloadWatch{log: log}
	if reg != nil {
		w.failures = prometheus.NewCounter(prometheus.CounterOpts{Name: prefix + "_tls_reload_failures_total",
			Help: "Changes of the TLS certificate, key or CA files that could not be loaded (the previous pair stays in use)."})
		w.failing = prometheus.NewGauge(prometheus.GaugeOpts{Name: prefix + "_tls_reload_failing",
			Help: "1 while the TLS files on disk cannot be loaded and the previous pair is served; 0 once they load."})
		for _, c := range []prometheus.Collector{w.failures, w.failing} {
			if err := reg.Register(c); err != nil {
				return err
			}
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.watch = w
	if r.err != nil && w.failing != nil {
		w.failing.Set(1)
	}
	return nil
}

// Err is the error of the last reload: nil while the files on disk are
// the pair in use, the reason otherwise (the previous pair is served).
func (r *Reloader) Err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if time.Since(r.checked) >= reloadEvery {
		_ = r.reload(false) // recorded in r.err
	}
	return r.err
}

// settle records the outcome of a reload that read the files (or failed
// to stat them): st is the state they were in.
func (r *Reloader) settle(st [3]fileStamp, err error) {
	was := r.err
	r.err = err
	w := r.watch
	if w.log == nil {
		w.log = slog.New(slog.DiscardHandler)
	}
	if err != nil {
		r.badStamp = st
		w.log.Error("tls: reloading the certificate files failed; still serving the previous certificate", "cert", r.info.CertFile, "error", err)
		if w.failures != nil {
			w.failures.Inc()
			w.failing.Set(1)
		}
		return
	}
	if w.failing != nil {
		w.failing.Set(0)
	}
	if was != nil {
		w.log.Info("tls: certificate files load again", "cert", r.info.CertFile)
	}
}
