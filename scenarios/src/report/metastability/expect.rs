//! The `Recovers` and `Metastable` expectations, judged from the run's verdict (their validation
//! against the scenario's triggers is the format's: [`crate::format::verdict`]).

use super::{Metastability, Verdict, round3};
use crate::figures::Figures;
use crate::format::schema::Expectation;
use crate::format::verdict::NoVerdict;
use crate::report::types::{ExpectationResult, Threshold};

/// The verdict on a `Recovers` or `Metastable` expectation, from the run's verdict.
pub(crate) fn expectation(
    e: &Expectation,
    figures: &Figures,
    verdict: &Result<Metastability, NoVerdict>,
) -> ExpectationResult {
    let (client, within) = match e {
        Expectation::Recovers { client, within } => (client, Some(*within)),
        Expectation::Metastable { client } => (client, None),
        _ => unreachable!("only the verdict's expectations are judged here"),
    };
    // Validation makes sure a client left out is the only one.
    let name = client
        .clone()
        .or_else(|| figures.clients.first().map(|c| c.name.clone()))
        .unwrap_or_default();
    let expectation = match within {
        Some(w) => format!("{name} recovers within {w} of the trigger's end"),
        None => format!("{name} stays down after the trigger ends"),
    };
    let mut threshold = Threshold {
        metric: "recovery".to_string(),
        client: Some(name.clone()),
        bound: "at_least".to_string(),
        value: 0.0,
        from_s: 0.0,
        to_s: None,
        observed: None,
    };
    let m = match verdict {
        Ok(m) => m,
        Err(why) => {
            return ExpectationResult {
                expectation,
                observed: format!("no verdict: {why}"),
                pass: false,
                threshold,
                warning: None,
            };
        }
    };
    let c = m
        .client(&name)
        .expect("expectation clients are checked by validation");
    threshold.value = c.healthy_success_ratio.unwrap_or(m.baseline_ratio_min);
    threshold.from_s = m.trigger_end_s;
    threshold.to_s = within.map(|w| round3(m.trigger_end_s + w.as_secs_f64()));
    threshold.observed = match c.value() {
        Verdict::Recovered { after } => Some(round3(after.as_secs_f64())),
        Verdict::NeverDegraded => Some(0.0),
        _ => None,
    };
    let pass = match (c.value(), within) {
        (Verdict::NeverDegraded, Some(_)) => true,
        (Verdict::Recovered { after }, Some(w)) => after <= w,
        (Verdict::Metastable, None) => true,
        _ => false,
    };
    ExpectationResult {
        expectation,
        observed: c.summary.clone(),
        pass,
        threshold,
        warning: None,
    }
}
