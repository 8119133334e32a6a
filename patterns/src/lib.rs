//! patterns: resilience patterns as pure state machines that take `now` (and, where they
//! need randomness, an RNG) as arguments. Filled by issues 4 and 5.
