//! `resim explore FILE --serve`, over real loopback TCP: the binary is started on port 0, the
//! URL it prints is read, and each request is written by hand, as a browser (or an attacker)
//! would send it. A run's digest is compared with what `resim run` prints for the same
//! flags, never with a constant.

use crate::support::resim;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Ipv4Addr, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// A short run of a library scenario (3 s, no fault): the flags of every test.
const FILE: &str = "retry-storm";
const SETS: [&str; 8] = [
    "--seed",
    "3",
    "--set",
    "duration=3s",
    "--set",
    "faults=[]",
    "--set",
    "expectations=[]",
];
const KNOB: &str = "services.db.workers=8,16,32";

/// A server started for one test; killed when the test ends.
struct Server {
    child: Child,
    client: Client,
}

/// What a request needs: where, and the token.
#[derive(Clone)]
struct Client {
    port: u16,
    token: String,
}

impl std::ops::Deref for Server {
    type Target = Client;

    fn deref(&self) -> &Client {
        &self.client
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `resim explore FILE --serve --port 0 ARGS`, once it has printed its URL.
fn serve(args: &[&str]) -> Server {
    let mut all = vec!["explore", FILE, "--serve", "--port", "0"];
    all.extend(args);
    start(&all).0
}

/// `resim ARGS` (a server), once it has printed its URL; and the lines it printed.
fn start(args: &[&str]) -> (Server, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_resim"))
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("resim starts");
    // Owned by the server from here: a failed check below kills it too.
    let mut server = Server {
        client: Client {
            port: 0,
            token: String::new(),
        },
        child,
    };
    let mut line = String::new();
    let mut stdout = BufReader::new(server.child.stdout.take().expect("stdout is piped"));
    stdout.read_line(&mut line).expect("resim prints its URL");
    let mut printed = line.clone();
    stdout.read_line(&mut printed).expect("and a second line");
    // "serving FILE at http://127.0.0.1:PORT/?token=TOKEN"
    let url = line
        .split_whitespace()
        .last()
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    let rest = url
        .strip_prefix("http://127.0.0.1:")
        .unwrap_or_else(|| panic!("the URL is not on 127.0.0.1: {url}"));
    let (port, token) = rest.split_once("/?token=").expect("the URL has a token");
    server.client = Client {
        port: port.parse().expect("a port"),
        token: token.to_string(),
    };
    (server, printed)
}

/// One request as written on the wire.
struct Ask<'a> {
    method: &'a str,
    target: String,
    host: String,
    headers: Vec<(&'a str, &'a str)>,
    body: String,
}

impl Client {
    /// A request the page would make: its Host, the token in the query.
    fn ask<'a>(&self, method: &'a str, path: &str) -> Ask<'a> {
        Ask {
            method,
            target: format!("{path}?token={}", self.token),
            host: format!("127.0.0.1:{}", self.port),
            headers: Vec::new(),
            body: String::new(),
        }
    }

    /// The status and body of the answer to `ask`.
    fn send(&self, ask: &Ask) -> (u16, String) {
        self.exchange(ask)
            .unwrap_or_else(|| panic!("no whole answer to {} {}", ask.method, ask.target))
    }

    /// [`Client::send`], or `None` when the connection ends before a whole answer.
    fn exchange(&self, ask: &Ask) -> Option<(u16, String)> {
        let mut stream = TcpStream::connect((Ipv4Addr::LOCALHOST, self.port)).ok()?;
        stream
            .set_read_timeout(Some(Duration::from_secs(120)))
            .ok()?;
        let mut head = format!(
            "{} {} HTTP/1.1\r\nHost: {}\r\nContent-Length: {}\r\n",
            ask.method,
            ask.target,
            ask.host,
            ask.body.len()
        );
        for (n, v) in &ask.headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        // The server may refuse before reading a large body: what it wrote is still there.
        let _ = stream
            .write_all(head.as_bytes())
            .and_then(|()| stream.write_all(ask.body.as_bytes()));
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        let answer = String::from_utf8(answer).ok()?;
        let (head, body) = answer.split_once("\r\n\r\n")?;
        let status = head.split_whitespace().nth(1)?.parse().ok()?;
        Some((status, body.to_string()))
    }

    /// A run with `knobs` (a JSON object), as the page posts it.
    fn run(&self, knobs: &str) -> (u16, String) {
        self.send(&self.rerun(knobs))
    }

    /// The request of [`Client::run`].
    fn rerun(&self, knobs: &str) -> Ask<'static> {
        let mut ask = self.ask("POST", "/run");
        ask.headers.push(("Content-Type", "application/json"));
        ask.body = format!("{{\"knobs\": {knobs}}}");
        ask
    }
}

