//! The blast radius of the services that report one, as the human and compact reports show
//! it: how many caller units lost all their replicas at once, and how many lost some.

use super::super::{BlastReport, Report};
use std::fmt::Write as _;

/// How the isolation reads: `shuffle sharding, 2 replicas per unit`.
fn isolation(b: &BlastReport) -> String {
    let per_unit = format!(
        "{} {} per unit",
        b.replicas_per_unit,
        if b.replicas_per_unit == 1 {
            "replica"
        } else {
            "replicas"
        }
    );
    match b.isolation.as_str() {
        "none" => format!("no isolation, {per_unit}"),
        other => format!("{}, {per_unit}", other.replace('_', " ")),
    }
}

/// The human report's part of a service's line.
pub(super) fn human(b: &BlastReport) -> String {
    format!(
        "blast radius ({}): {} units, lost all replicas {} ({:.1}%), lost some {} ({:.1}%), poison crashes {}",
        isolation(b),
        b.units,
        b.units_lost_all,
        100.0 * b.lost_all_ratio,
        b.units_lost_some,
        100.0 * b.lost_some_ratio,
        b.poison_crashes
    )
}

/// One compact line per service that reports its blast radius.
pub(super) fn compact(o: &mut String, report: &Report) {
    for v in &report.services {
        let Some(b) = &v.blast_radius else {
            continue;
        };
        let _ = writeln!(
            o,
            "blast {:<10} {} units {} lost all {} ({:.1}%) lost some {} ({:.1}%) poison crashes {}",
            v.name,
            isolation(b),
            b.units,
            b.units_lost_all,
            100.0 * b.lost_all_ratio,
            b.units_lost_some,
            100.0 * b.lost_some_ratio,
            b.poison_crashes
        );
    }
}
