// Command ovsdbbench measures an OVSDB server over raw JSON-RPC on its unix
// socket: transactions per second from 1 and 10 concurrent clients (each
// waits for its reply; a transaction mutates a map column of the
// Open_vSwitch row and carries a comment, like "ovs-vsctl --no-wait set"),
// the same with durable commits, the server's CPU time per transaction
// (user+system, from /proc: robust on a loaded machine, where the rates
// swing with the neighbours), one idle client's transaction round trip, and
// the time until 1, 10 and 100 monitoring clients have all seen a change
// with the server's CPU time per such change.
// It starts Debian's ovsdb-server and govs' side by side and prints each
// figure with the ratio govs/Debian (Debian/govs for times). The servers
// take turns throughout (throughput in alternating slices, the idle and
// monitor figures sample by sample), so that the machine's drift, which
// moves one server's run against the other's by 20-30%, falls on both.
//
//	go run ./tests/bench/ovsdbbench -govs bin/ovsdb-server [-secs 3]
//	taskset -c 1 go run ./tests/bench/ovsdbbench -govs bin/ovsdb-server -server-cpus 0
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/govs/govs/ovsdb/jsonrpc"
)

var (
	govsBin   = flag.String("govs", "bin/ovsdb-server", "govs' ovsdb-server binary")
	debianBin = flag.String("debian", "/usr/sbin/ovsdb-server", "Debian's ovsdb-server binary")
	schema    = flag.String("schema", "/usr/share/openvswitch/vswitch.ovsschema", "schema for Debian's database")
	secs      = flag.Float64("secs", 3, "seconds per throughput measurement")
	monitors  = flag.String("monitors", "1,10,100", "monitoring clients for the latency figures (comma-separated counts)")
	rounds    = flag.Int("rounds", 30, "changes for the latency figure (median reported)")
	srvCPUs   = flag.String("server-cpus", "", "run both servers on these CPUs (taskset -c LIST); run the benchmark itself on the others to keep the clients off the servers' cores")
)

type server struct {
	name, dir, sock, pidfile string
}

func start(name, bin string) (*server, error) {
	dir, err := os.MkdirTemp("", "ovsdbbench-"+name+"-")
	if err != nil {
		return nil, err
	}
	s := &server{name: name, dir: dir, sock: filepath.Join(dir, "db.sock"), pidfile: filepath.Join(dir, "pid")}
	db := filepath.Join(dir, "conf.db")
	if name == "debian" {
		if out, err := exec.Command("ovsdb-tool", "create", db, *schema).CombinedOutput(); err != nil {
			return nil, fmt.Errorf("ovsdb-tool create: %v: %s", err, out)
		}
	}
	args := []string{bin, db, "--remote=punix:" + s.sock, "--pidfile=" + s.pidfile,
		"--unixctl=" + filepath.Join(dir, "ctl"), "--log-file=" + filepath.Join(dir, "log"), "--detach", "--no-chdir", "-vconsole:off"}
	if *srvCPUs != "" {
		args = append([]string{"taskset", "-c", *srvCPUs}, args...)
	}
	cmd := exec.Command(args[0], args[1:]...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s: %v: %s", bin, err, out)
	}
	if out, err := exec.Command("ovs-vsctl", "--db=unix:"+s.sock, "--no-wait", "init").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("ovs-vsctl init: %v: %s", err, out)
	}
	return s, nil
}

// cpu returns the server's user+system CPU time so far.
func (s *server) cpu() time.Duration {
	b, _ := os.ReadFile(s.pidfile)
	stat, err := os.ReadFile("/proc/" + strings.TrimSpace(string(b)) + "/stat")
	if err != nil {
		return 0
	}
	// Fields after the command's closing parenthesis; utime and stime are
	// the 14th and 15th fields of the line, in clock ticks (100 Hz).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+st) * 10 * time.Millisecond
}

