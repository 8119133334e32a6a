//! Values as a shell leaves them: a duration or a rate typed without RON's quotes (`30s`,
//! `1.5s`, `1m30s`, `500/s`, `Constant(3000/s)`, `Exponential(mean: 5ms)`) is quoted before
//! it is read, so `--set duration="30s"`, which the shell turns into `duration=30s`, means what
//! it says. The rule is a lexer rule, not a guess about the field: a number immediately
//! followed by a unit, or by `/` and a unit, is never valid RON, so quoting it changes no
//! value that RON would read; valid RON (`32`, `1e3`, `0x10`, `1u8`, `"30s"`) is left as it is.

use crate::format::read::{Kind, Token, lex};
use std::borrow::Cow;

/// `typed` with every duration or rate written without quotes put in quotes.
pub(crate) fn quote_units(typed: &str) -> Cow<'_, str> {
    let tokens = lex(typed);
    let mut out = String::new();
    let mut copied = 0;
    let mut i = 0;
    while i < tokens.len() {
        if !starts_number(typed, &tokens[i]) {
            i += 1;
            continue;
        }
        // The run of tokens that touch each other and could belong to a duration or a rate.
        let mut j = i + 1;
        while j < tokens.len()
            && tokens[j].start == tokens[j - 1].end
            && matches!(tokens[j].kind, Kind::Name | Kind::Other)
            && unit_like(&typed[tokens[j].start..tokens[j].end])
        {
            j += 1;
        }
        let (lo, hi) = (tokens[i].start, tokens[j - 1].end);
        let run = &typed[lo..hi];
        let quote = unit_like(run)
            && run.chars().any(|c| c.is_alphabetic() || c == '/')
            && !(j == i + 1 && ron_number(run));
        if quote {
            out.push_str(&typed[copied..lo]);
            out.push('"');
            out.push_str(run);
            out.push('"');
            copied = hi;
        }
        i = j;
    }
    if copied == 0 {
        return Cow::Borrowed(typed);
    }
    out.push_str(&typed[copied..]);
    Cow::Owned(out)
}

/// A token that starts like a number: a digit, or a sign or a point before one.
fn starts_number(text: &str, t: &Token) -> bool {
    if t.kind != Kind::Other {
        return false;
    }
    let s = &text[t.start..t.end];
    let digits = s.trim_start_matches(['-', '+', '.']);
    digits.len() + 1 >= s.len() && digits.starts_with(|c: char| c.is_ascii_digit())
}

/// Only what a duration or a rate is written with: digits, letters (`µ` too), `.`, `_`, `/`
/// and signs. Anything else (quotes, backslashes, brackets) ends the run, so the quoted text
/// needs no escapes.
fn unit_like(s: &str) -> bool {
    s.chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | '+' | 'µ'))
}

/// Whether RON reads `s` as a number: decimal (with a fraction and an exponent), hexadecimal,
/// octal or binary, with a type suffix or not.
fn ron_number(s: &str) -> bool {
    let s = s.trim_start_matches(['-', '+']);
    const SUFFIXES: [&str; 14] = [
        "i8", "i16", "i32", "i64", "i128", "isize", "u8", "u16", "u32", "u64", "u128", "usize",
        "f32", "f64",
    ];
    let s = SUFFIXES
        .iter()
        .find_map(|x| s.strip_suffix(x))
        .filter(|rest| !rest.is_empty())
        .unwrap_or(s);
    for (prefix, radix) in [("0x", 16), ("0o", 8), ("0b", 2)] {
        if let Some(digits) = s.strip_prefix(prefix) {
            return !digits.is_empty() && digits.chars().all(|c| c == '_' || c.is_digit(radix));
        }
    }
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(at) => (&s[..at], Some(&s[at + 1..])),
        None => (s, None),
    };
    let decimal = |d: &str| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit() || c == '_');
    let mantissa_ok = match mantissa.split_once('.') {
        Some((whole, fraction)) => {
            (decimal(whole) || whole.is_empty())
                && (fraction.is_empty() || decimal(fraction))
                && !(whole.is_empty() && fraction.is_empty())
        }
        None => decimal(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| decimal(e.trim_start_matches(['-', '+'])))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_get_quotes_and_ron_stays_as_it_is() {
        for (typed, ron) in [
            ("30s", "\"30s\""),
            ("250ms", "\"250ms\""),
            ("1.5s", "\"1.5s\""),
            ("1m30s", "\"1m30s\""),
            ("2µs", "\"2µs\""),
            ("-1s", "\"-1s\""),
            ("500/s", "\"500/s\""),
            ("1e-3/s", "\"1e-3/s\""),
            ("Constant(3000/s)", "Constant(\"3000/s\")"),
            ("Exponential(mean: 5ms)", "Exponential(mean: \"5ms\")"),
            ("[1s, 2s,3s]", "[\"1s\", \"2s\",\"3s\"]"),
            (
                "(at: 30s, kind: Crash(service: \"api\"))",
                "(at: \"30s\", kind: Crash(service: \"api\"))",
            ),
            ("\"30s\"", "\"30s\""),
            ("32", "32"),
            ("1.5", "1.5"),
            ("1e3", "1e3"),
            ("1E-3", "1E-3"),
            ("0x1F", "0x1F"),
            ("0b101", "0b101"),
            ("7u8", "7u8"),
            ("2.5f64", "2.5f64"),
            ("1_000", "1_000"),
            ("-4", "-4"),
            ("inf", "inf"),
            ("Full", "Full"),
            ("s30", "s30"),
            ("\"a 30s b\"", "\"a 30s b\""),
            ("// 30s\n3", "// 30s\n3"),
            ("1.2.3", "1.2.3"),
        ] {
            assert_eq!(quote_units(typed), ron, "{typed}");
        }
    }
}
