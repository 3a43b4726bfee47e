package bridge

import (
	"slices"
	"testing"
)

func TestParsePMDCPUMask(t *testing.T) {
	for _, tc := range []struct {
		mask     string
		want     []int
		problems []string
	}{
		{"", nil, nil},
		{"0", nil, nil},
		{"1", []int{0}, nil},
		{"0x6", []int{1, 2}, nil},
		{"0XF0", []int{4, 5, 6, 7}, nil},
		{"101", []int{0, 8}, nil},
		{"1g3", []int{0, 1, 8}, []string{"Invalid cpu mask: g"}},
		{"zz", nil, []string{"Invalid cpu mask: z", "Invalid cpu mask: z"}},
	} {
		var problems []string
		got := ParsePMDCPUMask(tc.mask, &problems)
		if !slices.Equal(got, tc.want) || !slices.Equal(problems, tc.problems) {
			t.Errorf("%q: %v %q, want %v %q", tc.mask, got, problems, tc.want, tc.problems)
		}
	}
}

func FuzzParsePMDCPUMask(f *testing.F) {
	for _, s := range []string{"", "0x3", "ff", "1g"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, mask string) {
		var problems []string
		cpus := ParsePMDCPUMask(mask, &problems)
		if !slices.IsSorted(cpus) || len(cpus) > 4*len(mask) {
			t.Fatalf("%q: %v", mask, cpus)
		}
	})
}