// threadsCPU returns the CPU time of the server's threads so far, to the
// nanosecond (/proc/PID/task/*/schedstat): a change seen by 100 monitors
// costs a server a fraction of cpu's 10 ms tick.
func (s *server) threadsCPU() time.Duration {
	b, _ := os.ReadFile(s.pidfile)
	stats, _ := filepath.Glob("/proc/" + strings.TrimSpace(string(b)) + "/task/*/schedstat")
	var t time.Duration
	for _, f := range stats {
		st, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if ns, err := strconv.ParseInt(strings.Fields(string(st))[0], 10, 64); err == nil {
			t += time.Duration(ns)
		}
	}
	return t
}

func (s *server) stop() {
	b, _ := os.ReadFile(s.pidfile)
	if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
		syscall.Kill(pid, syscall.SIGTERM)
		for i := 0; i < 500 && syscall.Kill(pid, 0) == nil; i++ {
			time.Sleep(10 * time.Millisecond)
		}
	}
	os.RemoveAll(s.dir)
}

type client struct {
	c   net.Conn
	dec *jsonrpc.Decoder
	id  int
}

func dial(sock string) (*client, error) {
	c, err := net.Dial("unix", sock)
	if err != nil {
		return nil, err
	}
	return &client{c: c, dec: jsonrpc.NewDecoder(c, 0)}, nil
}

// call sends a request and waits for its reply, skipping notifications.
func (c *client) call(method string, params string) (*jsonrpc.Message, error) {
	c.id++
	req := &jsonrpc.Message{Method: method, Params: json.RawMessage(params), ID: json.RawMessage(strconv.Itoa(c.id))}
	if _, err := c.c.Write(req.Append(nil)); err != nil {
		return nil, err
	}
	for {
		m, err := c.dec.Decode()
		if err != nil {
			return nil, err
		}
		if m.Type() == jsonrpc.Reply || m.Type() == jsonrpc.Error {
			if m.Error != nil {
				return nil, fmt.Errorf("%s: %s", method, m.Error)
			}
			return m, nil
		}
	}
}

func txnParams(client, i int, durable bool) string {
	ops := fmt.Sprintf(`["Open_vSwitch",{"op":"mutate","table":"Open_vSwitch","where":[],"mutations":[["external_ids","delete",["set",["bench%d"]]],["external_ids","insert",["map",[["bench%d","%d"]]]]]}`, client, client, i)
	if durable {
		ops += `,{"op":"commit","durable":true}`
	}
	return ops + `,{"op":"comment","comment":"ovsdbbench"}]`
}

// slices is how many alternating slices each throughput figure is taken
// in: the servers take turns, so that the machine's drift over the
// measurement falls on both alike.
const slices = 6

// throughputs runs n clients against each server in turn, slices times
// for *secs/slices seconds each, and returns each server's transactions/s
// and CPU time per transaction over its slices.
func throughputs(servers []*server, n int, durable bool) ([]float64, []time.Duration, error) {
	total := make([]int64, len(servers))
	elapsed := make([]time.Duration, len(servers))
	cpu := make([]time.Duration, len(servers))
	for k := 0; k < slices; k++ {
		for j := range servers {
			i := j
			if k%2 == 1 {
				i = len(servers) - 1 - j
			}
			t, d, c, err := throughput(servers[i], n, durable, time.Duration(*secs*float64(time.Second))/slices)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", servers[i].name, err)
			}
			total[i] += t
			elapsed[i] += d
			cpu[i] += c
		}
	}
	rates := make([]float64, len(servers))
	perTxn := make([]time.Duration, len(servers))
	for i := range servers {
		rates[i] = float64(total[i]) / elapsed[i].Seconds()
		perTxn[i] = cpu[i] / time.Duration(max(total[i], 1))
	}
	return rates, perTxn, nil
}

