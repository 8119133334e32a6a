//! The fallback chain: what is served, and the degradation report.

use patterns::fallback::{
    CacheSkip, Degradation, Fallback, FallbackConfig, FallbackResult, PrimaryFailure, Served,
};
use sim_core::{SimDuration, SimTime};

/// Decides at t = 1000s with the given primary outcome and cache age (seconds).
fn check(
    config: FallbackConfig,
    primary: Result<(), PrimaryFailure>,
    cache_age_s: Option<u64>,
) -> FallbackResult {
    let now = SimTime::from_secs(1000);
    let cached_at = cache_age_s.map(|age| now - SimDuration::from_secs(age));
    let result = Fallback::new(config)
        .unwrap()
        .decide(now, primary, cached_at);
    assert_eq!(result.is_degraded(), result.served != Served::Primary);
    result
}

#[test]
fn the_chain_degrades_step_by_step_and_says_why() {
    let d = FallbackConfig::default();
    assert_eq!(
        check(d.clone(), Ok(()), Some(10)),
        FallbackResult {
            served: Served::Primary,
            degradation: None
        }
    );
    assert_eq!(
        check(d.clone(), Err(PrimaryFailure::Timeout), Some(10)),
        FallbackResult {
            served: Served::Cache {
                age: SimDuration::from_secs(10)
            },
            degradation: Some(Degradation {
                primary: PrimaryFailure::Timeout,
                cache: None
            })
        }
    );
    assert_eq!(
        check(d.clone(), Err(PrimaryFailure::Error), Some(600)),
        FallbackResult {
            served: Served::Static,
            degradation: Some(Degradation {
                primary: PrimaryFailure::Error,
                cache: Some(CacheSkip::Stale {
                    age: SimDuration::from_secs(600)
                })
            })
        }
    );
    assert_eq!(
        check(d, Err(PrimaryFailure::Rejected), None).degradation,
        Some(Degradation {
            primary: PrimaryFailure::Rejected,
            cache: Some(CacheSkip::Missing)
        })
    );
    let no_static = FallbackConfig {
        use_cache: false,
        use_static: false,
        ..FallbackConfig::default()
    };
    assert_eq!(
        check(no_static, Err(PrimaryFailure::Error), Some(1)),
        FallbackResult {
            served: Served::Nothing,
            degradation: Some(Degradation {
                primary: PrimaryFailure::Error,
                cache: Some(CacheSkip::Disabled)
            })
        }
    );
}

#[test]
fn invalid_fallback_names_the_field() {
    let config: FallbackConfig = ron::from_str("(cache_age_max: \"0s\")").unwrap();
    assert_eq!(Fallback::new(config).unwrap_err().field, "cache_age_max");
    assert!(ron::from_str::<FallbackConfig>("(use_stale: true)").is_err());
}
