package hostport

import (
	"slices"
	"testing"
)

func TestSplitListTrimsAndDropsEmptyEntries(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"", nil},
		{" , ,", nil},
		{"rm1:8032", []string{"rm1:8032"}},
		{" rm1:8032 ,, rm2:8032 ", []string{"rm1:8032", "rm2:8032"}},
	} {
		if got := SplitList(c.in); !slices.Equal(got, c.want) || (c.want == nil) != (got == nil) {
			t.Errorf("SplitList(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
