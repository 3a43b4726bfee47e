package tests

import (
	"context"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// opsContainerScript runs inside a private mount and network namespace
// where Debian's Open vSwitch is masked: its programs under /dev/null, its
// directories under empty tmpfs. It starts "make run" in the copy given as
// $1 with the Makefile's default directories (private tmpfs here) and
// configures a bridge with the copy's own utilities only. Each step's
// output follows a "== step" line, for the test to check.
const opsContainerScript = `
set -e
src=$1
cd "$src"
mount -t sysfs sysfs /sys
for f in /usr/bin/ovs-* /usr/sbin/ovs-* /usr/bin/ovsdb-* /usr/sbin/ovsdb-* \
         /usr/local/bin/ovs* /usr/local/sbin/ovs*; do
	[ -e "$f" ] && mount --bind /dev/null "$f"
done
for d in /usr/lib/openvswitch* /usr/share/openvswitch /etc/openvswitch \
         /run/openvswitch /var/lib/openvswitch /var/log/openvswitch; do
	[ -d "$d" ] && mount -t tmpfs tmpfs "$d"
done
export PATH=/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
echo "== hidden"
for p in ovs-vsctl ovs-appctl ovs-ofctl ovs-dpctl ovsdb-client ovsdb-tool ovs-vswitchd ovsdb-server ovs-ctl; do
	command -v $p || true
done
find /usr/share/openvswitch /etc/openvswitch /var/run/openvswitch -mindepth 1
ip link set lo up
pidfile=/var/run/openvswitch/ovs-vswitchd.pid
stop() {
	if [ -s $pidfile ]; then
		pid=$(cat $pidfile)
		kill $pid 2>/dev/null || true
		while kill -0 $pid 2>/dev/null; do sleep 0.05; done
	fi
}
trap stop EXIT
echo "== build"
make build >build.log 2>&1 || { cat build.log; exit 1; }
make run >run.log 2>&1 &
# The daemon is up once its database answers (bounded by the test's deadline).
until bin/ovs-vsctl --timeout=1 show >/dev/null 2>&1; do
	kill -0 $! 2>/dev/null || { echo "make run exited:"; cat run.log; exit 1; }
	sleep 0.05
done
ip link add gvcv0 type veth peer name gvcv1
ip link set gvcv0 up
ip link set gvcv1 up
echo "== vsctl"
bin/ovs-vsctl --timeout=10 add-br br0 -- set Bridge br0 fail_mode=secure
bin/ovs-vsctl --timeout=10 add-port br0 gvcv0
bin/ovs-vsctl --timeout=10 add-port br0 gvci0 -- set Interface gvci0 type=internal
bin/ovs-vsctl --timeout=10 set Port gvcv0 tag=7 -- set Open_vSwitch . external_ids:container=yes
echo "== show"
bin/ovs-vsctl show
echo "== get"
bin/ovs-vsctl get Port gvcv0 tag
bin/ovs-vsctl get Interface gvcv0 ofport
echo "== dpif"
bin/ovs-appctl dpif/show
echo "== ofctl-show"
bin/ovs-ofctl show br0
echo "== ofctl-flows"
bin/ovs-ofctl add-flow br0 priority=100,in_port=gvcv0,actions=drop
bin/ovs-ofctl dump-flows br0
echo "== client"
bin/ovsdb-client dump Open_vSwitch Bridge name fail_mode
echo "== pidfile"
cat $pidfile
stop
echo "== stopped"
ls -A /var/run/openvswitch | grep pid || true
echo "== log"
cat /var/log/openvswitch/ovs-vswitchd.log
`

// TestOpsFreshContainer is issue 16's "fresh container-like directory":
// a copy of the committed source tree (git archive HEAD), on a machine
// whose Debian Open vSwitch is hidden, runs "make run" and is configured
// with govs' own bin/ utilities only.
func TestOpsFreshContainer(t *testing.T) {
	vswNeedRoot(t)
	for _, p := range []string{"unshare", "git", "make", "ip", "tar"} {
		if _, err := exec.LookPath(p); err != nil {
			t.Fatalf("%s is needed: %v", p, err)
		}
	}
	dir, err := os.MkdirTemp("", "gvscont")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	archive := exec.Command("sh", "-c", `git -C .. archive --format=tar HEAD | tar -x -C "$1"`, "sh", dir)
	if out, err := archive.CombinedOutput(); err != nil {
		t.Fatalf("git archive: %v\n%s", err, out)
	}

	// The build reuses the shared GOCACHE: -trimpath keeps the copy's
	// temporary path out of the cache keys. No network: GOPROXY=off.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "unshare", "--mount", "--net", "--propagation", "private",
		"sh", "-c", opsContainerScript, "sh", dir)
	cmd.Env = append(os.Environ(), "GOFLAGS=-trimpath -buildvcs=false", "GOPROXY=off")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// On a deadline the script's trap stops the switch by its pidfile.
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = 10 * time.Second
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if cmd.Process != nil {
		// Whatever the script left in its process group (the namespaces go
		// with their last process).
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	}
	steps := opsSteps(string(out))
	t.Logf("script took %v (build included)", time.Since(start).Round(time.Millisecond))
	if err != nil {
		t.Fatalf("script: %v\n%s", err, out)
	}
	check := func(step string, want ...string) {
		t.Helper()
		for _, w := range want {
			if !regexp.MustCompile(w).MatchString(steps[step]) {
				t.Errorf("%s: no match for %q in:\n%s", step, w, steps[step])
			}
		}
	}
	if steps["hidden"] != "" {
		t.Errorf("Debian's Open vSwitch still visible:\n%s", steps["hidden"])
	}
	check("show", `(?m)^    Bridge br0\n        fail_mode: secure$`, `(?m)^        Port gvcv0\n            tag: 7\n            Interface gvcv0$`,
		`(?m)^            Interface gvci0\n                type: internal$`)
	check("get", `^7\n[1-9][0-9]*\n$`)
	check("dpif", `(?m)^  br0:$`, `(?m)^    gvcv0 [0-9]+/[0-9]+: ?`, `(?m)^    gvci0 [0-9]+/[0-9]+: \(tap\)$`)
	check("ofctl-show", `^OFPT_FEATURES_REPLY`, `(?m)^ [0-9]+\(gvcv0\): addr:`, `(?m)^ LOCAL\(br0\): addr:`)
	check("ofctl-flows", `(?m)^ cookie=0x0, duration=[0-9.]+s, table=0, n_packets=[0-9]+, n_bytes=[0-9]+, idle_age=[0-9]+, priority=100,in_port=1 actions=drop$`)
	check("client", `(?m)^secure +br0$`)
	check("stopped", `^$`)
	check("log", `\|bridge\|INFO\|ovs-vswitchd \(Open vSwitch\) 3\.1\.0\n`)
	if t.Failed() {
		t.Logf("script output:\n%s", out)
	}
}

// opsSteps splits the script's output at its "== step" lines.
func opsSteps(out string) map[string]string {
	steps := map[string]string{}
	step := ""
	for _, l := range strings.SplitAfter(out, "\n") {
		if name, ok := strings.CutPrefix(l, "== "); ok {
			step = strings.TrimSpace(name)
			continue
		}
		steps[step] += l
	}
	return steps
}
