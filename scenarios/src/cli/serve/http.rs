//! The HTTP/1.1 of the explorer's server: one request read within limits, one response
//! written, then the connection is closed (`Connection: close`; no keep-alive, no pipelining).
//!
//! The request head is parsed by `httparse` (hyper's parser: strict, no allocation, fuzzed);
//! what is around it is ours because the server must refuse before it reads: a head over
//! [`HEAD_MAX`] bytes or [`HEADERS_MAX`] headers is 431, a body over its limit is 413 from its
//! `Content-Length` (never read), a chunked body is refused (411: the page always sends a
//! length), and a client that stalls is dropped by the socket's read timeout.

use std::io::{Read, Write};

/// The most bytes of a request's head (request line and headers).
pub const HEAD_MAX: usize = 16 * 1024;
/// The most headers of a request.
pub const HEADERS_MAX: usize = 48;

/// One request as read: the method, the target (path and query), the headers (names in
/// lower case, values as UTF-8) and the body.
#[derive(Debug)]
pub struct Request {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    /// The value of the header `name` (lower case); `Err` when it is given twice with
    /// different values (an attacker's ambiguity, refused rather than guessed).
    pub fn header(&self, name: &str) -> Result<Option<&str>, Response> {
        let mut found: Option<&str> = None;
        for (n, v) in &self.headers {
            if n == name {
                match found {
                    Some(f) if f != v => {
                        return Err(Response::text(
                            400,
                            format!("the {name} header is given twice with different values"),
                        ));
                    }
                    _ => found = Some(v),
                }
            }
        }
        Ok(found)
    }

    /// The path of the target, without its query.
    pub fn path(&self) -> &str {
        self.target.split_once('?').map_or(&self.target, |(p, _)| p)
    }

    /// The value of the query parameter `name` (as written: the token is hex, so nothing in
    /// it is percent-encoded).
    pub fn query(&self, name: &str) -> Option<&str> {
        let (_, query) = self.target.split_once('?')?;
        query
            .split('&')
            .filter_map(|pair| pair.split_once('='))
            .find_map(|(k, v)| (k == name).then_some(v))
    }
}

/// A response: its status, content type, extra headers and body.
#[derive(Debug)]
pub struct Response {
    pub status: u16,
    pub content_type: &'static str,
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

impl Response {
    /// A plain-text response (what every refusal is: the page shows it as it is).
    pub fn text(status: u16, message: impl Into<String>) -> Response {
        let mut body = message.into();
        body.push('\n');
        Response {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }

    /// A response of `content_type` with `body`, status 200.
    pub fn ok(content_type: &'static str, body: String) -> Response {
        Response {
            status: 200,
            content_type,
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }

    /// The same response with one more header.
    pub fn with(mut self, name: &'static str, value: impl Into<String>) -> Response {
        self.headers.push((name, value.into()));
        self
    }
}

/// The reason phrase of the statuses this server gives.
fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        415 => "Unsupported Media Type",
        431 => "Request Header Fields Too Large",
        503 => "Service Unavailable",
        _ => "Error",
    }
}

/// Reads one request from `stream`, its body at most `body_max` bytes. `Ok(None)` when the
/// client went away (or stalled past the read timeout) before a whole request: nothing to
/// answer. `Err` is the refusal to send.
pub fn read_request(stream: &mut impl Read, body_max: usize) -> Result<Option<Request>, Response> {
    let Some((mut buffer, head_end)) = read_head(stream)? else {
        return Ok(None);
    };
    let mut slots = [httparse::EMPTY_HEADER; HEADERS_MAX];
    let mut parsed = httparse::Request::new(&mut slots);
    match parsed.parse(&buffer[..head_end]) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => {
            return Err(Response::text(400, "the request's head is incomplete"));
        }
        Err(httparse::Error::TooManyHeaders) => return Err(too_large_head()),
        Err(e) => {
            return Err(Response::text(400, format!("a malformed request: {e}")));
        }
    }
    let headers = parsed
        .headers
        .iter()
        .map(|h| {
            let value = std::str::from_utf8(h.value)
                .map_err(|_| Response::text(400, format!("the {} header is not UTF-8", h.name)))?;
            Ok((h.name.to_ascii_lowercase(), value.trim().to_string()))
        })
        .collect::<Result<Vec<_>, Response>>()?;
    let mut request = Request {
        method: parsed.method.unwrap_or_default().to_string(),
        target: parsed.path.unwrap_or_default().to_string(),
        headers,
        body: Vec::new(),
    };
    if request.header("transfer-encoding")?.is_some() {
        return Err(Response::text(
            411,
            "a body must come with a Content-Length, not a Transfer-Encoding",
        ));
    }
    let length = match request.header("content-length")? {
        None => 0,
        Some(text) => text.parse::<u64>().map_err(|_| {
            Response::text(
                400,
                format!("Content-Length {text:?} is not a whole number"),
            )
        })?,
    };
    if length > body_max as u64 {
        return Err(Response::text(
            413,
            format!("the body is {length} bytes; at most {body_max} are taken"),
        ));
    }
    let length = length as usize;
    let mut body = buffer.split_off(head_end);
    body.truncate(length);
    if body.len() < length {
        let mut rest = vec![0u8; length - body.len()];
        if stream.read_exact(&mut rest).is_err() {
            return Ok(None);
        }
        body.extend_from_slice(&rest);
    }
    request.body = body;
    Ok(Some(request))
}

