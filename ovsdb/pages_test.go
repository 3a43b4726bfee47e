package main

import (
	"bufio"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
)

// exeRss returns the resident kB of the read-only mappings of the running
// binary.
func exeRss(t *testing.T) int {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		t.Skip(err)
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	total, in := 0, false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fs := strings.Fields(sc.Text())
		if len(fs) >= 5 && strings.Contains(fs[0], "-") && !strings.HasSuffix(fs[0], ":") {
			in = len(fs) >= 6 && fs[5] == exe && fs[1][1] != 'w'
			continue
		}
		if in && len(fs) >= 2 && fs[0] == "Rss:" {
			n, _ := strconv.Atoi(fs[1])
			total += n
		}
	}
	return total
}

// TestDropStartupPages checks that the binary's read-only pages leave the
// resident set and that the program runs on (relocated read-only data, in
// a build with cgo, is kept).
func TestDropStartupPages(t *testing.T) {
	before := exeRss(t)
	dropStartupPages()
	after := exeRss(t)
	if after >= before {
		t.Errorf("resident read-only pages of the binary: %d kB before, %d kB after", before, after)
	}
	b, err := json.Marshal(map[string]any{"a": []int{1, 2}, "b": "x"})
	if err != nil || string(b) != `{"a":[1,2],"b":"x"}` {
		t.Fatalf("after the drop: %s %v", b, err)
	}
	if u := usage(os.TempDir()); !strings.Contains(u, "ovsdb-server") {
		t.Fatalf("usage after the drop: %.100s", u)
	}
	t.Logf("resident read-only pages of the binary: %d kB before, %d kB after", before, after)
}
