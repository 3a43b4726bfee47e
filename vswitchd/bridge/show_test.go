package bridge

import "testing"

// humanSize matches lib/dpctl.c's print_human_size (OVS prints
// "TX bytes:1180 (1.2 KiB)").
func TestHumanSize(t *testing.T) {
	for v, want := range map[uint64]string{
		0: "", 1023: "", 1024: " (1.0 KiB)", 1180: " (1.2 KiB)", 1 << 20: " (1.0 MiB)",
		5<<30 + 1<<29: " (5.5 GiB)", 1 << 40: " (1.0 TiB)", 3 << 50: " (3072.0 TiB)",
	} {
		if got := humanSize(v); got != want {
			t.Errorf("humanSize(%d) = %q, want %q", v, got, want)
		}
	}
}