// throughput runs n clients for d and returns the transactions they made,
// the time it took and the server's CPU time over it.
func throughput(s *server, n int, durable bool, d time.Duration) (int64, time.Duration, time.Duration, error) {
	var total atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	var clients []*client
	for k := 0; k < n; k++ {
		c, err := dial(s.sock)
		if err != nil {
			return 0, 0, 0, err
		}
		clients = append(clients, c)
	}
	deadline := time.Now().Add(d)
	start := time.Now()
	cpu0 := s.cpu()
	for k, c := range clients {
		wg.Add(1)
		go func(k int, c *client) {
			defer wg.Done()
			defer c.c.Close()
			for i := 0; time.Now().Before(deadline); i++ {
				m, err := c.call("transact", txnParams(k, i, durable))
				if err == nil && strings.Contains(string(m.Result), `"error"`) {
					err = fmt.Errorf("transaction failed: %s", m.Result)
				}
				if err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
				total.Add(1)
			}
		}(k, c)
	}
	wg.Wait()
	return total.Load(), time.Since(start), s.cpu() - cpu0, firstErr
}

// idles returns, for each server, the median round trip of one client's
// transaction on an otherwise idle server, the client pausing between
// transactions (as a user's ovs-vsctl does), so that every request finds
// the server asleep. The servers take turns, sample by sample.
func idles(servers []*server) ([]time.Duration, error) {
	var clients []*client
	defer func() {
		for _, c := range clients {
			c.c.Close()
		}
	}()
	for _, s := range servers {
		c, err := dial(s.sock)
		if err != nil {
			return nil, err
		}
		clients = append(clients, c)
	}
	samples := make([][]time.Duration, len(servers))
	for r := 0; r < *rounds; r++ {
		for i, c := range clients {
			time.Sleep(5 * time.Millisecond)
			t0 := time.Now()
			if _, err := c.call("transact", txnParams(998, r, false)); err != nil {
				return nil, fmt.Errorf("%s: %w", servers[i].name, err)
			}
			samples[i] = append(samples[i], time.Since(t0))
		}
	}
	return medians(samples), nil
}

func medians(samples [][]time.Duration) []time.Duration {
	out := make([]time.Duration, len(samples))
	for i, v := range samples {
		sort.Slice(v, func(a, b int) bool { return v[a] < v[b] })
		out[i] = v[len(v)/2]
	}
	return out
}

// monitored is one server's monitoring clients and the client that
// changes what they monitor.
type monitored struct {
	clients []*client
	w       *client
}

func (m *monitored) close() {
	for _, c := range m.clients {
		c.c.Close()
	}
	if m.w != nil {
		m.w.c.Close()
	}
}

// watch connects n monitoring clients and a writer to s.
func watch(s *server, n int) (*monitored, error) {
	m := &monitored{}
	for i := 0; i < n; i++ {
		c, err := dial(s.sock)
		if err != nil {
			return m, err
		}
		m.clients = append(m.clients, c)
		if _, err := c.call("monitor_cond", `["Open_vSwitch",["m"],{"Open_vSwitch":[{"columns":["external_ids"]}]}]`); err != nil {
			return m, err
		}
	}
	w, err := dial(s.sock)
	if err != nil {
		return m, err
	}
	m.w = w
	return m, nil
}

// change makes change r and returns the time until every monitoring
// client has received it.
func (m *monitored) change(r int) (time.Duration, error) {
	var wg sync.WaitGroup
	errs := make(chan error, len(m.clients))
	for _, c := range m.clients {
		wg.Add(1)
		go func(c *client) {
			defer wg.Done()
			c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			for {
				msg, err := c.dec.Decode()
				if err != nil {
					errs <- err
					return
				}
				if msg.Method == "update2" {
					return
				}
			}
		}(c)
	}
	t0 := time.Now()
	if _, err := m.w.call("transact", txnParams(999, r, false)); err != nil {
		return 0, err
	}
	wg.Wait()
	d := time.Since(t0)
	select {
	case err := <-errs:
		return 0, err
	default:
	}
	return d, nil
}

