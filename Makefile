# govs: an Open vSwitch–compatible switch in Go.
GO ?= go
BIN := bin
OVS_RUNDIR ?= /var/run/openvswitch
OVS_DBDIR ?= /etc/openvswitch
OVS_LOGDIR ?= /var/log/openvswitch
FUZZTIME ?= 30s
# make install: daemons into SBINDIR, utilities into BINDIR, under DESTDIR.
PREFIX ?= /usr/local
SBINDIR ?= $(PREFIX)/sbin
BINDIR ?= $(PREFIX)/bin
UTILITIES := $(filter-out internal,$(notdir $(wildcard utilities/*)))

.PHONY: all build install test cidl chaos run bench fuzz generate check-generate vet clean

all: build

# ovsdb-server is built without cgo: linked statically it maps no libc,
# 1.3 MB less RSS (tests/bench/ovn.sh), and it needs nothing from C.
build:
	CGO_ENABLED=0 $(GO) build -o $(BIN)/ovsdb-server ./ovsdb
	$(GO) build -o $(BIN)/ovs-vswitchd ./vswitchd
	$(GO) build -o $(BIN)/ ./utilities/...

# Where Debian's scripts look for Open vSwitch: PREFIX=/usr/local (the
# default) comes first in root's PATH, so ovs-ctl finds govs there and
# Debian's package files stay untouched; PREFIX=/usr replaces them.
install: build
	install -d $(DESTDIR)$(SBINDIR) $(DESTDIR)$(BINDIR)
	install -m 0755 $(BIN)/ovs-vswitchd $(BIN)/ovsdb-server $(DESTDIR)$(SBINDIR)/
	install -m 0755 $(addprefix $(BIN)/,$(UTILITIES)) $(DESTDIR)$(BINDIR)/

# The whole suite, end-to-end tests in network namespaces included: run as root.
test: build check-generate vet cidl
	$(GO) test -count=1 -timeout 18m ./...
	$(GO) test -race -count=1 -timeout 8m ./datapath/... ./netdev/... ./ovsdb/... ./vswitchd/... ./internal/... ./schema/...
	GOVS_TEST_OVSDB=debian $(GO) test -count=1 -timeout 5m -run '^TestVswitchd' -skip '$(DEBIAN_OVSDB_SKIP)' ./tests/

# OVS's own C IDL test driver (tests/test-ovsdb), built once from Debian's
# openvswitch-source into /var/cache/govs-cidl for tests/ovsdb_idlat_test.go,
# before the suite's timeout starts counting.
cidl:
	bash tests/testdata/cidl/build.sh >/dev/null

# Left out of the Debian-ovsdb pass, as they would only run again what the
# first pass ran: EmbeddedDB starts no ovsdb-server, SSL and SSLRow run
# against both servers already, and the spanning-tree, LACP, bond,
# vhost-user, QoS and set_queue, BPDU-flood, socket-buffer and memory tests
# exercise the datapath for seconds each with no more database traffic
# than the tests kept (keeps `make test` under its 20 minutes).
DEBIAN_OVSDB_SKIP := ^TestVswitchd(EmbeddedDB|SSL|SSLRow|STP.*|RSTP.*|LACP.*|Bond.*|Vhost.*|QoS|QueueQoS|IngressPolicing|HostileBPDU|SockBufLive|PortChurnMemory)$$

# The chaos suite (tests/chaos_*_test.go) at full counts, as root; make test
# runs its quick counts. Prints every test's figures at the end.
chaos: build
	@mkdir -p $(BIN); ( GOVS_CHAOS=full $(GO) test -count=1 -timeout 40m -v -run '^TestChaos' ./tests/; echo $$? >$(BIN)/chaos.rc ) 2>&1 | tee $(BIN)/chaos.log
	@echo; echo "== chaos figures"; sed -n 's/^.*\(chaos: \)/\1/p' $(BIN)/chaos.log; exit $$(cat $(BIN)/chaos.rc)

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	@$(GO) mod tidy -diff >/dev/null || { $(GO) mod tidy -diff; echo "go.mod/go.sum are not tidy: run go mod tidy"; exit 1; }

# Runs the switch with its embedded database, in the foreground, logging
# where OVS does too.
run: build
	mkdir -p $(OVS_RUNDIR) $(OVS_DBDIR) $(OVS_LOGDIR)
	OVS_RUNDIR=$(OVS_RUNDIR) OVS_DBDIR=$(OVS_DBDIR) OVS_LOGDIR=$(OVS_LOGDIR) $(BIN)/ovs-vswitchd --embedded-db --pidfile --log-file

bench: build
	./tests/bench/run.sh

# Runs every fuzz target for FUZZTIME each.
fuzz:
	@for pkg in $$($(GO) list ./...); do \
	  for f in $$($(GO) test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz'); do \
	    echo "== $$pkg $$f"; $(GO) test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) $$pkg || exit 1; \
	  done; \
	done

generate:
	$(GO) generate ./schema/

# Regenerating the models must not change them.
check-generate:
	@$(GO) generate ./schema/ && git diff --quiet --exit-code -- schema/ || { echo "schema: generated models are stale; run make generate"; git diff --stat -- schema/; exit 1; }

clean:
	rm -rf $(BIN)
