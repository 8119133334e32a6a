//! A service's admission limiters over time ([`LimiterFigures`]): the state a limiter holds
//! that its refusals do not show — an adaptive concurrency limit and the requests it holds,
//! a PID shedder's drop probability — per report bucket, sampled as the service's other
//! gauges are (time-weighted mean and maximum).
//!
//! A service without a concurrency limit or a PID shedder has none of these
//! (`ServiceFigures::limiters` is `None`): it keeps and reports nothing new.

use sim_core::metrics::GaugeBucket;

/// A service's limiters per report bucket; each list is empty when the service lacks that
/// limiter, else one entry per bucket from zero to the end of the run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LimiterFigures {
    /// Its concurrency limit (`admission: [Concurrency(…)]`), summed over the replicas up
    /// and in rotation: how many requests its limiters would hold at once.
    pub concurrency_limit: Vec<GaugeBucket>,
    /// The requests its concurrency limiters hold (admitted and not yet answered), summed
    /// over the replicas.
    pub concurrency_in_flight: Vec<GaugeBucket>,
    /// Its PID shedder's drop probability, from 0 to 1, as set at each of its ticks.
    pub pid_drop_ratio: Vec<GaugeBucket>,
}
