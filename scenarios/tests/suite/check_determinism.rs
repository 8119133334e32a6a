//! `resim run FILE --check-determinism`: the run made twice, and what it says about them.

use crate::support;

use scenarios::experiment::determinism::{Verdict, render};
use sim_core::SimTime;
use sim_core::sim::TraceRecord;
use support::{Resim, resim_in, workspace_root};

#[test]
fn a_deterministic_run_gives_its_digest_twice() {
    let file = "book/src/scenarios/replay.ron";
    let Resim {
        code,
        stdout: out,
        stderr: err,
    } = resim_in(
        &workspace_root(),
        &["run", file, "--seed", "19", "--check-determinism"],
    );
    assert_eq!((code, err.as_str()), (0, ""));
    let Resim { stdout: json, .. } =
        resim_in(&workspace_root(), &["run", file, "--seed", "19", "--json"]);
    let report: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        out,
        format!(
            "deterministic: two runs of seed 19 gave digest {} after {} events each\n",
            report["digest"].as_str().unwrap(),
            report["events"]
        )
    );
}

#[test]
fn a_difference_names_the_first_divergent_event_and_describes_its_instant() {
    let record = |seq, kind| TraceRecord {
        time: SimTime::ZERO + sim_core::SimDuration::from_nanos(1_500),
        seq,
        target: 1,
        kind,
    };
    let verdict = Verdict::Different {
        digests: ("aaaa".into(), "bbbb".into()),
        first: Some((42, Some(record(7, 1)), Some(record(7, 2)))),
        described: (vec!["1.5µs arrival".into()], vec!["1.5µs timeout".into()]),
    };
    let text = render(&verdict, 3);
    assert_eq!(
        text,
        format!(
            "not deterministic: two runs of seed 3 gave digests aaaa and bbbb\nfirst divergent event: #42\n  run 1: {}\n  run 2: {}\nevents at that instant, run 1:\n  1.5µs arrival\nevents at that instant, run 2:\n  1.5µs timeout\n",
            record(7, 1),
            record(7, 2)
        )
    );
}
