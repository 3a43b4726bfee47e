package bridge

import (
	"fmt"
	"slices"
)

// KeyPMDCPUMask is Open_vSwitch other_config:pmd-cpu-mask: a hexadecimal
// CPU mask (an optional 0x, the lowest CPU in the last digit) of the CPUs
// the datapath's workers run on (datapath/pmd.go).
const KeyPMDCPUMask = "pmd-cpu-mask"

// ParsePMDCPUMask returns the CPUs mask selects, ascending, as OVS reads it
// (ovs_numa_dump_cores_with_cmask): a digit that is not hexadecimal is
// reported with OVS's warning, "Invalid cpu mask: c", and counts as 0.
func ParsePMDCPUMask(mask string, problems *[]string) []int {
	digits := mask
	if len(digits) >= 2 && (digits[:2] == "0x" || digits[:2] == "0X") {
		digits = digits[2:]
	}
	var cpus []int
	for i := len(digits) - 1; i >= 0; i-- {
		c := digits[i]
		var v int
		switch {
		case c >= '0' && c <= '9':
			v = int(c - '0')
		case c >= 'a' && c <= 'f':
			v = int(c-'a') + 10
		case c >= 'A' && c <= 'F':
			v = int(c-'A') + 10
		default:
			*problems = append(*problems, fmt.Sprintf("Invalid cpu mask: %c", c))
		}
		for j := range 4 {
			if v>>j&1 != 0 {
				cpus = append(cpus, (len(digits)-1-i)*4+j)
			}
		}
	}
	return cpus
}

// PMDPlacer is implemented by a datapath whose workers can be pinned to
// CPUs; SetPMDCPUs returns the CPUs of cpus it uses.
type PMDPlacer interface {
	SetPMDCPUs(cpus []int) []int
}

// applyPMDCPUs places the datapath's workers on the CPUs of
// pmd-cpu-mask when it changed. OVS starts no pmd thread for a mask that
// selects no CPU, and so polls nothing; govs then keeps its workers
// unpinned and says so.
func (s *Switch) applyPMDCPUs(d *Desired) {
	pl, ok := s.dp.(PMDPlacer)
	if !ok || d.PMDCPUMask == s.pmdMask {
		return
	}
	s.pmdMask = d.PMDCPUMask
	used := pl.SetPMDCPUs(d.PMDCPUs)
	switch {
	case d.PMDCPUMask == "":
		s.log.Infof("pmd-cpu-mask removed: datapath workers are not pinned")
	case len(used) == 0:
		s.log.Warnf("pmd-cpu-mask %s selects no CPU this process may run on: datapath workers are not pinned", d.PMDCPUMask)
	default:
		if !slices.Equal(used, d.PMDCPUs) {
			s.log.Warnf("pmd-cpu-mask %s: CPUs %v are not available to this process", d.PMDCPUMask, without(d.PMDCPUs, used))
		}
		s.log.Infof("pmd-cpu-mask %s: datapath workers pinned round-robin to CPUs %v", d.PMDCPUMask, used)
	}
}

func without(a, b []int) []int {
	var r []int
	for _, x := range a {
		if !slices.Contains(b, x) {
			r = append(r, x)
		}
	}
	return r
}
