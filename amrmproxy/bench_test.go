package amrmproxy

import (
	"testing"
)

// BenchmarkAllocateThroughProxy is one AM's empty heartbeat through the
// proxy to one simrm (the proxy's per-call cost plus one IPC hop).
func BenchmarkAllocateThroughProxy(b *testing.B) {
	f := newFed(b, 1, "", nil, nil)
	_, tok := f.newApp("alice")
	am := f.newAM(tok)
	am.mustRegister()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := am.rawAllocate(am.responseID, nil, nil)
		if err != nil {
			b.Fatal(err)
		}
		am.responseID = resp.GetResponseId()
	}
}
