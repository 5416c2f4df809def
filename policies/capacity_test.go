package policies

import "testing"

func TestCapabilityWithPublished(t *testing.T) {
	cases := []struct {
		name             string
		rm               Capability
		pubMB, pubVCores int64
		wantMB, wantVC   int64
	}{
		{"published below RM view narrows it", Capability{AvailableMB: 8000, AllocatedMB: 2000, TotalMB: 10000, AvailableVCores: 8, AllocatedVCores: 2, TotalVCores: 10}, 5000, 6, 3000, 4},
		{"RM view below published stays", Capability{AvailableMB: 1000, AllocatedMB: 2000, TotalMB: 3000, AvailableVCores: 1, AllocatedVCores: 2, TotalVCores: 3}, 50000, 60, 1000, 1},
		{"allocated beyond published clamps to zero", Capability{AvailableMB: 1000, AllocatedMB: 9000, TotalMB: 10000, AvailableVCores: 1, AllocatedVCores: 9, TotalVCores: 10}, 4000, 4, 0, 0},
		{"no RM figures: published is all there is", Capability{}, 4096, 4, 4096, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.rm.WithPublished(tc.pubMB, tc.pubVCores)
			if got.AvailableMB != tc.wantMB || got.AvailableVCores != tc.wantVC || got.TotalMB != tc.pubMB {
				t.Fatalf("got %+v, want available %d MB %d vcores", got, tc.wantMB, tc.wantVC)
			}
		})
	}
}