/// The answer to `ask` has `status`, and its body contains `words`.
fn check(server: &Client, ask: &Ask, status: u16, words: &str) {
    let (got, body) = server.send(ask);
    assert_eq!(
        got, status,
        "{} {} (Host {}): {body}",
        ask.method, ask.target, ask.host
    );
    assert!(body.contains(words), "{words:?} not in: {body}");
}

/// The digest `resim run FILE` prints with the tests' flags and `more`.
fn digest_of_run(more: &[&str]) -> String {
    let mut args = vec!["run", FILE, "--json"];
    args.extend(SETS);
    args.extend(more);
    let out = resim(&args);
    let json: serde_json::Value = serde_json::from_str(&out.stdout).expect("JSON");
    json["digest"].as_str().expect("a digest").to_string()
}

#[test]
fn the_page_is_served_with_the_token_and_refused_without() {
    let server = serve(&[&SETS[..], &["--knob", KNOB]].concat());
    let page = server.ask("GET", "/");
    check(&server, &page, 200, "window.RESIM_SERVE = ");
    check(&server, &page, 200, "services.db.workers");
    let mut bare = server.ask("GET", "/");
    bare.target = "/".to_string();
    check(&server, &bare, 403, "no token");
    bare.target = format!("/?token={}", "0".repeat(server.token.len()));
    check(&server, &bare, 403, "the token is not this server's");
    bare.target = format!("/run?token={}0", server.token);
    check(&server, &bare, 403, "the token is not this server's");
}

#[test]
fn foreign_hosts_are_refused() {
    let server = serve(&SETS);
    let mut ask = server.ask("GET", "/");
    // DNS rebinding: another site's name resolved to 127.0.0.1 arrives with that name.
    ask.host = format!("rebind.example:{}", server.port);
    check(&server, &ask, 403, "Host \"rebind.example");
    ask.host = format!("localhost:{}", server.port + 1);
    check(&server, &ask, 403, "Host");
    ask.host = format!("localhost:{}", server.port);
    check(&server, &ask, 200, "RESIM_SERVE");
}

#[test]
fn foreign_origins_are_refused() {
    let server = serve(&SETS);
    // Another page posting here: the browser names its origin.
    let mut post = server.ask("POST", "/run");
    post.headers = vec![
        ("Content-Type", "application/json"),
        ("Origin", "http://evil.example"),
    ];
    post.body = "{\"knobs\": {}}".to_string();
    check(
        &server,
        &post,
        403,
        "Origin \"http://evil.example\" refused",
    );
    post.headers[1].1 = "null";
    check(&server, &post, 403, "Origin \"null\" refused");
    let own = format!("http://127.0.0.1:{}", server.port);
    post.headers[1].1 = &own;
    check(&server, &post, 200, "\"digest\"");
}

#[test]
fn a_rerun_is_a_post_of_json() {
    let server = serve(&[&SETS[..], &["--knob", KNOB]].concat());
    check(&server, &server.ask("GET", "/run"), 405, "POST");
    // What a plain HTML form on another page could send.
    let mut form = server.ask("POST", "/run");
    form.headers = vec![("Content-Type", "application/x-www-form-urlencoded")];
    form.body = "knobs=1".to_string();
    check(&server, &form, 415, "application/json");
    form.headers = vec![("Content-Type", "text/plain")];
    form.body = "{\"knobs\": {}}".to_string();
    check(&server, &form, 415, "application/json");
}

