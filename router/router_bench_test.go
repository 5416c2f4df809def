package router_test

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router"
)

// BenchmarkReportThroughRouter: one getApplicationReport through the
// router (IPC in, home from cache, IPC-free fake RM out): the router's own
// per-call cost.
func BenchmarkReportThroughRouter(b *testing.B) {
	f := newFed(b, 2, nil)
	id := f.newApp(f.client)
	if err := f.submit(f.client, id); err != nil {
		b.Fatal(err)
	}
	req := &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := f.client.Call(b.Context(), "getApplicationReport", req, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkMergeApplications merges 3 sub-clusters x 1000 apps with UAMs.
func BenchmarkMergeApplications(b *testing.B) {
	lists := make([][]*yarnpb.ApplicationReportProto, 3)
	for sc := range lists {
		for i := range 1000 {
			if sc > 0 && i%10 == 0 {
				lists[sc] = append(lists[sc], rep(int32(i), "UnmanagedAM", true, 1, 100))
				continue
			}
			lists[sc] = append(lists[sc], rep(int32(sc*1000+i), "job", false, 1, 100))
		}
	}
	b.ReportAllocs()
	for b.Loop() {
		router.MergeApplications(lists, false)
	}
}
