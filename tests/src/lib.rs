//! Cross-crate tests of resim live in `tests/tests/`; this library holds the helpers they share.
