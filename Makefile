# gpufabric.rdma — development entry points. `make help` lists them.
SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
COLLECTIONS := $(CURDIR)/build/collections
COLLECTION_LINK := $(COLLECTIONS)/ansible_collections/gpufabric/rdma
LAB_INVENTORY := inventories/lab

# Every tool below runs from the venv and sees this checkout as gpufabric.rdma.
export PATH := $(BIN):$(PATH)
export ANSIBLE_COLLECTIONS_PATH := $(COLLECTIONS)
export ANSIBLE_CONFIG := $(CURDIR)/ansible.cfg
export ANSIBLE_FORCE_COLOR ?= 0
export PY_COLORS ?= 0

.PHONY: help venv collection docker image lab-image lab lab-destroy lab-check test unit sanity lint yamllint build docs molecule bench bench-fleet changelog clean ee-context prometheus-tools

help:
	@echo "make lab          set everything up, start the 2-node container lab, run playbooks/site.yml and burnin.yml"
	@echo "make test         every test: unit, sanity, ansible-lint, yamllint, build, docs, molecule, lab (timed)"
	@echo "make lab-destroy  remove the lab containers and network"
	@echo "make unit | sanity | lint | yamllint | build | molecule | lab-check   one stage of make test"
	@echo "make docs         the docs site (build/docs/html): reference from ansible-doc, guides, troubleshooting"
	@echo "make prometheus-tools  promtool, amtool, alertmanager from Debian's packages into build/tools (the unit stage uses them)"
	@echo "make bench        parser throughput, the burn-in search against its target (rounds vs N), the remediation planner,"
	@echo "                  topology.conf for 1,000 and 4,096 nodes, 1,000 nodes' alerts through a real Alertmanager,"
	@echo "                  a 10,000-node Alertmanager notification through the decider, and the fleet run (make bench-fleet:"
	@echo "                  discover and an idempotent site run over SSH on 8, 16, 32 containers; controller CPU per node)"
	@echo "make ee-context   the AWX execution environment's build context (ansible-builder create)"
	@echo "make changelog    preview the next release's CHANGELOG.rst (build/changelog) from changelogs/fragments"

