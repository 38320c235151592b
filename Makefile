# The entry points of the repository. The logic lives in acceptance/harness/*.sh (bash, so it can
# trap, wait and clean up); these targets only name it.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash
H := acceptance/harness

.PHONY: help up down test dist bench bench-provider bench-node bench-chart bench-control-plane bench-apps bench-server bench-upgrade bench-portal bench-sleep conformance tools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

up: ## start a local cluster (control plane + real node) + the chart (operator pods) in .kubespaces/dev
	@$(H)/dev-up.sh

down: ## stop what `make up` started
	@$(H)/dev-down.sh

test: ## fmt, clippy, then every test against a fresh local cluster in .kubespaces/test
	@$(H)/run-tests.sh

dist: ## the chart, every image as an OCI archive, the CLI and the provider, SHA256SUMS, in dist/ (DIST=dir)
	@$(H)/dist.sh $(DIST)

bench: ## operator benchmark on a fresh kwok-node cluster in .kubespaces/bench (BENCH_ARGS=...)
	@$(H)/run-bench.sh $(BENCH_ARGS)

bench-provider: ## terraform plan/apply: our provider vs a Go provider, 20 tenants (TENANTS=n)
	@$(H)/run-provider-bench.sh $(TENANTS)

bench-node: ## the real node against a kwok node: start-up, pod start latency, memory (PODS=n)
	@$(H)/run-node-bench.sh $(PODS)

bench-chart: ## the operator's pods under the chart's limits: memory, CPU with 300 tenants, failover
	@$(H)/run-chart-bench.sh $(TENANTS)

bench-control-plane: ## tenant control planes: 5 Tenants to Ready vs helm install --wait, memory vs chart defaults (TENANTS=n ROUNDS=n)
	@$(H)/run-control-plane-bench.sh $(or $(TENANTS),5) $(or $(ROUNDS),2)

bench-apps: ## a tenant's app through the Gateway vs the same pod direct: req/s, p50/p99 (DURATION=seconds ROUNDS=n)
	@$(H)/run-apps-bench.sh $(or $(DURATION),10) $(or $(ROUNDS),3)

bench-server: ## a user's tenant list (p50/p99) and the server's RSS, alone and under a /login, forged-token and stream flood (REQUESTS=n ROUNDS=n)
	@$(H)/run-server-bench.sh $(or $(REQUESTS),400) $(or $(ROUNDS),3)

bench-upgrade: ## helm upgrade from the previous release with 5 live tenants (failed requests and longest gaps per tenant API, app and the portal, vs idle), then every tenant's vCluster values rolled (API unavailability p50/p99 vs a plain helm upgrade of one vCluster) (TENANTS=n)
	@$(H)/run-upgrade-bench.sh $(or $(TENANTS),5)

bench-portal: ## the portal in Chromium: Create tenant -> first checklist, and status write -> page vs kubectl get tenant -w (p50/p99, 10 tenants; TENANTS=n)
	@$(H)/run-portal-bench.sh $(or $(TENANTS),10)

bench-sleep: ## idle tenants: first kubectl after a sleep vs create-until-Ready, control planes' memory asleep vs awake, kubectl through the waker vs without (TENANTS=n WAKES=n REQUESTS=n)
	@$(H)/run-sleep-bench.sh $(or $(TENANTS),5) $(or $(WAKES),10) $(or $(REQUESTS),100)

conformance: ## the upstream conformance suite against a tenant and against the host cluster: passed/failed/skipped and wall time per side, JUnit reports (CONFORMANCE_FOCUS=regexp)
	@$(H)/run-conformance.sh

tools: ## only build (or look up) the cached control-plane binaries; prints their directory
	@$(H)/build-tools.sh
