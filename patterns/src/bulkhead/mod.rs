//! Placeholder until its issue lands; see the crate docs for what this module will hold.