$(VENV)/.installed: requirements-dev.txt
	@if ! $(PYTHON) -m venv --help >/dev/null 2>&1 || ! $(PYTHON) -c 'import ensurepip' 2>/dev/null; then \
	  if [ "$$(id -u)" = 0 ] && [ -f /etc/debian_version ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv >/dev/null; \
	  else echo "Python venv support is missing: install python3-venv (Debian/Ubuntu) and run make again" >&2; exit 1; fi; \
	fi
	rm -rf $(VENV)
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -r requirements-dev.txt
	touch $@

venv: $(VENV)/.installed

# The checkout itself is the installed collection: edits are live, nothing to rebuild.
collection: venv
	@mkdir -p $(dir $(COLLECTION_LINK))
	@ln -sfn $(CURDIR) $(COLLECTION_LINK)

docker:
	@tests/lab/ensure-docker.sh

# Every image Molecule uses: the bare (build-image.sh, one after another: the first may install debootstrap) and
# the prepared (prepare-image.sh, side by side: they wait on the mirror and dpkg) image of Debian 11, 12 and 13.
# Each is built once per recipe; a machine that has them spends a second here.
image: docker
	@for suite in bullseye bookworm trixie; do GPUFABRIC_DEBIAN_SUITE=$$suite tests/lab/build-image.sh || exit 1; done
	@pids=""; for suite in bullseye bookworm trixie; do \
	  (GPUFABRIC_DEBIAN_SUITE=$$suite tests/lab/prepare-image.sh 2>&1 | sed -u "s/^/[$$suite] /"; exit $${PIPESTATUS[0]}) & \
	  pids="$$pids $$!"; \
	done; rc=0; for pid in $$pids; do wait $$pid || rc=1; done; exit $$rc

# The one image the lab uses: bare Debian 12 (its check run must find nothing installed).
lab-image: docker
	@tests/lab/build-image.sh

lab: collection lab-image
	ansible-playbook -i $(LAB_INVENTORY) playbooks/lab.yml
	ansible-playbook -i $(LAB_INVENTORY) playbooks/site.yml -e gpufabric_report_root=$(CURDIR)/build/lab-report
	ansible-playbook -i $(LAB_INVENTORY) playbooks/burnin.yml -e burnin_report_dir=$(CURDIR)/build/lab-report/burnin
	ansible-playbook -i $(LAB_INVENTORY) playbooks/burnin.yml -e burnin_strategy=search -e burnin_report_dir=$(CURDIR)/build/lab-report/burnin-search
	@python3 tests/lab/summary.py $(CURDIR)/build/lab-report

lab-destroy: collection docker
	ansible-playbook -i $(LAB_INVENTORY) playbooks/lab.yml -e lab_state=absent

test: collection image prometheus-tools
	@tests/run-stages.sh unit sanity lint yamllint build docs molecule lab

# The unit stage runs Prometheus' own tools on our rules, Alertmanager configuration and metrics text.
unit: collection prometheus-tools
	@tests/run-stages.sh $@

sanity lint yamllint build: collection
	@tests/run-stages.sh $@

# promtool, amtool and alertmanager unpacked from Debian's packages into build/tools/bin (nothing installed).
prometheus-tools:
	@tests/promtool/fetch-tools.sh

molecule: collection image
	@tests/run-stages.sh $@

# make lab twice on a fresh lab; fails unless the second site.yml run changes nothing (the lab stage of make test).
lab-check: collection lab-image
	@tests/run-stages.sh lab

# The docs site in build/docs/html: docs/troubleshooting.md regenerated from the source, the
# reference from ansible-doc (antsibull-docs), the guides; any warning fails.
docs: collection
	python docs/site/troubleshooting.py
	bash docs/site/build.sh

# The execution environment's build context (Containerfile + _build) for ansible-builder build / AWX.
ee-context: collection
	rm -rf build/ee && mkdir -p build/ee
	ansible-galaxy collection build --output-path build/ee . >/dev/null
	mv build/ee/gpufabric-rdma-*.tar.gz build/ee/gpufabric-rdma.tar.gz
	ansible-builder create --file execution-environment.yml --context build/ee/context >/dev/null
	@echo "build context in build/ee/context: ansible-builder build --context build/ee/context -t <image>"

bench: collection prometheus-tools image
	python tests/bench/bench_parsers.py
	python tests/bench/bench_burnin.py
	python tests/bench/bench_remediation.py
	python tests/bench/bench_topology.py
	python tests/bench/bench_alert_scale.py
	python tests/bench/bench_decider_notification.py
	python tests/bench/bench_fleet.py --nodes 8 16 32

# The fleet benchmark alone (about 25 minutes on 2 cores): 8, 16 and 32 systemd containers with sshd, discover and an
# idempotent site run over SSH; NODES="8 16" for fewer.
bench-fleet: collection image
	python tests/bench/bench_fleet.py --nodes $(or $(NODES),8 16 32)

# What the next (minor) release's CHANGELOG.rst will say, from the pending fragments: a release in a
# copy (build/changelog), so the fragments stay. Cutting a real release: docs/versioning.md.
changelog: collection
	antsibull-changelog lint
	rm -rf build/changelog && mkdir -p build/changelog && cp -r changelogs galaxy.yml build/changelog/
	cp CHANGELOG.rst build/changelog/ 2>/dev/null || true
	cd build/changelog && antsibull-changelog release --version $$(python -c 'import yaml; v = yaml.safe_load(open("galaxy.yml"))["version"].split("."); print("%s.%d.0" % (v[0], int(v[1]) + 1))')
	@echo "preview: build/changelog/CHANGELOG.rst"

clean:
	rm -rf build dist $(VENV) .pytest_cache
