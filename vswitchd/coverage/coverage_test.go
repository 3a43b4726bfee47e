package coverage

import (
	"regexp"
	"strings"
	"testing"
)

func TestShow(t *testing.T) {
	c := New("bridge_reconfigure", "dpif_port_add", "txn_error")
	for range 10 {
		c.Inc("bridge_reconfigure")
	}
	c.Tick()
	c.Inc("dpif_port_add")
	got := c.Show()
	want := regexp.MustCompile(`^Event coverage, avg rate over last: 5 seconds, last minute, last hour,  hash=[0-9a-f]{8}:
bridge_reconfigure         2\.0/sec     0\.167/sec        0\.0000/sec   total: 10
dpif_port_add              0\.0/sec     0\.000/sec        0\.0000/sec   total: 1
1 events never hit
$`)
	if !want.MatchString(got) {
		t.Errorf("Show:\n%s", got)
	}
}

func TestRead(t *testing.T) {
	c := New("a", "b")
	c.Inc("a")
	c.Inc("a")
	if n, ok := c.Read("a"); n != 2 || !ok {
		t.Errorf("a: %d %v, want 2 true", n, ok)
	}
	if n, ok := c.Read("b"); n != 0 || !ok {
		t.Errorf("b: %d %v, want 0 true", n, ok)
	}
	if _, ok := c.Read("nosuch"); ok {
		t.Error("nosuch: found")
	}
	if strings.Contains(c.Show(), "nosuch") {
		t.Error("Read registered nosuch")
	}
}
