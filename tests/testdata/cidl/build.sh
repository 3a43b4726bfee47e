#!/usr/bin/env bash
# Builds OVS 3.1's own C IDL test driver, tests/test-ovsdb, from Debian's
# openvswitch-source tarball (Debian ships no libopenvswitch-dev), into a
# cache directory, once: later runs find it built and only print the path.
# Prints the unpacked source tree's directory on its last line of stdout.
# Needs: openvswitch-source, gcc, make, libc6-dev (build-essential), python3
# (ovsdb-idlc generates the IDL's C code). About 3 minutes on 2 busy cores.
set -euo pipefail

tarball=${GOVS_CIDL_TARBALL:-/usr/src/openvswitch/openvswitch.tar.gz}
cache=${GOVS_CIDL_CACHE:-/var/cache/govs-cidl}
if [ ! -f "$tarball" ]; then
	echo "build.sh: $tarball is missing: apt-get install openvswitch-source" >&2
	exit 1
fi
for tool in gcc make python3; do
	command -v "$tool" >/dev/null || { echo "build.sh: $tool is missing: apt-get install build-essential python3" >&2; exit 1; }
done
mkdir -p "$cache"
# One build at a time: concurrent test binaries wait for the first.
exec 9>"$cache/lock"
flock 9

# The tree is keyed by the tarball's checksum, so a new openvswitch-source
# gets a fresh build.
sum=$(sha256sum "$tarball" | cut -c1-16)
src=$cache/$sum/openvswitch
if [ ! -x "$src/tests/test-ovsdb" ]; then
	rm -rf "${cache:?}/$sum"
	mkdir -p "$cache/$sum"
	tar -C "$cache/$sum" -xzf "$tarball"
	log=$cache/$sum/build.log
	(
		cd "$src" &&
			# Only what test-ovsdb links: no SSL, libcap-ng, AF_XDP or
			# probes, so no -dev package beyond libc's. -O0: a test
			# driver needs no speed, and compiles several times faster.
			./configure -q --disable-ssl --disable-libcapng --disable-afxdp --disable-usdt-probes \
				--disable-dependency-tracking CFLAGS="-O0 -g0" &&
			# Generated headers (odp-netlink.h, the IDLs' C) first: automake
			# makes BUILT_SOURCES only for "all", and test-ovsdb needs them.
			echo 'govs-built-sources: $(BUILT_SOURCES)' | make -j2 -f Makefile -f - govs-built-sources &&
			make -j2 tests/test-ovsdb
	) >"$log" 2>&1 || {
		tail -40 "$log" >&2
		echo "build.sh: building test-ovsdb failed; full log: $log" >&2
		exit 1
	}
fi
echo "$src"
