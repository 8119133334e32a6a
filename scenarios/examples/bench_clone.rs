//! Benchmark: what a copy of a running world costs. For a few library scenarios at half
//! their duration and for `bench_scale`'s generated worlds (clients × services) at half a
//! minute, it prints the heap bytes a copy holds, by part (the world, the network, and the
//! rest: the pending events and the engine), per component (client or replica), and the time
//! of a copy (`Running::clone`) against three baselines measured in the same run: building
//! the same run afresh from the parsed scenario (`Running::start`: a world at its first
//! event, which holds none of the figures a run accumulates), getting to the same point
//! without a copy (that build, then the same events run again: what a copy saves a branch of
//! a splitting estimate), and a plain memcpy of as many bytes (the floor for a copy of that
//! much state).
//!
//! `cargo run --release -p scenarios --example bench_clone`
//! `cargo run --release -p scenarios --example bench_clone -- --rounds 9 --scale 1000x100`
//!
//! Bytes are counted by a counting allocator (`peak_alloc`): what is allocated while the
//! copy is made and still held after it. Times are medians over `--rounds` alternating
//! rounds of copy, build and memcpy; the rerun is timed once, as the run gets to the point
//! where it is copied.
//!
//! The last line holds the largest world:
//! `world=.. components=.. bytes=.. bytes_per_component=.. clone_ns=.. build_ns=..
//! rerun_ns=.. memcpy_ns=.. ratio=.. rerun_ratio=.. memcpy_ratio=..` where `ratio` is the
//! copy's time over the build's (below 1: a copy is cheaper than a fresh world),
//! `rerun_ratio` over the time to get to the same point again, and `memcpy_ratio` over the
//! memcpy's.

use clap::Parser;
use peak_alloc::PeakAlloc;
use scenarios::RunOptions;
use scenarios::cli::library::find;
use scenarios::format::load::parse;
use scenarios::format::schema::Scenario;
use scenarios::run::Running;
use sim_core::SimTime;
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The cost of a copy of a running world.
#[derive(Parser)]
struct Args {
    /// Library scenarios, comma-separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "retry-storm,cascading-failure,thundering-herd-cache,occ-contention"
    )]
    library: Vec<String>,
    /// Generated worlds as CLIENTSxSERVICES (`bench_scale`'s), comma-separated.
    #[arg(long, value_delimiter = ',', default_value = "100x10,10000x100")]
    scale: Vec<String>,
    /// Alternating rounds of copy, build and memcpy.
    #[arg(long, default_value_t = 5)]
    rounds: usize,
}

/// `bench_scale`'s world: open-loop clients at 1/s, each calling one of the services (one
/// replica, 4 workers, exponential 10ms work), for a minute.
fn generated(clients: usize, services: usize) -> String {
    let mut text = String::from("Scenario(name: \"scale\", duration: \"60s\", clients: {");
    for c in 0..clients {
        text.push_str(&format!(
            "\"c{c}\": (load: Open(rate: Constant(\"1/s\")), call: (target: \"s{}\", timeout: \"1s\")),",
            c % services
        ));
    }
    text.push_str("}, services: {");
    for s in 0..services {
        text.push_str(&format!(
            "\"s{s}\": (workers: 4, work: Exponential(mean: \"10ms\")),"
        ));
    }
    text.push_str("})");
    text
}

