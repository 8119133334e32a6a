//! scenarios: the scenario schema (serde + ron), validation, the simulated world, reports,
//! and the `resim` command line. Filled by issue 6.
