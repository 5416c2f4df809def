package rest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"slices"

	"github.com/yarnfed/yarnfed/internal/hostport"
	"github.com/yarnfed/yarnfed/internal/rmrest"
	"github.com/yarnfed/yarnfed/router/fed"
	"github.com/yarnfed/yarnfed/router/restwire"
)

// restMetrics sums every routable RM's /ws/v1/cluster/metrics. An RM whose
// REST API does not answer is counted from the clusterMetrics its agent
// last heartbeated into the store (the capability JSON), which is seconds
// old; only if that is missing too does the sub-cluster count as failed,
// and then, as in Hadoop's Router, it is left out of the sum (named in
// LeftOutHeader) unless every sub-cluster failed.
func (r *API) restMetrics(ctx context.Context, _ *http.Request) (restReply, error) {
	cands, err := r.core.Routable(ctx)
	if err != nil {
		return restReply{}, err
	}
	ok, failed := fed.FanOut(ctx, r.cfg.FanOut, cands, func(ctx context.Context, sc fed.SubClusterInfo) (*rmrest.ClusterMetrics, error) {
		m, err := r.fetchMetrics(ctx, sc)
		if err != nil {
			cm, cerr := restwire.ParseCapability(sc.Capability)
			if cerr != nil {
				return nil, &fed.SubClusterError{SubCluster: sc.ID, Method: "GET /ws/v1/cluster/metrics", Err: err}
			}
			m = cm
		}
		r.withoutUAMs(ctx, sc, m) // an app counts once, at its home (uams.go)
		return m, nil
	})
	// As Hadoop's getClusterMetricsInfo: the sum of what answered; only
	// when nothing did is it an error.
	if len(ok) == 0 {
		return restReply{}, fed.Join(failed)
	}
	r.partial(ctx, "GET /ws/v1/cluster/metrics", failed)
	sum := MergeClusterMetrics(ok)
	return reply(http.StatusOK, rmrest.ClusterMetricsResponse{ClusterMetrics: sum}, sum), nil
}

func (r *API) fetchMetrics(ctx context.Context, sc fed.SubClusterInfo) (*rmrest.ClusterMetrics, error) {
	addrs := hostport.SplitList(sc.RMWebServiceAddress)
	if len(addrs) == 0 {
		return nil, fmt.Errorf("no RM web address")
	}
	var lastErr error
	for _, a := range addrs {
		ctx, cancel := context.WithTimeout(ctx, r.cfg.CallTimeout)
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+a+"/ws/v1/cluster/metrics", nil)
		req.Header.Set("Accept", "application/json")
		resp, err := r.cfg.HTTP.Do(req)
		if err != nil {
			cancel()
			lastErr = err
			continue
		}
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusOK {
			lastErr = fmt.Errorf("%s: HTTP %d %v", a, resp.StatusCode, err)
			continue // a standby RM redirects or refuses: try the next
		}
		var out rmrest.ClusterMetricsResponse
		if err := json.Unmarshal(body, &out); err != nil {
			lastErr = fmt.Errorf("%s: %w", a, err)
			continue
		}
		return &out.ClusterMetrics, nil
	}
	return nil, lastErr
}

// MergeClusterMetrics combines sub-clusters' clusterMetrics: counts and
// amounts are summed; the fields that are ratios are recomputed the way an
// RM computes them, from the summed amounts (adding 17% and 62% would say
// 79%, or 124% for two busy RMs).
func MergeClusterMetrics(ms []*rmrest.ClusterMetrics) rmrest.ClusterMetrics {
	var sum rmrest.ClusterMetrics
	busy := int32(-1) // an RM sends -1 when its event-processing monitor is off
	for _, m := range ms {
		addMetrics(&sum, m)
		busy = max(busy, m.RMSchedulerBusyPct)
	}
	// The RM: utilized * 100 / total, integer division, 0 without capacity.
	sum.UtilizedMBPercent, sum.UtilizedVCoresPercent = 0, 0
	if sum.TotalMB > 0 {
		sum.UtilizedMBPercent = int32(sum.UtilizedMB * 100 / sum.TotalMB)
	}
	if sum.TotalVirtualCores > 0 {
		sum.UtilizedVCoresPercent = int32(sum.UtilizedVirtualCores * 100 / sum.TotalVirtualCores)
	}
	// Each scheduler is busy on its own: the federation reports the busiest.
	sum.RMSchedulerBusyPct = busy
	if len(ms) == 0 {
		sum.RMSchedulerBusyPct = 0
	}
	return sum
}

// addMetrics adds every integer field (and the cross-partition resources)
// of src to dst.
func addMetrics(dst, src *rmrest.ClusterMetrics) {
	dv, sv := reflect.ValueOf(dst).Elem(), reflect.ValueOf(src).Elem()
	for i := 0; i < dv.NumField(); i++ {
		f := dv.Field(i)
		switch f.Kind() {
		case reflect.Int32, reflect.Int64:
			f.SetInt(f.Int() + sv.Field(i).Int())
		case reflect.Pointer:
			s, ok := sv.Field(i).Interface().(*rmrest.ResourceInfo)
			if !ok || s == nil {
				continue
			}
			if f.IsNil() {
				f.Set(reflect.ValueOf(&rmrest.ResourceInfo{}))
			}
			d := f.Interface().(*rmrest.ResourceInfo)
			d.Memory += s.Memory
			d.VCores += s.VCores
			addResourceInformations(d, s)
		}
	}
	dst.CrossPartitionMetricsAvailable = dst.CrossPartitionMetricsAvailable || src.CrossPartitionMetricsAvailable
}

// addResourceInformations sums per-resource-type values by name, keeping
// the first sub-cluster's units and limits.
func addResourceInformations(dst, src *rmrest.ResourceInfo) {
	if src.ResourceInformations == nil {
		return
	}
	if dst.ResourceInformations == nil {
		dst.ResourceInformations = &rmrest.ResourceInformations{}
	}
	d := dst.ResourceInformations
	for _, ri := range src.ResourceInformations.ResourceInformation {
		i := slices.IndexFunc(d.ResourceInformation, func(x rmrest.ResourceInformation) bool { return x.Name == ri.Name })
		if i < 0 {
			d.ResourceInformation = append(d.ResourceInformation, ri)
			continue
		}
		d.ResourceInformation[i].Value += ri.Value
	}
}