/// Heap bytes allocated by `make` and still held by what it returns.
fn held<T>(make: impl FnOnce() -> T) -> (T, usize) {
    let before = ALLOCATOR.current_usage();
    let value = make();
    (value, ALLOCATOR.current_usage().saturating_sub(before))
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

/// One measured world.
struct Measured {
    name: String,
    components: usize,
    bytes: usize,
    clone_ns: f64,
    build_ns: f64,
    rerun_ns: f64,
    memcpy_ns: f64,
}

// Timing copies is the point of a benchmark; the simulations never read the wall clock.
#[allow(clippy::disallowed_methods)]
fn measure(name: &str, s: &Scenario, rounds: usize) -> Measured {
    let options = RunOptions::default();
    let start = || Running::start(s, name, &options).expect("the scenario runs");
    let half = SimTime::ZERO + s.duration / 2;
    let rerun_started = Instant::now();
    let mut running = start();
    running.advance_until(half);
    let rerun_ns = rerun_started.elapsed().as_nanos() as f64;
    let components = s.clients.len()
        + s.services
            .values()
            .map(|sv| sv.replicas as usize)
            .sum::<usize>();
    let (world, world_bytes) = held(|| running.world().clone());
    drop(world);
    let (net, net_bytes) = held(|| running.network().clone());
    drop(net);
    let (copy, bytes) = held(|| running.clone());
    drop(copy);
    let source = vec![1u8; bytes];
    let mut target = vec![0u8; bytes];
    let (mut clones, mut builds, mut memcpys) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..rounds.max(1) {
        let t = Instant::now();
        let copy = black_box(running.clone());
        clones.push(t.elapsed().as_nanos() as f64);
        drop(copy);
        let t = Instant::now();
        let built = black_box(start());
        builds.push(t.elapsed().as_nanos() as f64);
        drop(built);
        let t = Instant::now();
        target.copy_from_slice(black_box(&source));
        black_box(&target);
        memcpys.push(t.elapsed().as_nanos() as f64);
    }
    let m = Measured {
        name: name.to_string(),
        components,
        bytes,
        clone_ns: median(clones),
        build_ns: median(builds),
        rerun_ns,
        memcpy_ns: median(memcpys),
    };
    println!(
        "{name:<28} {components:>7} components, at {} of {} ({} events): a copy holds {bytes} bytes \
         ({} per component: world {}, network {}, pending events and engine {}); copy {:.1} us, \
         build {:.1} us ({:.2}x), build and rerun {:.1} us ({:.4}x), memcpy {:.1} us ({:.1}x)",
        running.now().since_start(),
        s.duration,
        running.events(),
        bytes / components,
        world_bytes / components,
        net_bytes / components,
        bytes.saturating_sub(world_bytes + net_bytes) / components,
        m.clone_ns / 1e3,
        m.build_ns / 1e3,
        m.clone_ns / m.build_ns,
        m.rerun_ns / 1e3,
        m.clone_ns / m.rerun_ns,
        m.memcpy_ns / 1e3,
        m.clone_ns / m.memcpy_ns,
    );
    m
}

fn main() {
    let args = Args::parse();
    let mut all = Vec::new();
    for name in &args.library {
        let entry = find(name).unwrap_or_else(|| panic!("{name} is not in the library"));
        let s = parse(entry.name, entry.text).expect("library scenarios parse");
        all.push(measure(entry.name, &s, args.rounds));
    }
    for size in &args.scale {
        let (clients, services) = size
            .split_once('x')
            .and_then(|(c, s)| Some((c.parse().ok()?, s.parse().ok()?)))
            .unwrap_or_else(|| panic!("--scale {size}: write CLIENTSxSERVICES, e.g. 1000x100"));
        let s = parse("scale.ron", &generated(clients, services)).expect("the world is valid");
        all.push(measure(
            &format!("scale {clients}x{services}"),
            &s,
            args.rounds,
        ));
    }
    let m = all
        .iter()
        .max_by_key(|m| m.components)
        .expect("at least one world");
    println!(
        "world={} components={} bytes={} bytes_per_component={} clone_ns={:.0} build_ns={:.0} \
         rerun_ns={:.0} memcpy_ns={:.0} ratio={:.3} rerun_ratio={:.4} memcpy_ratio={:.2}",
        m.name.replace(' ', "_"),
        m.components,
        m.bytes,
        m.bytes / m.components,
        m.clone_ns,
        m.build_ns,
        m.rerun_ns,
        m.memcpy_ns,
        m.clone_ns / m.build_ns,
        m.clone_ns / m.rerun_ns,
        m.clone_ns / m.memcpy_ns,
    );
}