#[test]
fn oversized_malformed_and_foreign_bodies_are_refused() {
    let server = serve(&[&SETS[..], &["--knob", KNOB]].concat());
    let mut big = server.ask("POST", "/run");
    big.headers = vec![("Content-Type", "application/json")];
    big.body = format!("{{\"knobs\": {{}}, \"x\": \"{}\"}}", "a".repeat(70_000));
    check(&server, &big, 413, "at most 65536");
    let (status, body) = server.run("{\"services.api.workers\": \"4\"}");
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("not a knob of this page"), "{body}");
    let mut malformed = server.ask("POST", "/run");
    malformed.headers = vec![("Content-Type", "application/json")];
    malformed.body = "{\"knobs\": ".to_string();
    check(&server, &malformed, 400, "not JSON");
    // The server is still there after all of it.
    check(&server, &server.ask("GET", "/"), 200, "RESIM_SERVE");
}

#[test]
fn a_knob_value_that_set_refuses_is_refused_with_the_same_error() {
    let server = serve(&[&SETS[..], &["--knob", KNOB]].concat());
    let (status, body) = server.run("{\"services.db.workers\": \"0\"}");
    let mut args = vec!["run", FILE];
    args.extend(SETS);
    args.extend(["--set", "services.db.workers=0"]);
    let cli = resim(&args);
    assert_eq!(cli.code, 2);
    assert_eq!((status, body.trim()), (400, cli.stderr.trim()));
    assert!(body.contains("services.db.workers=0"), "{body}");
}

#[test]
fn a_knob_change_gives_the_digest_of_resim_run_with_its_set() {
    let server = serve(&[&SETS[..], &["--knob", KNOB]].concat());
    let (status, body) = server.run("{\"services.db.workers\": \"8\"}");
    assert_eq!(status, 200, "{body}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    let expected = digest_of_run(&["--set", "services.db.workers=8"]);
    assert_eq!(answer["digest"], expected.as_str());
    assert_eq!(answer["data"]["digest"], expected.as_str());
    assert_ne!(expected, digest_of_run(&[]), "the knob changes the run");
    let replay = answer["replay"].as_str().expect("a replay command");
    assert!(
        replay.ends_with("--set 'services.db.workers=8'"),
        "{replay}"
    );
    // Back to the file as given: its own digest.
    let (_, body) = server.run("{\"services.db.workers\": null}");
    let answer: serde_json::Value = serde_json::from_str(&body).expect("JSON");
    assert_eq!(answer["digest"], digest_of_run(&[]).as_str());
}

#[test]
fn the_server_listens_on_127_0_0_1_only() {
    let server = serve(&SETS);
    // Another loopback address of this machine reaches a server bound to 0.0.0.0 or to all
    // interfaces, and not one bound to 127.0.0.1.
    let elsewhere = TcpStream::connect(("127.0.0.2", server.port));
    assert!(elsewhere.is_err(), "127.0.0.2:{} answers", server.port);
    assert!(TcpStream::connect(("::1", server.port)).is_err());
    check(&server, &server.ask("GET", "/"), 200, "RESIM_SERVE");
}

#[test]
fn one_run_at_a_time_with_its_progress() {
    // The first run is 3 s; the knob asks for a long one, to be caught while it goes.
    let server = serve(&[&SETS[..], &["--knob", "duration=3s,600s"]].concat());
    let client = server.client.clone();
    // Not joined: the server is killed under it when the test ends.
    std::thread::spawn(move || client.exchange(&client.rerun("{\"duration\": \"600s\"}")));
    let mut progress = serde_json::Value::Null;
    for _ in 0..400 {
        let (_, body) = server.send(&server.ask("GET", "/progress"));
        progress = serde_json::from_str(&body).expect("JSON");
        if progress["events"].as_u64() > Some(0) {
            break;
        }
        std::thread::sleep(Duration::from_millis(25));
    }
    assert_eq!(progress["running"], true, "{progress}");
    assert_eq!(progress["duration_s"], 600.0, "{progress}");
    assert!(progress["simulated_s"].as_f64() > Some(0.0), "{progress}");
    let (status, body) = server.run("{\"duration\": \"3s\"}");
    assert_eq!(status, 409, "{body}");
    assert!(body.contains("a run is going"), "{body}");
}

#[test]
fn a_bad_knob_is_the_command_s_error() {
    for (knob, words) in [
        ("services.api.workers=0,4", "must be at least 1, got 0"),
        ("services.nope.workers=4", "services.nope"),
        ("services.api.workers", "PATH="),
    ] {
        let out = resim(&["explore", FILE, "--serve", "--knob", knob]);
        assert_eq!(out.code, 2, "{knob}: {}", out.stderr);
        assert!(
            out.stderr.contains("--knob") && out.stderr.contains(words),
            "{knob}: {}",
            out.stderr
        );
    }
}

/// Words of a shell command line, with single quotes.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word: Option<String> = None;
    let mut quoted = false;
    for c in line.chars() {
        if c == '\'' {
            quoted = !quoted;
            word.get_or_insert_with(String::new);
        } else if c.is_whitespace() && !quoted {
            words.extend(word.take());
        } else {
            word.get_or_insert_with(String::new).push(c);
        }
    }
    words.extend(word);
    words
}

