//! Benchmarks for zk-mock and zk-lock; see `src/bin/` and `benches/`.