// latencies returns, for each server, the median time from sending a
// change until all n monitoring clients have received it, and the server's
// CPU time per change (its threads', over all its changes, which include
// the writer's transaction). The servers take turns, change by change.
func latencies(servers []*server, n int) ([]time.Duration, []time.Duration, error) {
	var ms []*monitored
	defer func() {
		for _, m := range ms {
			m.close()
		}
	}()
	for _, s := range servers {
		m, err := watch(s, n)
		ms = append(ms, m)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", s.name, err)
		}
	}
	samples := make([][]time.Duration, len(servers))
	cpu := make([]time.Duration, len(servers))
	for r := 0; r < *rounds; r++ {
		for i, m := range ms {
			c0 := servers[i].threadsCPU()
			d, err := m.change(r)
			if err != nil {
				return nil, nil, fmt.Errorf("%s: %w", servers[i].name, err)
			}
			cpu[i] += servers[i].threadsCPU() - c0
			samples[i] = append(samples[i], d)
		}
	}
	for i := range cpu {
		cpu[i] /= time.Duration(*rounds)
	}
	return medians(samples), cpu, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1000 }

func main() {
	flag.Parse()
	if _, err := os.Stat(*govsBin); err != nil {
		fmt.Fprintf(os.Stderr, "ovsdbbench: %v (build it: go build -o bin/ovsdb-server ./ovsdb)\n", err)
		os.Exit(1)
	}
	servers := []*server{}
	for _, x := range []struct{ name, bin string }{{"debian", *debianBin}, {"govs", *govsBin}} {
		s, err := start(x.name, x.bin)
		if err != nil {
			fmt.Fprintf(os.Stderr, "ovsdbbench: starting %s: %v\n", x.name, err)
			for _, s := range servers {
				s.stop()
			}
			os.Exit(1)
		}
		servers = append(servers, s)
	}
	defer func() {
		for _, s := range servers {
			s.stop()
		}
	}()
	fmt.Printf("%-34s %12s %12s %8s\n", "measurement", "debian", "govs", "govs/deb")
	fail := func(err error) {
		fmt.Fprintf(os.Stderr, "ovsdbbench: %v\n", err)
		for _, s := range servers {
			s.stop()
		}
		os.Exit(1)
	}
	for _, tc := range []struct {
		name    string
		n       int
		durable bool
	}{{"txn/s, 1 client", 1, false}, {"txn/s, 10 clients", 10, false},
		{"txn/s, 1 client, durable", 1, true}, {"txn/s, 10 clients, durable", 10, true}} {
		v, cpu, err := throughputs(servers, tc.n, tc.durable)
		if err != nil {
			fail(fmt.Errorf("%s: %w", tc.name, err))
		}
		fmt.Printf("%-34s %12.0f %12.0f %8.2f\n", tc.name, v[0], v[1], v[1]/v[0])
		if !tc.durable {
			fmt.Printf("%-34s %12.1f %12.1f %8.2f\n", "server CPU us/txn, "+strings.TrimPrefix(tc.name, "txn/s, "),
				us(cpu[0]), us(cpu[1]), float64(cpu[0])/float64(max(cpu[1], 1)))
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", us(d)/1000) }
	l, err := idles(servers)
	if err != nil {
		fail(fmt.Errorf("idle client: %w", err))
	}
	fmt.Printf("%-34s %12s %12s %8.2f\n", "ms per txn, idle client", ms(l[0]), ms(l[1]), float64(l[0])/float64(l[1]))
	for _, f := range strings.Split(*monitors, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-monitors: %q is not a count", f))
		}
		l, cpu, err := latencies(servers, n)
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) {
				err = fmt.Errorf("%w: monitors did not all see the change within 10 s", err)
			}
			fail(fmt.Errorf("latency: %w", err))
		}
		fmt.Printf("%-34s %12s %12s %8.2f\n", fmt.Sprintf("ms until %d monitors see a change", n),
			ms(l[0]), ms(l[1]), float64(l[0])/float64(l[1]))
		fmt.Printf("%-34s %12.0f %12.0f %8.2f\n", fmt.Sprintf("server CPU us per change, %d mon.", n),
			us(cpu[0]), us(cpu[1]), float64(cpu[0])/float64(max(cpu[1], 1)))
	}
	fmt.Println("(ratios above 1 favour govs; for CPU and times the ratio is debian/govs)")
}
