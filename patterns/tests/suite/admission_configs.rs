//! Every admission config whose docs give defaults takes them from an empty RON struct, as
//! the recovery configs do (`recovery_configs.rs`): a documented default is one a file may
//! leave out.

use patterns::breaker::{BreakerConfig, HalfOpenPolicy};
use patterns::concurrency::{AimdConfig, EnvoyGradientConfig, Gradient2Config, VegasConfig};
use patterns::shedder::{
    AdaptiveThrottleConfig, CoDelConfig, PidConfig, PriorityConfig, RpcQueueConfig,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// `value` written as RON reads back equal, and `text` (what a file says when it leaves
/// every field to its default) reads as the default.
fn check<T>(text: &str)
where
    T: Serialize + DeserializeOwned + PartialEq + Debug + Default,
{
    let value = T::default();
    let written = ron::to_string(&value).unwrap();
    let back: T = ron::from_str(&written).unwrap_or_else(|e| panic!("{written}: {e}"));
    assert_eq!(back, value, "{written}");
    let parsed: T = ron::from_str(text).unwrap_or_else(|e| {
        panic!(
            "{}: `{text}` should give the documented defaults: {e}",
            std::any::type_name::<T>()
        )
    });
    assert_eq!(parsed, value, "{text}");
}

#[test]
fn documented_defaults_are_the_ones_an_empty_config_gets() {
    // Not in the list above: configs whose fields have no documented default (a bucket's
    // rate and burst, a window's limit, a bulkhead's size, a keyed registry's key cap) are the
    // user's to give, even where a `Default` exists for Rust callers.
    check::<AdaptiveThrottleConfig>("()");
    check::<PidConfig>("()");
    check::<CoDelConfig>("()");
    check::<RpcQueueConfig>("()");
    check::<PriorityConfig>("()");
    check::<AimdConfig>("()");
    check::<VegasConfig>("()");
    check::<Gradient2Config>("()");
    check::<EnvoyGradientConfig>("()");
    check::<BreakerConfig>("()");
    check::<HalfOpenPolicy>("(kind: \"permitted_calls\")");
}

#[test]
fn the_defaults_are_the_documented_ones() {
    let throttle = AdaptiveThrottleConfig::default();
    assert_eq!(throttle.accepts_multiplier, 2.0);
    assert_eq!(throttle.window, sim_core::SimDuration::from_secs(120));
    assert_eq!(throttle.bucket_count, 60);
    let pid = PidConfig::default();
    assert_eq!(
        (
            pid.setpoint,
            pid.gain_proportional,
            pid.gain_integral,
            pid.gain_derivative,
            pid.drop_ratio_max
        ),
        (20.0, 0.01, 0.05, 0.0, 0.9)
    );
}
