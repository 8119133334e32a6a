//! Spans grouped by trace: an [`Assembler`] holds the spans of each open trace and hands a
//! trace over when its reader says it is complete ([`Assembler::close`]), when more than
//! [`OPEN_MAX`] traces are open (the one least recently added to), or at the end of the file.

use super::Span;
use std::collections::BTreeMap;

/// The most traces held open at once: a file's memory is bounded by this many traces, not by
/// its length. An exporter writes a trace's spans within seconds of each other; a trace whose
/// spans come after this many other traces have started is taken as two.
pub const OPEN_MAX: usize = 4096;

/// Open traces and where each trace's spans go once complete.
pub struct Assembler<F: FnMut(Vec<Span>)> {
    /// The spans of each open trace, and the record its last span came in.
    open: BTreeMap<String, (u64, Vec<Span>)>,
    /// The open traces by the record their last span came in (oldest first).
    by_age: BTreeMap<u64, String>,
    /// Records read.
    records: u64,
    done: F,
}

impl<F: FnMut(Vec<Span>)> Assembler<F> {
    /// An assembler that hands each complete trace to `done`.
    pub fn new(done: F) -> Self {
        Assembler {
            open: BTreeMap::new(),
            by_age: BTreeMap::new(),
            records: 0,
            done,
        }
    }

    /// Adds a span to its trace.
    pub fn push(&mut self, span: Span) {
        self.records += 1;
        let record = self.records;
        match self.open.get_mut(&span.trace) {
            Some((age, spans)) => {
                self.by_age.remove(age);
                *age = record;
                self.by_age.insert(record, span.trace.clone());
                spans.push(span);
            }
            None => {
                self.by_age.insert(record, span.trace.clone());
                self.open.insert(span.trace.clone(), (record, vec![span]));
            }
        }
        while self.open.len() > OPEN_MAX {
            let Some((_, oldest)) = self.by_age.pop_first() else {
                break;
            };
            self.close(&oldest);
        }
    }

    /// Hands trace `id` over as complete (nothing if it is not open).
    pub fn close(&mut self, id: &str) {
        if let Some((age, spans)) = self.open.remove(id) {
            self.by_age.remove(&age);
            (self.done)(spans);
        }
    }

    /// Hands every open trace over, oldest first: the file has ended.
    pub fn finish(mut self) {
        while let Some((_, oldest)) = self.by_age.pop_first() {
            if let Some((_, spans)) = self.open.remove(&oldest) {
                (self.done)(spans);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::import::traces::SpanKind;

    fn span(trace: &str) -> Span {
        Span {
            trace: trace.to_string(),
            id: "1".to_string(),
            parent: None,
            follows: false,
            service: "a".to_string(),
            kind: SpanKind::Server,
            start: 0,
            end: 1,
            error: false,
            peer: None,
            sampling: None,
            deadline: false,
        }
    }

    #[test]
    fn no_more_than_open_max_traces_are_held_and_none_is_lost() {
        let mut handed = Vec::new();
        let mut a = Assembler::new(|t: Vec<Span>| handed.push(t.len()));
        for i in 0..OPEN_MAX + 10 {
            a.push(span(&format!("{i}")));
            a.push(span(&format!("{i}")));
            assert!(a.open.len() <= OPEN_MAX);
        }
        a.finish();
        assert_eq!(handed.len(), OPEN_MAX + 10);
        assert!(handed.iter().all(|&n| n == 2));
    }
}
