//! The explorer's local server: bound to 127.0.0.1 only, it answers its own page and nothing
//! else. Every request goes through the same gate before its route ([`State::admit`]):
//!
//! 1. the `Host` is `127.0.0.1:PORT` or `localhost:PORT` (a page of another site whose name
//!    was rebound to 127.0.0.1 sends its own name: DNS rebinding), else 403;
//! 2. an `Origin`, when the browser sends one, is this server's own, else 403 (a page of
//!    another site posting here);
//! 3. the `token` of the printed URL is in the query, else 403.
//!
//! Then `GET /` is the page of the latest run, `GET /progress` how far the run going now is,
//! and `POST /run` (`Content-Type: application/json`, else 415: a plain HTML form cannot send
//! it) re-runs the scenario with the knob values of its body. The body names knobs by their
//! path and gives values only: an unknown knob is 400, a value goes through the same override
//! validation as `--set` and its error comes back as 400 with the same text. One run at a
//! time: a second `POST /run` while one runs is refused (409), never queued, since the page
//! sends the knobs' latest values when the run ends. At most [`CONNECTIONS_MAX`] connections
//! are served at once (503 beyond), each with a read timeout.

use super::http::{Request, Response, read_request, write_response};
use super::{Knob, Progress, Rerun, RunFn, Served};
use crate::format::overrides::{Flag, Override};
use std::io::Read as _;
use std::net::{Ipv4Addr, Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// The most bytes of a `POST /run` body (the knobs' values: a few hundred bytes).
pub const BODY_MAX: usize = 64 * 1024;
/// The most connections served at once.
pub const CONNECTIONS_MAX: usize = 8;
/// How long a connection may stall while its request is read or its answer written.
const STALL_MAX: Duration = Duration::from_secs(10);

/// A server bound to 127.0.0.1, with its token; [`Server::serve`] answers until the process
/// ends.
pub struct Server {
    listener: TcpListener,
    token: String,
}

impl Server {
    /// Binds 127.0.0.1:`port` (0: a free port) and draws the token from the operating
    /// system's entropy (not a simulation's randomness: nothing of a run depends on it).
    pub fn bind(port: u16) -> Result<Server, String> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).map_err(|e| {
            format!(
                "127.0.0.1:{port}: cannot listen: {e}; give another --port, or 0 for a free one"
            )
        })?;
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| format!("cannot draw a token: {e}"))?;
        let token = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(Server { listener, token })
    }

    /// The address it listens on.
    pub fn address(&self) -> SocketAddr {
        self.listener
            .local_addr()
            .expect("a bound listener has an address")
    }

    /// The URL of the page, with the token.
    pub fn url(&self) -> String {
        format!("http://{}/?token={}", self.address(), self.token)
    }

    /// Makes the first run (the file with its `--set`s, the knobs as the file has them),
    /// calls `ready` with the URL, and answers requests until the process ends. An error of
    /// the first run is the command's error.
    pub fn serve(self, knobs: Vec<Knob>, run: &RunFn, ready: &dyn Fn(&str)) -> Result<(), String> {
        let port = self.address().port();
        let progress = Progress::default();
        let values = vec![None; knobs.len()];
        let serve = serve_json(&self.token, &knobs, &values);
        let first = run(
            &Rerun {
                sets: &[],
                serve: &serve,
            },
            &progress,
        )?;
        let state = State {
            token: self.token.clone(),
            port,
            knobs,
            run,
            current: Mutex::new(first),
            running: Mutex::new(()),
            progress,
            connections: AtomicUsize::new(0),
        };
        ready(&self.url());
        std::thread::scope(|scope| {
            for stream in self.listener.incoming() {
                let Ok(mut stream) = stream else {
                    // Out of descriptors, say: the next connection may be served.
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                };
                if state.connections.fetch_add(1, Ordering::SeqCst) >= CONNECTIONS_MAX {
                    state.connections.fetch_sub(1, Ordering::SeqCst);
                    let busy = Response::text(503, "too many connections at once; try again");
                    write_response(&mut stream, &busy);
                    continue;
                }
                let state = &state;
                scope.spawn(move || {
                    state.connection(stream);
                    state.connections.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        Ok(())
    }
}

/// What the connections share.
struct State<'a> {
    token: String,
    port: u16,
    knobs: Vec<Knob>,
    run: &'a RunFn<'a>,
    /// The latest run that succeeded: what `GET /` shows.
    current: Mutex<Served>,
    /// Held while a run is going.
    running: Mutex<()>,
    progress: Progress,
    connections: AtomicUsize,
}

impl State<'_> {
    /// Reads one request from `stream`, answers it and closes the connection.
    fn connection(&self, mut stream: TcpStream) {
        let _ = stream.set_read_timeout(Some(STALL_MAX));
        let _ = stream.set_write_timeout(Some(STALL_MAX));
        let response = match read_request(&mut stream, BODY_MAX) {
            Ok(None) => return,
            Ok(Some(request)) => self.answer(&request),
            Err(refusal) => refusal,
        };
        write_response(&mut stream, &response);
        linger(&mut stream);
    }

    /// The response to `request`: a refusal from the gate, or its route's answer.
    fn answer(&self, request: &Request) -> Response {
        let response = match self.admit(request) {
            Ok(()) => self.route(request),
            Err(refusal) => refusal,
        };
        if response.status != 200 && request.path() != "/favicon.ico" {
            eprintln!(
                "refused {} {}: {} {}",
                request.method,
                request.path(),
                response.status,
                String::from_utf8_lossy(&response.body).trim_end()
            );
        }
        // No other site may frame the page (clickjacking the knobs).
        response.with("Content-Security-Policy", "frame-ancestors 'none'")
    }

    /// The gate every request passes: Host, Origin, token.
    fn admit(&self, request: &Request) -> Result<(), Response> {
        let port = self.port;
        let ours = |host: &str| {
            host == format!("127.0.0.1:{port}")
                || host.eq_ignore_ascii_case(&format!("localhost:{port}"))
        };
        match request.header("host")? {
            Some(host) if ours(host) => {}
            host => {
                return Err(Response::text(
                    403,
                    format!(
                        "Host {:?} refused: this server answers only to 127.0.0.1:{port} or localhost:{port}",
                        host.unwrap_or("")
                    ),
                ));
            }
        }
        if let Some(origin) = request.header("origin")? {
            let own = origin.strip_prefix("http://").is_some_and(ours);
            if !own {
                return Err(Response::text(
                    403,
                    format!(
                        "Origin {origin:?} refused: only the page this server gives may use it (http://127.0.0.1:{port})"
                    ),
                ));
            }
        }
        match request.query("token") {
            Some(token) if same(token, &self.token) => Ok(()),
            Some(_) => Err(Response::text(
                403,
                "the token is not this server's: open the URL resim printed",
            )),
            None => Err(Response::text(
                403,
                "no token: open the URL resim printed (it ends with ?token=…)",
            )),
        }
    }

    /// The answer of an admitted request.
    fn route(&self, request: &Request) -> Response {
        match (request.path(), request.method.as_str()) {
            ("/", "GET") => {
                let page = self.current.lock().expect("no run panics").page.clone();
                Response::ok("text/html; charset=utf-8", page)
            }
            ("/progress", "GET") => Response::ok("application/json", self.progress.json()),
            ("/run", "POST") => self.rerun(request),
            ("/", _) | ("/progress", _) => {
                Response::text(405, "only GET here").with("Allow", "GET")
            }
            ("/run", _) => Response::text(
                405,
                "a run is asked for with POST and a JSON body of knob values",
            )
            .with("Allow", "POST"),
            (path, _) => Response::text(404, format!("{path}: nothing here (the page is /)")),
        }
    }

    /// `POST /run`: the knobs' values read from the body, validated, and the scenario run
    /// with them; the run's digest, replay command and data as JSON (the page redraws from
    /// the data; `GET /` gives the latest run's whole page).
    fn rerun(&self, request: &Request) -> Response {
        let json = request
            .header("content-type")
            .ok()
            .flatten()
            .is_some_and(|t| {
                t.split(';')
                    .next()
                    .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
            });
        if !json {
            return Response::text(
                415,
                "send the knobs as JSON, with Content-Type: application/json",
            );
        }
        let values = match knob_values(&self.knobs, &request.body) {
            Ok(v) => v,
            Err(message) => return Response::text(400, message),
        };
        let Ok(_running) = self.running.try_lock() else {
            return Response::text(409, "a run is going; change the knob again when it ends");
        };
        let sets: Vec<Override> = self
            .knobs
            .iter()
            .zip(&values)
            .filter_map(|(k, v)| {
                v.as_ref().map(|v| Override {
                    path: k.path.clone(),
                    value: v.clone(),
                    flag: Flag::Set,
                })
            })
            .collect();
        let serve = serve_json(&self.token, &self.knobs, &values);
        let result = (self.run)(
            &Rerun {
                sets: &sets,
                serve: &serve,
            },
            &self.progress,
        );
        self.progress.ended();
        match result {
            Ok(served) => {
                eprintln!("ran{}: digest {}", words(&sets), served.digest);
                let body = format!(
                    "{{\"digest\":{},\"replay\":{},\"data\":{}}}",
                    json_string(&served.digest),
                    json_string(&served.replay),
                    served.data
                );
                *self.current.lock().expect("no run panics") = served;
                Response::ok("application/json", body)
            }
            Err(message) => Response::text(400, message),
        }
    }
}

/// Reads what the client still sends (a body refused unread) before the connection closes:
/// closing with unread bytes resets the connection, and the client may lose the answer. At
/// most 1 MiB, each read waiting at most half a second.
fn linger(stream: &mut TcpStream) {
    let _ = stream.shutdown(Shutdown::Write);
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut chunk = [0u8; 16 * 1024];
    for _ in 0..64 {
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
    }
}

/// The `--set` words of knob values, for the log.
fn words(sets: &[Override]) -> String {
    sets.iter().map(|s| format!(" --set '{s}'")).collect()
}

/// A string as JSON.
fn json_string(text: &str) -> String {
    serde_json::Value::String(text.to_string()).to_string()
}

/// Compares two tokens in a time that does not depend on where they first differ.
fn same(given: &str, token: &str) -> bool {
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
}

/// The body of `POST /run`, `{"knobs": {"PATH": "VALUE" | number | null, …}}`, as one value
/// (or none: as in the file) per knob, in the knobs' order; the error names what is wrong.
fn knob_values(knobs: &[Knob], body: &[u8]) -> Result<Vec<Option<String>>, String> {
    use serde_json::Value;
    let shape = "the body is {\"knobs\": {\"PATH\": \"VALUE\", …}}, with paths of the page's knobs";
    let body: Value =
        serde_json::from_slice(body).map_err(|e| format!("the body is not JSON ({e}); {shape}"))?;
    let Value::Object(top) = body else {
        return Err(shape.to_string());
    };
    if let Some(other) = top.keys().find(|k| *k != "knobs") {
        return Err(format!("{other:?}: not a field of a run's body; {shape}"));
    }
    let Some(Value::Object(given)) = top.get("knobs") else {
        return Err(shape.to_string());
    };
    let mut values = vec![None; knobs.len()];
    for (path, value) in given {
        let Some(k) = knobs.iter().position(|k| &k.path == path) else {
            let names: Vec<&str> = knobs.iter().map(|k| k.path.as_str()).collect();
            return Err(format!(
                "{path:?} is not a knob of this page (its knobs: {}); only the paths given to --knob may change",
                names.join(", ")
            ));
        };
        values[k] = match value {
            Value::Null => None,
            Value::String(s) => Some(s.clone()),
            Value::Number(n) => Some(n.to_string()),
            _ => {
                return Err(format!(
                    "{path}: a value is a string as --set takes it (or a number), got {value}"
                ));
            }
        };
    }
    Ok(values)
}

/// What the page's script is told (`window.RESIM_SERVE`): the token, the knobs with their
/// values (null: as in the file), and the routes.
fn serve_json(token: &str, knobs: &[Knob], values: &[Option<String>]) -> String {
    let knobs: Vec<serde_json::Value> = knobs
        .iter()
        .zip(values)
        .map(|(k, v)| {
            serde_json::json!({
                "path": k.path,
                "values": k.values,
                "range": k.range,
                "value": v,
            })
        })
        .collect();
    serde_json::json!({
        "token": token,
        "knobs": knobs,
        "run": format!("/run?token={token}"),
        "progress": format!("/progress?token={token}"),
    })
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn knob(path: &str) -> Knob {
        Knob {
            path: path.to_string(),
            values: vec!["1".into(), "2".into()],
            range: false,
        }
    }

    #[test]
    fn a_body_gives_values_of_the_page_knobs_only() {
        let knobs = [knob("a.b"), knob("c")];
        assert_eq!(
            knob_values(&knobs, br#"{"knobs": {"c": "3", "a.b": null}}"#),
            Ok(vec![None, Some("3".to_string())])
        );
        assert_eq!(
            knob_values(&knobs, br#"{"knobs": {"c": 3}}"#),
            Ok(vec![None, Some("3".to_string())])
        );
        for bad in [
            &br#"{"knobs": {"d": "1"}}"#[..],
            br#"{"knobs": {"c": [1]}}"#,
            br#"{"file": "/etc/passwd", "knobs": {}}"#,
            br#"[1]"#,
            b"knobs=1",
        ] {
            assert!(
                knob_values(&knobs, bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same("abcd", "abcd"));
        assert!(!same("abce", "abcd"));
        assert!(!same("abc", "abcd"));
    }
}
