package kuberm

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	submitted   prometheus.Counter
	podsCreated prometheus.Counter
	podsDeleted prometheus.Counter
	// allocate (alloc.go)
	containersAllocated prometheus.Counter
	containersCompleted prometheus.Counter
	reconciles          *prometheus.CounterVec
	heartbeats          *prometheus.CounterVec
	// The NM face (nm.go).
	nmStarted prometheus.Counter
	nmStopped prometheus.Counter
	nmRefused *prometheus.CounterVec
	// Unmanaged AMs (unmanaged.go).
	uamTokens  prometheus.Counter
	uamExpired prometheus.Counter
	uamRefused prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		submitted: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_applications_submitted_total",
			Help: "Applications accepted by submitApplication (a resubmission of a known id is not counted)."}),
		podsCreated: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_pods_created_total",
			Help: "AM and container pods created in the Kubernetes API."}),
		podsDeleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_pods_deleted_total",
			Help: "Pods deleted by kills, releases, surplus asks and ended attempts."}),
		containersAllocated: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_containers_allocated_total",
			Help: "Containers handed to AMs in allocate answers (bound container pods)."}),
		containersCompleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_containers_completed_total",
			Help: "Completed containers reported to AMs, releases excluded."}),
		reconciles: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_kuberm_reconciles_total",
			Help: "Reconcile rounds by result (ok, error)."}, []string{"result"}),
		heartbeats: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_kuberm_heartbeats_total",
			Help: "State store membership writes by kind (register, heartbeat) and result (ok, error)."}, []string{"kind", "result"}),
		nmStarted: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_nm_containers_started_total",
			Help: "Containers started through the NM face (their launch Secret created)."}),
		nmStopped: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_nm_containers_stopped_total",
			Help: "Container pods deleted by an AM's stopContainers."}),
		nmRefused: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "yarnfed_kuberm_nm_refused_total",
			Help: "NM face refusals by method (login, startContainers, stopContainers, getContainerStatuses) and reason. A forged password is refused by DIGEST-MD5 itself and not counted here."},
			[]string{"method", "reason"}),
		uamTokens: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_unmanaged_am_tokens_total",
			Help: "AMRMTokens handed to the owner of an unmanaged application in an application report (attempt LAUNCHED)."}),
		uamExpired: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_unmanaged_am_expired_total",
			Help: "Unmanaged applications failed because their AM made no scheduler call for am_liveness_expiry."}),
		uamRefused: prometheus.NewCounter(prometheus.CounterOpts{Name: "yarnfed_kuberm_unmanaged_am_refused_total",
			Help: "Unmanaged submissions refused because max_unmanaged_applications were live."}),
	}
	if reg != nil {
		reg.MustRegister(m.submitted, m.podsCreated, m.podsDeleted, m.containersAllocated, m.containersCompleted,
			m.reconciles, m.heartbeats, m.nmStarted, m.nmStopped, m.nmRefused,
			m.uamTokens, m.uamExpired, m.uamRefused)
	}
	return m
}
