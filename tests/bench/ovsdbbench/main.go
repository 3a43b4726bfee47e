// Command ovsdbbench measures an OVSDB server over raw JSON-RPC on its unix
// socket: transactions per second from 1 and 10 concurrent clients (each
// waits for its reply; a transaction mutates a map column of the
// Open_vSwitch row and carries a comment, like "ovs-vsctl --no-wait set"),
// the same with durable commits, the server's CPU time per transaction
// (user+system, from /proc: robust on a loaded machine, where the rates
// swing with the neighbours), one idle client's transaction round trip, and
// the time until 1, 10 and 100 monitoring clients have all seen a change.
// It starts Debian's ovsdb-server and govs' side by side and prints each
// figure with the ratio govs/Debian (Debian/govs for times).
//
//	go run ./tests/bench/ovsdbbench -govs bin/ovsdb-server [-secs 3]
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
	cmd := exec.Command(bin, db, "--remote=punix:"+s.sock, "--pidfile="+s.pidfile,
		"--unixctl="+filepath.Join(dir, "ctl"), "--log-file="+filepath.Join(dir, "log"), "--detach", "--no-chdir", "-vconsole:off")
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

// throughput runs n clients for *secs seconds and returns transactions/s
// and the server's CPU time per transaction.
func throughput(s *server, n int, durable bool) (float64, time.Duration, error) {
	var total atomic.Int64
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	deadline := time.Now().Add(time.Duration(*secs * float64(time.Second)))
	start := time.Now()
	cpu0 := s.cpu()
	for k := 0; k < n; k++ {
		c, err := dial(s.sock)
		if err != nil {
			return 0, 0, err
		}
		wg.Add(1)
		go func(k int) {
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
		}(k)
	}
	wg.Wait()
	cpu := s.cpu() - cpu0
	n64 := max(total.Load(), 1)
	return float64(total.Load()) / time.Since(start).Seconds(), cpu / time.Duration(n64), firstErr
}

// idle returns the median round trip of one client's transaction on an
// otherwise idle server, the client pausing between transactions (as a
// user's ovs-vsctl does), so that every request finds the server asleep.
func idle(s *server) (time.Duration, error) {
	c, err := dial(s.sock)
	if err != nil {
		return 0, err
	}
	defer c.c.Close()
	var samples []time.Duration
	for i := 0; i < *rounds; i++ {
		time.Sleep(5 * time.Millisecond)
		t0 := time.Now()
		if _, err := c.call("transact", txnParams(998, i, false)); err != nil {
			return 0, err
		}
		samples = append(samples, time.Since(t0))
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return samples[len(samples)/2], nil
}

// latency returns the median time from sending a change until all n
// monitoring clients have received it.
func latency(s *server, n int) (time.Duration, error) {
	var clients []*client
	defer func() {
		for _, c := range clients {
			c.c.Close()
		}
	}()
	for i := 0; i < n; i++ {
		c, err := dial(s.sock)
		if err != nil {
			return 0, err
		}
		clients = append(clients, c)
		if _, err := c.call("monitor_cond", `["Open_vSwitch",["m"],{"Open_vSwitch":[{"columns":["external_ids"]}]}]`); err != nil {
			return 0, err
		}
	}
	w, err := dial(s.sock)
	if err != nil {
		return 0, err
	}
	defer w.c.Close()
	var samples []time.Duration
	for r := 0; r < *rounds; r++ {
		var wg sync.WaitGroup
		errs := make(chan error, len(clients))
		for _, c := range clients {
			wg.Add(1)
			go func(c *client) {
				defer wg.Done()
				c.c.SetReadDeadline(time.Now().Add(10 * time.Second))
				for {
					m, err := c.dec.Decode()
					if err != nil {
						errs <- err
						return
					}
					if m.Method == "update2" {
						return
					}
				}
			}(c)
		}
		t0 := time.Now()
		if _, err := w.call("transact", txnParams(999, r, false)); err != nil {
			return 0, err
		}
		wg.Wait()
		samples = append(samples, time.Since(t0))
		select {
		case err := <-errs:
			return 0, err
		default:
		}
	}
	sort.Slice(samples, func(i, j int) bool { return samples[i] < samples[j] })
	return samples[len(samples)/2], nil
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
		var v [2]float64
		var cpu [2]time.Duration
		for i, s := range servers {
			r, c, err := throughput(s, tc.n, tc.durable)
			if err != nil {
				fail(fmt.Errorf("%s %s: %w", s.name, tc.name, err))
			}
			v[i], cpu[i] = r, c
		}
		fmt.Printf("%-34s %12.0f %12.0f %8.2f\n", tc.name, v[0], v[1], v[1]/v[0])
		if !tc.durable {
			fmt.Printf("%-34s %12.1f %12.1f %8.2f\n", "server CPU us/txn, "+strings.TrimPrefix(tc.name, "txn/s, "),
				us(cpu[0]), us(cpu[1]), float64(cpu[0])/float64(max(cpu[1], 1)))
		}
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2f", us(d)/1000) }
	var l [2]time.Duration
	for i, s := range servers {
		d, err := idle(s)
		if err != nil {
			fail(fmt.Errorf("%s idle client: %w", s.name, err))
		}
		l[i] = d
	}
	fmt.Printf("%-34s %12s %12s %8.2f\n", "ms per txn, idle client", ms(l[0]), ms(l[1]), float64(l[0])/float64(l[1]))
	for _, f := range strings.Split(*monitors, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			fail(fmt.Errorf("-monitors: %q is not a count", f))
		}
		for i, s := range servers {
			d, err := latency(s, n)
			if err != nil {
				if errors.Is(err, os.ErrDeadlineExceeded) {
					err = fmt.Errorf("monitors did not all see the change within 10 s")
				}
				fail(fmt.Errorf("%s latency: %w", s.name, err))
			}
			l[i] = d
		}
		fmt.Printf("%-34s %12s %12s %8.2f\n", fmt.Sprintf("ms until %d monitors see a change", n),
			ms(l[0]), ms(l[1]), float64(l[0])/float64(l[1]))
	}
	fmt.Println("(ratios above 1 favour govs; for CPU and times the ratio is debian/govs)")
}
