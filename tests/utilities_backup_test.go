package tests

import (
	"bytes"
	"crypto/sha1"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// regexpDate matches the time ovsdb-tool show-log prints for a record.
var regexpDate = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}`)

// backupRecords splits a database file into its records' JSON, with each
// transaction's "_date" dropped (it is the time of the backup).
func backupRecords(t *testing.T, data []byte) []any {
	t.Helper()
	var out []any
	for len(data) > 0 {
		line, rest, ok := bytes.Cut(data, []byte("\n"))
		f := strings.Fields(string(line))
		if !ok || len(f) != 4 || f[0] != "OVSDB" || f[1] != "JSON" {
			t.Fatalf("bad record header %q", line)
		}
		n, err := strconv.Atoi(f[2])
		if err != nil || n > len(rest) {
			t.Fatalf("bad record length in %q", line)
		}
		if got := fmt.Sprintf("%x", sha1.Sum(rest[:n])); got != f[3] {
			t.Fatalf("record %q has SHA-1 %s", line, got)
		}
		var v any
		if err := json.Unmarshal(rest[:n], &v); err != nil {
			t.Fatalf("record %q: %v", line, err)
		}
		if m, ok := v.(map[string]any); ok && len(out) > 0 {
			delete(m, "_date")
		}
		out = append(out, v)
		data = rest[n:]
	}
	return out
}

// frameRecord frames body as a database file record.
func frameRecord(body string) string {
	body += "\n"
	return fmt.Sprintf("OVSDB JSON %d %x\n%s", len(body), sha1.Sum([]byte(body)), body)
}

// runStdin runs a tool with stdin from a file.
func runStdin(stdin string, name string, args ...string) ovsdbResult {
	f, err := os.Open(stdin)
	if err != nil {
		return ovsdbResult{stderr: err.Error(), code: -1}
	}
	defer f.Close()
	cmd := exec.Command(name, args...)
	cmd.Stdin = f
	return ovsdbRunCmd(cmd)
}

// TestUtilitiesClientBackup runs backup and restore with Debian's
// ovsdb-client and govs' against the same server, Debian's and govs': the
// two backups hold the same schema and rows (same UUIDs: same server) and
// Debian's ovsdb-tool reads ours; restoring a backup with either tool gives
// the same database; and both refuse the same broken or mismatched backups
// with the same words and exit status.
func TestUtilitiesClientBackup(t *testing.T) {
	ours := govsUtility(t, "ovsdb-client")
	for _, kind := range []string{"debian", "govs"} {
		p := ovsdbStart(t, ovsdbOpts{kind: kind})
		p.mustVsctl("add-br", "br0", "--", "add-port", "br0", "p1", "--", "set", "Port", "p1", "tag=5", "trunks=1,2",
			"--", "set", "Interface", "p1", "options:remote_ip=\"1.2.3.4\"", "--", "set-manager", "ptcp:1:127.0.0.1",
			"--", "set", "Bridge", "br0", "status:x=y")
		db := "unix:" + p.sock
		dir := t.TempDir()
		files := map[string]string{}
		var recs [2][]any
		for j, tool := range []string{ovsdbClient, ours} {
			f := filepath.Join(dir, fmt.Sprintf("backup%d", j))
			out, err := os.Create(f)
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(tool, "backup", db)
			var e bytes.Buffer
			cmd.Stdout, cmd.Stderr = out, &e
			err = cmd.Run()
			out.Close()
			if err != nil || e.Len() > 0 {
				t.Fatalf("%s server: %s backup: %v\n%s", kind, tool, err, e.String())
			}
			data, _ := os.ReadFile(f)
			recs[j] = backupRecords(t, data)
			files[tool] = f
		}
		if len(recs[1]) != 2 || !reflect.DeepEqual(recs[0], recs[1]) {
			t.Errorf("%s server: backups differ\ndebian's: %v\ngovs': %v", kind, recs[0], recs[1])
		}
		// Debian's ovsdb-tool reads ours as it reads Debian's.
		for _, args := range [][]string{{"show-log"}, {"db-version"}, {"db-cksum"},
			{"query", "", `["Open_vSwitch",{"op":"select","table":"Port","where":[],"columns":["name","tag","trunks"]}]`}} {
			var res [2]ovsdbResult
			for j, tool := range []string{ovsdbClient, ours} {
				a := append([]string{args[0], files[tool]}, args[1:]...)
				if len(a) > 2 && a[2] == "" {
					a = append(a[:2], a[3:]...)
				}
				r := ovsdbRun(ovsdbTool, a...)
				r.stdout = regexpDate.ReplaceAllString(r.stdout, "<date>")
				res[j] = r
			}
			if res[0] != res[1] || res[1].code != 0 {
				t.Errorf("%s server: ovsdb-tool %s on the backups differs\ndebian's: %+v\ngovs': %+v", kind, args[0], res[0], res[1])
			}
		}

		// Restoring: each tool from Debian's backup, after a change.
		var dumps [2]string
		for j, tool := range []string{ovsdbClient, ours} {
			p.mustVsctl("add-br", fmt.Sprintf("brx%d", j), "--", "del-port", "p1")
			r := runStdin(files[ovsdbClient], tool, "restore", db)
			if r.code != 0 || r.stderr != "" || r.stdout != "" {
				t.Errorf("%s server: %s restore: %+v", kind, tool, r)
			}
			d := p.client("dump", db)
			dumps[j] = ovsdbNormalize(d.stdout, false)
		}
		if dumps[0] != dumps[1] {
			t.Errorf("%s server: restored databases differ\ndebian's:\n%s\ngovs':\n%s", kind, dumps[0], dumps[1])
		}

		// Refusals.
		data, _ := os.ReadFile(files[ovsdbClient])
		parts := bytes.SplitN(data, []byte("\n"), 4)
		schema, txn := string(parts[1]), string(parts[3])
		var sch map[string]any
		json.Unmarshal(parts[1], &sch)
		sch["version"] = "8.3.99"
		otherVersion, _ := json.Marshal(sch)
		sch["version"] = "8.3.1"
		sch["tables"].(map[string]any)["Bridge"].(map[string]any)["columns"].(map[string]any)["zz"] = map[string]any{"type": "string"}
		sameVersion, _ := json.Marshal(sch)
		inputs := []struct{ name, data string }{
			{"empty", ""},
			{"garbage", "hello\n"},
			{"bad-first-header", "OVSDB JSON zz\n" + schema + "\n"},
			{"torn", string(data[:len(data)-100])},
			{"bad-hash", strings.Replace(string(data), `"br0"`, `"brX"`, 1)},
			{"bad-header", frameRecord(schema) + "OVSDB JSON zz\n{}\n"},
			{"not-object", frameRecord(schema) + frameRecord("[1,2]")},
			{"other-version", frameRecord(string(otherVersion)) + string(parts[2]) + "\n" + txn},
			{"same-version", frameRecord(string(sameVersion)) + string(parts[2]) + "\n" + txn},
			{"schema-only", frameRecord(schema)},
			{"database-file", ""},
		}
		for _, in := range inputs {
			f := filepath.Join(dir, in.name)
			if in.name == "database-file" {
				f = p.db
			} else if err := os.WriteFile(f, []byte(in.data), 0o644); err != nil {
				t.Fatal(err)
			}
			for _, args := range [][]string{{"restore", db}, {"--force", "restore", db}, {"restore", db, "_Server"}} {
				if args[0] == "--force" && !strings.HasSuffix(in.name, "version") {
					continue
				}
				if args[len(args)-1] == "_Server" && in.name != "schema-only" {
					continue
				}
				var res [2]ovsdbResult
				for j, tool := range []string{ovsdbClient, ours} {
					r := runStdin(f, tool, args...)
					r.stderr = ovsdbNormalizeLog(r.stderr)
					res[j] = r
				}
				if res[0] != res[1] {
					t.Errorf("%s server: ovsdb-client %s < %s differs\ndebian's: %+v\ngovs': %+v",
						kind, strings.Join(args, " "), in.name, res[0], res[1])
				}
			}
		}
	}
}
