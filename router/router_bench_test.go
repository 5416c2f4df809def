package router_test

import (
	"testing"

	"github.com/yarnfed/yarnfed/internal/yarnpb"
	"github.com/yarnfed/yarnfed/router/routertest"
)

// BenchmarkReportThroughRouter: one getApplicationReport through the
// router (IPC in, home from cache, IPC-free fake RM out): the router's own
// per-call cost.
func BenchmarkReportThroughRouter(b *testing.B) {
	f := routertest.NewFed(b, 2, nil)
	id := f.NewApp(f.Client)
	if err := f.Submit(f.Client, id); err != nil {
		b.Fatal(err)
	}
	req := &yarnpb.GetApplicationReportRequestProto{ApplicationId: id}
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if err := f.Client.Call(b.Context(), "getApplicationReport", req, &yarnpb.GetApplicationReportResponseProto{}); err != nil {
				b.Error(err)
				return
			}
		}
	})
}
