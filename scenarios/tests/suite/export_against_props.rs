//! `resim export --against ORIGINAL` as a property, over the configurations `export.rs`
//! generates in each format the export writes (Envoy, Istio, resilience4j as YAML; a gRPC
//! service config as JSON), each imported into a scenario:
//!
//! - with no change of the scenario, the export written back is the original, byte for byte;
//! - with one setting changed (the call's deadline or per-attempt timeout doubled, its retry
//!   allowed one attempt more or less, its breaker's threshold moved: one the configuration
//!   sets, picked by the case), the file written back imports to the changed scenario, and it
//!   differs from the original only in that field's line (or the lines of a field inserted
//!   with the objects it is in).
//!
//! `RESIM_AGAINST_CASES=N` runs N cases per format (default 12, a few seconds in all).

use crate::export::{envoy_config, grpc_config, istio_config, r4j_config};
use crate::export_corpus::{call_and_target, changed_lines, imported};
use proptest::prelude::*;
use scenarios::Scenario;
use scenarios::export::{self, Against, TargetFormat};
use scenarios::format::schema::{Call, Layer};
use scenarios::import::Input;
use serde_json::Value;

const CALL: &str = "services.app.calls[0]";

fn config() -> ProptestConfig {
    let cases = std::env::var("RESIM_AGAINST_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(12);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// The settings of `call` one change could move, in `format`: each a name and the change.
fn changes(call: &Call, format: TargetFormat) -> Vec<&'static str> {
    let mut out = Vec::new();
    if call.deadline.is_some() && format != TargetFormat::Resilience4j {
        out.push("deadline");
    }
    if call.timeout.is_some() && matches!(format, TargetFormat::Envoy | TargetFormat::Istio) {
        out.push("timeout");
    }
    for layer in &call.stack {
        match layer {
            Layer::Retry(_) => out.push("retry"),
            Layer::Breaker(_) => out.push("breaker"),
            _ => {}
        }
    }
    out
}

/// `what` changed in `call`.
fn change(call: &mut Call, what: &str) {
    let double = |d: &mut Option<sim_core::SimDuration>| *d = d.map(|d| d.saturating_mul(2));
    match what {
        "deadline" => {
            // A request queued in Envoy's or Istio's pool waits until the route's timeout
            // ends it: the bulkhead's wait is the deadline, and moves with it.
            let old = call.deadline;
            double(&mut call.deadline);
            for layer in &mut call.stack {
                if let Layer::Bulkhead(b) = layer
                    && Some(b.max_wait_duration) == old
                {
                    b.max_wait_duration = call.deadline.unwrap_or(b.max_wait_duration);
                }
            }
        }
        "timeout" => double(&mut call.timeout),
        _ => {
            // Envoy's hedges on a per-try timeout are its retries (`num_retries` counts both):
            // a Hedge beside the Retry moves with it.
            let mut hedges = None;
            for layer in &mut call.stack {
                match (what, layer) {
                    ("retry", Layer::Hedge(h)) => hedges = Some(&mut h.max_hedged_attempts),
                    ("retry", Layer::Retry(r)) => {
                        r.max_attempts = if r.max_attempts < 5 {
                            r.max_attempts + 1
                        } else {
                            r.max_attempts - 1
                        };
                        if let Some(h) = hedges.take() {
                            *h = r.max_attempts - 1;
                        }
                    }
                    ("breaker", Layer::Breaker(b)) => {
                        b.failure_rate_threshold = if b.failure_rate_threshold > 50.0 {
                            25.0
                        } else {
                            75.0
                        };
                    }
                    _ => {}
                }
            }
        }
    }
}

fn check(
    format: TargetFormat,
    file: &str,
    doc: &Value,
    pick: usize,
    service: &str,
) -> Result<(), TestCaseError> {
    let text = match format {
        TargetFormat::Grpc => serde_json::to_string_pretty(doc).expect("JSON"),
        _ => serde_saphyr::to_string(doc).expect("YAML"),
    };
    let original = Input {
        file: file.to_string(),
        text,
    };
    let (ron_text, scenario) = imported(std::slice::from_ref(&original));
    let against = Against {
        originals: vec![original.clone()],
        scenario: Input {
            file: "imported.ron".into(),
            text: ron_text,
        },
    };
    let export = |s: &Scenario| {
        export::export_against(s, "imported.ron", CALL, format, Some(service), &against)
            .unwrap_or_else(|e| panic!("{e}\n{}", original.text))
    };
    let same = export(&scenario);
    prop_assert_eq!(&same.text, &original.text, "{}", same.table);
    let call = &scenario.services["app"].calls[0];
    let options = changes(call, format);
    let Some(what) = options.get(pick % options.len().max(1)) else {
        return Ok(());
    };
    let mut changed = scenario.clone();
    change(&mut changed.services.get_mut("app").unwrap().calls[0], what);
    let out = export(&changed);
    let (dropped, added) = changed_lines(&original.text, &out.text);
    let (dropped, added) = (dropped.len(), added.len());
    prop_assert!(
        dropped <= 1 && (1..=3).contains(&added),
        "{what}: one field's lines:\n{}\n{}",
        out.diff,
        out.table
    );
    let again = Input {
        file: file.to_string(),
        text: out.text.clone(),
    };
    let (_, reimported) = imported(std::slice::from_ref(&again));
    prop_assert_eq!(
        call_and_target(&reimported, CALL),
        call_and_target(&changed, CALL),
        "{}: written back and imported again:\n{}\n{}",
        what,
        out.diff,
        out.table
    );
    Ok(())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn grpc_against_its_original(doc in grpc_config(), pick in 0usize..8) {
        check(TargetFormat::Grpc, "service-config.json", &doc, pick, "shop.Cart")?;
    }

    #[test]
    fn envoy_against_its_original(doc in envoy_config(), pick in 0usize..8) {
        check(TargetFormat::Envoy, "envoy.yaml", &doc, pick, "api")?;
    }

    #[test]
    fn istio_against_its_original(doc in istio_config(), pick in 0usize..8) {
        check(TargetFormat::Istio, "istio.yaml", &doc, pick, "reviews")?;
    }

    #[test]
    fn resilience4j_against_its_original(doc in r4j_config(), pick in 0usize..8) {
        check(TargetFormat::Resilience4j, "application.yml", &doc, pick, "inventory")?;
    }
}