#[test]
fn the_book_shows_what_the_server_prints_and_answers() {
    let chapter =
        std::fs::read_to_string(crate::support::workspace_root().join("book/src/exploring.md"))
            .expect("the chapter");
    let (_, section) = chapter
        .split_once("## What-if on your machine")
        .expect("the chapter's section on --serve");
    let blocks: Vec<&str> = section
        .split("```console\n")
        .skip(1)
        .map(|b| b.split("```").next().expect("a closed block"))
        .collect();
    assert_eq!(blocks.len(), 3, "the command and two refusals");
    let (command, printed) = blocks[0]
        .split_once('\n')
        .expect("a command and its output");
    let words = shell_words(command.strip_prefix("$ resim ").expect("a resim command"));
    let shown_port = words[words.iter().position(|w| w == "--port").expect("--port") + 1].clone();
    let args: Vec<&str> = words
        .iter()
        .map(|w| if *w == shown_port { "0" } else { w.as_str() })
        .collect();
    let (server, got) = start(&args);
    let shown_token = printed
        .split("?token=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .expect("a token in the book");
    let as_shown = |text: &str| {
        text.replace(
            &format!("127.0.0.1:{}", server.port),
            &format!("127.0.0.1:{shown_port}"),
        )
        .replace(&server.token, shown_token)
    };
    assert_eq!(as_shown(&got), printed);
    // The refusals, sent as curl sends them.
    let mut foreign = server.ask("POST", "/run");
    foreign.headers = vec![
        ("Content-Type", "application/json"),
        ("Origin", "http://evil.example"),
    ];
    foreign.body = "{\"knobs\": {}}".to_string();
    let (status, body) = server.send(&foreign);
    assert_eq!(status, 403);
    assert_eq!(
        blocks[1].lines().nth(1),
        Some(as_shown(body.trim()).as_str())
    );
    assert!(blocks[1].contains("Origin: http://evil.example"));
    let (status, body) = server.run("{\"services.db.workers\": \"0\"}");
    assert_eq!(status, 400);
    assert_eq!(blocks[2].lines().nth(1), Some(body.trim()));
    assert!(blocks[2].contains("{\"knobs\": {\"services.db.workers\": \"0\"}}"));
}
