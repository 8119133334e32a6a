//! The integration tests of `scenarios`, as one test binary: each module is one area (the
//! command line, the book, the library, each feature), and `support` holds what they share.
//! `fuzz.rs` and `memory.rs` stay binaries of their own: one counts the heap with its own global
//! allocator, the other reads the peak resident memory of its process.

mod support;

mod answers;
mod blast_radius;
mod book;
mod book_reference;
mod capacity;
mod charts;
mod check;
mod check_determinism;
mod cli;
mod clone;
mod compare;
mod contention;
mod decisions;
mod distributed;
mod dotted_names;
mod explore;
mod export;
mod export_against_props;
mod export_corpus;
mod export_schemas;
mod export_split;
mod import;
mod import_cli;
mod import_corpus;
mod library;
mod lifecycle;
mod limiter_series;
mod limits;
mod local_limiters;
mod locks;
mod metastability;
mod overrides;
mod phase;
mod pools;
mod queues;
mod report;
mod risk;
mod scaling;
mod series;
mod serve;
mod shrink;
mod spans;
mod stages;
mod swarm;
mod sweep;
mod tidy;
mod traces_import;
mod traffic;
mod tune;
mod tune_margin;
mod warnings;
mod why;
mod why_window;
mod world;
