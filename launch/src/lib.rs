//! One process launcher for the tests, the load generator's scenarios and
//! the benchmarks.
