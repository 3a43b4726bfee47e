package main

import (
	"bufio"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// dropStartupPages lets go of the pages of the server's own binary that
// start-up mapped: package initialisation (crypto/tls and x509's tables
// among them), flag parsing and schema loading touch code and data that
// serving never runs, and the kernel maps their neighbours too (fault-around),
// so that 5.6 MB of the 9.8 MB binary stayed resident in every idle server.
// The pages are the binary file's, read-only and clean: dropping them
// (MADV_DONTNEED) is what the kernel does under memory pressure, and those
// the server uses again come back from the page cache on their first use
// (a minor fault). Mappings that were written (data, bss, relocated
// read-only data) are kept.
func dropStartupPages() {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return
	}
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		return
	}
	defer f.Close()
	var start, end uint64
	candidate := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		fs := strings.Fields(line)
		if len(fs) == 0 {
			continue
		}
		if lo, hi, ok := strings.Cut(fs[0], "-"); ok && len(fs) >= 5 {
			// A mapping: 00400000-00719000 r-xp 00000000 08:01 1234 /usr/sbin/ovsdb-server
			start, err = strconv.ParseUint(lo, 16, 64)
			e, err2 := strconv.ParseUint(hi, 16, 64)
			end = e
			candidate = err == nil && err2 == nil && end > start && len(fs) >= 6 && fs[5] == exe &&
				len(fs[1]) == 4 && fs[1][1] != 'w' && fs[1][3] == 'p'
			continue
		}
		// Only mappings that hold no private copies of their pages
		// (a read-only mapping that was written before it was made
		// read-only, as relocations are): those would be lost.
		if candidate && fs[0] == "Anonymous:" {
			candidate = false
			if len(fs) >= 2 && fs[1] == "0" {
				unix.Syscall(unix.SYS_MADVISE, uintptr(start), uintptr(end-start), unix.MADV_DONTNEED)
			}
		}
	}
}
