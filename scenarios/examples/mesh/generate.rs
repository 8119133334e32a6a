//! A generated mesh of the size real systems have: `services` routing services of `calls`
//! routes each, in layers so that no route makes a cycle, and the `calls` backends the last
//! layer routes to. Shared by the `bench_mesh` example and the suite's `limits` tests.
//!
//! Each service is one host as a mesh sees it: 2 replicas of 8 workers, 1ms of exponential
//! work, and `call_mode: Pick`, so that a request takes one of its routes (by weight, all
//! equal here), as a proxy routes each request to one upstream. A route has a timeout and a
//! stack of `layers` layers: a retry, a circuit breaker, then bulkheads of 1,000 calls. Layer
//! `k` holds `width` services (`calls × 5`, or a tenth of them if that is more); service `i`
//! of a layer routes to the services `i`, `i + 1`, …, `i + calls − 1` (modulo the width) of
//! the next layer (a full layer's hosts are each the target of `calls` routes), and the last
//! layer routes to the backends.
//! One open-loop client per service of the first layer sends `rate` requests per second in
//! all, spread evenly. Names are `s0000`, …, and `b00`, … for the backends; the client of
//! `s0000` is `edge-s0000`.

/// The scenario text of the mesh.
pub fn mesh(services: usize, calls: usize, layers: usize, rate: f64, seconds: u64) -> String {
    assert!(
        services >= 1 && calls >= 1,
        "a mesh has a service and a route"
    );
    let width = (calls * 5).max(services.div_ceil(10)).min(services);
    let name = |i: usize| format!("s{i:04}");
    let mut text = format!(
        "Scenario(name: \"mesh-{services}x{calls}\", duration: \"{seconds}s\", clients: {{"
    );
    let per_client = rate / width as f64;
    for i in 0..width {
        text.push_str(&format!(
            "\"edge-{}\": (load: Open(rate: Constant(\"{per_client}/s\")), call: (target: \"{}\", timeout: \"2s\")),",
            name(i),
            name(i)
        ));
    }
    text.push_str("}, services: {");
    let stack: Vec<&str> = ["Retry(max_attempts: 2)", "Breaker(())"]
        .into_iter()
        .chain(std::iter::repeat("Bulkhead((max_concurrent_calls: 1000))"))
        .take(layers)
        .collect();
    let stack = stack.join(", ");
    let route =
        |target: String| format!("(target: \"{target}\", timeout: \"500ms\", stack: [{stack}]),");
    for i in 0..services {
        let layer = i / width;
        let next = (layer + 1) * width;
        // The width of the next layer: the last layer routes to the backends.
        let next_width = services.saturating_sub(next).min(width);
        text.push_str(&format!(
            "\"{}\": (replicas: 2, workers: 8, work: Exponential(mean: \"1ms\"), call_mode: Pick, calls: [",
            name(i)
        ));
        for j in 0..calls {
            let target = if next_width >= calls {
                name(next + (i % width + j) % next_width)
            } else {
                format!("b{j:02}")
            };
            text.push_str(&route(target));
        }
        text.push_str("]),");
    }
    for j in 0..calls {
        text.push_str(&format!(
            "\"b{j:02}\": (replicas: 2, workers: 16, work: Exponential(mean: \"1ms\")),"
        ));
    }
    text.push_str("})");
    text
}
