//! The explorer's page: one HTML file holding the runs as JSON, the stylesheet and the
//! script, so that it opens offline and asks nothing of the network. The stylesheet and the
//! script are files under `assets/`, included at build time: no build step, no library.
//!
//! # Decisions
//!
//! The charts are drawn by the page's own script on `<canvas>` (about 500 lines, no
//! dependency): a library such as uPlot would bring its own cursor and zoom, but the page
//! needs one cursor, one zoom and one scrubber shared by every chart, the topology, the
//! findings and the requests, which is most of the script either way; canvas keeps a redraw
//! of 25 lines of 3,600 points within a frame, and the cursor is drawn on a layer of its own so
//! that hovering redraws no line.

use super::ExploreData;

/// The stylesheet.
const STYLE: &str = include_str!("assets/explore.css");

/// The script: draws the runs and answers the reader's hand (`window.resimExplore.show`).
const SCRIPT: &str = include_str!("assets/explore.js");

/// The serving script of `resim explore --serve`: the knobs as controls, a re-run on a
/// change, its progress, and the new run drawn with `window.resimExplore.show`.
pub const SERVE_SCRIPT: &str = include_str!("serve.js");

/// The page's body, which the script fills.
const BODY: &str = include_str!("assets/body.html");

/// The page of `runs` (`runs[0]` the run explored, `runs[1]`, when present, the run it is
/// compared with). `serve`, when the page is served (`explore --serve`), is a JSON text the
/// page receives as `window.RESIM_SERVE` before its script.
pub fn page(runs: &[ExploreData], serve: Option<&str>) -> String {
    let first = runs.first().expect("a page shows at least one run");
    let title = format!("resim explore · {} · seed {}", first.scenario, first.seed);
    let json = serde_json::to_string(runs).expect("the explorer's data serialises");
    let mut o = String::with_capacity(json.len() + SCRIPT.len() + 4096);
    o.push_str("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n");
    o.push_str("<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n");
    o.push_str(&format!("<title>{}</title>\n", escape(&title)));
    // An empty icon: else the browser asks for `/favicon.ico`, which a served page's server
    // refuses (no token), and a file page's console shows an error.
    o.push_str("<link rel=\"icon\" href=\"data:,\">\n");
    o.push_str(&format!("<style>{STYLE}</style></head>\n<body>\n{BODY}\n"));
    // In a JSON string `<` may be written `\u003c`: the data cannot close its element.
    o.push_str("<script type=\"application/json\" id=\"resim-data\">");
    o.push_str(&json.replace('<', "\\u003c"));
    o.push_str("</script>\n");
    if let Some(serve) = serve {
        o.push_str("<script>window.RESIM_SERVE = ");
        o.push_str(&serve.replace('<', "\\u003c"));
        o.push_str(";</script>\n");
    }
    o.push_str(&format!("<script>{SCRIPT}</script>\n"));
    if serve.is_some() {
        // After the page's own script: it calls `window.resimExplore.show` after a re-run.
        o.push_str(&format!("<script>{SERVE_SCRIPT}</script>\n"));
    }
    o.push_str("</body></html>\n");
    o
}

/// Text with `&`, `<`, `>` and `"` escaped.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
