package bridge

import "testing"

func TestParseDummyLevel(t *testing.T) {
	for arg, want := range map[string]DummyLevel{"": DummyNone, "system": DummySystem, "override": DummyOverride} {
		if l, err := ParseDummyLevel(arg); err != nil || l != want {
			t.Errorf("%q: %v, %v", arg, l, err)
		}
	}
	if _, err := ParseDummyLevel("all"); err == nil || err.Error() != "all: unknown dummy level" {
		t.Errorf("all: %v", err)
	}
}

func TestDummyPortNo(t *testing.T) {
	for name, want := range map[string]uint32{"p1": 1, "br0": 100, "br1": 101, "p10x3": 10, "eth": 0, "p0": 0, "v1234567890": 123456789} {
		if got := dummyPortNo(name); got != want {
			t.Errorf("%s: %d, want %d", name, got, want)
		}
	}
}
