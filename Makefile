# The entry points of the repository. The logic lives in acceptance/harness/*.sh (bash, so it can
# trap, wait and clean up); these targets only name it.
.DEFAULT_GOAL := help
SHELL := /usr/bin/env bash
H := acceptance/harness

.PHONY: help up down test bench bench-provider tools

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-15s %s\n", $$1, $$2}'

up: ## start control plane + CRDs + operator locally in .kubespaces/dev (idempotent)
	@$(H)/dev-up.sh

down: ## stop what `make up` started
	@$(H)/dev-down.sh

test: ## fmt, clippy, then every test against a fresh control plane in .kubespaces/test
	@$(H)/run-tests.sh

bench: ## release benchmark against a fresh control plane in .kubespaces/bench (BENCH_ARGS=...)
	@$(H)/run-bench.sh $(BENCH_ARGS)

bench-provider: ## terraform plan/apply: our provider vs a Go provider, 20 tenants (TENANTS=n)
	@$(H)/run-provider-bench.sh $(TENANTS)

tools: ## only build (or look up) the cached control-plane binaries; prints their directory
	@$(H)/build-tools.sh
