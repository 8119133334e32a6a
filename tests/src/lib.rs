//! The `resim-tests` package holds the cross-crate tests of resim, in `tests/tests/`
//! (determinism, queueing theory, tidiness, the README, the book's property-testing
//! tutorial). This library is empty: a package needs a target, and the tests share no helpers
//! (each is one file). The helpers scenarios' own tests share are in
//! `scenarios/tests/suite/support/mod.rs`.