/// The bytes read until the head's blank line (perhaps with the body's first bytes after it),
/// and where the head ends; `None` when the client went away first.
fn read_head(stream: &mut impl Read) -> Result<Option<(Vec<u8>, usize)>, Response> {
    let mut buffer = Vec::with_capacity(1024);
    loop {
        if let Some(end) = find_head_end(&buffer) {
            if end > HEAD_MAX {
                return Err(too_large_head());
            }
            return Ok(Some((buffer, end)));
        }
        if buffer.len() >= HEAD_MAX {
            return Err(too_large_head());
        }
        let mut chunk = [0u8; 2048];
        match stream.read(&mut chunk) {
            Ok(0) | Err(_) => return Ok(None),
            Ok(n) => buffer.extend_from_slice(&chunk[..n]),
        }
    }
}

fn too_large_head() -> Response {
    Response::text(
        431,
        format!("the request's head is over {HEAD_MAX} bytes or {HEADERS_MAX} headers"),
    )
}

/// Where the head ends (after its blank line), if it has.
fn find_head_end(buffer: &[u8]) -> Option<usize> {
    buffer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
}

/// Writes `response` and closes the exchange; a client gone before it is read is not an
/// error of the server's.
pub fn write_response(stream: &mut impl Write, response: &Response) {
    let mut head = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n\
         Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n\
         Referrer-Policy: no-referrer\r\n",
        response.status,
        reason(response.status),
        response.content_type,
        response.body.len()
    );
    for (name, value) in &response.headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream
        .write_all(head.as_bytes())
        .and_then(|()| stream.write_all(&response.body))
        .and_then(|()| stream.flush());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<Option<Request>, Response> {
        read_request(&mut text.as_bytes(), 100)
    }

    #[test]
    fn a_request_is_read_with_its_body() {
        let r = read("POST /run?token=ab HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}")
            .unwrap()
            .unwrap();
        assert_eq!((r.method.as_str(), r.path()), ("POST", "/run"));
        assert_eq!(r.query("token"), Some("ab"));
        assert_eq!(r.body, b"{}");
    }

    #[test]
    fn limits_and_malformed_heads_are_refused() {
        let status = |t: &str| read(t).err().map(|r| r.status);
        assert_eq!(
            status("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n"),
            Some(413)
        );
        assert_eq!(
            status("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"),
            Some(411)
        );
        assert_eq!(status("GARBAGE\r\n\r\n"), Some(400));
        let twice = read("GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n")
            .unwrap()
            .unwrap();
        assert_eq!(twice.header("host").err().map(|r| r.status), Some(400));
        let long = format!("GET / HTTP/1.1\r\nX: {}\r\n\r\n", "a".repeat(HEAD_MAX));
        assert_eq!(status(&long), Some(431));
        assert!(read("GET / HTTP/1.1\r\n").unwrap().is_none());
    }
}
