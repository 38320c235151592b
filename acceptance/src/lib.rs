//! Shared helpers for the acceptance tests and the benchmark.
