//! Documents checked against the formats' published schemas, vendored in
//! `scenarios/tests/schemas/` (its README says where each comes from and how it was made):
//! field names, types, enums, required fields and ranges, as the format's own reader
//! applies them.
//!
//! - **Istio**: the OpenAPI v3 schemas of `DestinationRule` and `VirtualService` from Istio's
//!   CRDs. An object with `properties` is closed, as `kubectl apply` (strict field
//!   validation, its default) refuses an unknown field; its CEL rules (the duration rule,
//!   `duration(self) >= duration('1ms')`, and the three on a workload selector's labels: no
//!   `*`, no empty key) are written here as checks, each by its rule's text (a CEL crate would
//!   be a large dependency for four expressions), and a rule not among them is a panic.
//! - **Envoy** and **gRPC**: schemas derived from the protos (`proto_schema.py`) as the
//!   proto3 JSON mapping reads a message: closed objects, each field under its proto name or
//!   its lowerCamelCase name, at most one field of a oneof, enums by name or number, `Any`
//!   checked against the message its `@type` names. gRPC's [`Reader::GrpcGo`] matches names
//!   case-insensitively, as grpc-go's `encoding/json` does. protoc-gen-validate's ranges on
//!   the fields export writes (`gt {}` on durations, `lte: 100` on a percentage, …) are in
//!   `ranges`, each with its proto file and line.
//! - **resilience4j**: the setters Spring binds `resilience4j.<module>.…` to
//!   (`spring_schema.py`), with Spring's relaxed names (`max-attempts` is `maxAttempts`),
//!   dotted YAML keys and `.properties` files, and the values Spring converts (a `.properties`
//!   value is text: `"3"` is an integer, `10s` a duration, `1.5s` none).
//!
//! `document` reads a text into the tree checked; `values` reads the values each format
//! converts (durations, integers as text).
//!
//! A keyword the checker does not know is a panic: a schema updated with a new keyword must
//! not pass unchecked.

use scenarios::export::TargetFormat;
use serde_json::{Map, Value};
use std::sync::OnceLock;

mod document;
mod ranges;
mod values;

use document::document;
use values::{camel, format_ok, go_duration_ns, relaxed, spring_duration};

/// Which implementation reads the document: names are matched as it matches them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reader {
    /// The format's own parser (protobuf's JSON mapping, Kubernetes, Spring).
    Strict,
    /// grpc-go, whose service config keys match case-insensitively (`"MaxAttempts"`).
    GrpcGo,
}

/// The problems of `text` (the document `file` in `format`) against its schema: empty when
/// it conforms. Each problem is `FILE: PATH: what`.
pub fn problems(format: TargetFormat, file: &str, text: &str, reader: Reader) -> Vec<String> {
    let mut check = Check {
        root: schema(format),
        closed: format == TargetFormat::Istio,
        names: match (format, reader) {
            (TargetFormat::Resilience4j, _) => Names::Spring,
            (_, Reader::GrpcGo) => Names::CaseInsensitive,
            _ => Names::Exact,
        },
        errors: Vec::new(),
    };
    match document(format, file, text) {
        Ok(doc) => match format {
            TargetFormat::Envoy => check.envoy(&doc),
            TargetFormat::Istio => check.istio(&doc, ""),
            TargetFormat::Grpc => check.message("grpc.service_config.ServiceConfig", &doc, ""),
            TargetFormat::Resilience4j => check.value(check.root, &doc, ""),
        },
        Err(e) => check.fail("", e),
    }
    check
        .errors
        .into_iter()
        .map(|e| format!("{file}: {}", e.strip_prefix('.').unwrap_or(&e)))
        .collect()
}

/// The vendored schema of `format`; Istio's two kinds under `definitions`.
fn schema(format: TargetFormat) -> &'static Value {
    static SCHEMAS: OnceLock<[Value; 4]> = OnceLock::new();
    let all = SCHEMAS.get_or_init(|| {
        let read = |name: &str| -> Value {
            let path = super::workspace_root()
                .join("scenarios/tests/schemas")
                .join(name);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        };
        let mut istio = Map::new();
        istio.insert("DestinationRule".into(), read("istio-destinationrule.json"));
        istio.insert("VirtualService".into(), read("istio-virtualservice.json"));
        [
            read("envoy.json"),
            serde_json::json!({ "definitions": istio }),
            read("resilience4j.json"),
            read("grpc.json"),
        ]
    });
    &all[match format {
        TargetFormat::Envoy => 0,
        TargetFormat::Istio => 1,
        TargetFormat::Resilience4j => 2,
        TargetFormat::Grpc => 3,
    }]
}

/// How a document's key is matched to a schema's property name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Names {
    Exact,
    CaseInsensitive,
    /// Spring's relaxed binding: case, `-` and `_` do not count.
    Spring,
}

struct Check {
    root: &'static Value,
    /// An object with `properties` and no `additionalProperties` is closed (Kubernetes).
    closed: bool,
    names: Names,
    errors: Vec<String>,
}

const KEYWORDS: &[&str] = &[
    "type",
    "properties",
    "additionalProperties",
    "required",
    "enum",
    "items",
    "oneOf",
    "anyOf",
    "allOf",
    "not",
    "minimum",
    "maximum",
    "maxItems",
    "maxLength",
    "maxProperties",
    "format",
    "nullable",
    "$ref",
    "x-kubernetes-int-or-string",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-validations",
    "x-proto-json-names",
    "x-proto-any",
    "x-oneofs",
    "x-deprecated",
    "x-spring",
    // Of the root only: what the schema is and how it was made.
    "definitions",
    "x-roots",
    "x-unresolved",
    "x-spring-relaxed-names",
];

impl Check {
    fn fail(&mut self, path: &str, what: impl std::fmt::Display) {
        let path = if path.is_empty() {
            "(the document)"
        } else {
            path
        };
        self.errors.push(format!("{path}: {what}"));
    }

    /// An Envoy document: xDS `resources`, a bootstrap, or one resource with its `@type`.
    fn envoy(&mut self, doc: &Value) {
        match doc {
            Value::Object(o) if o.contains_key("resources") => {
                let any = serde_json::json!({ "x-proto-any": true });
                let list = serde_json::json!({ "type": "array", "items": any });
                self.value(&list, &doc["resources"], ".resources");
            }
            Value::Object(o) if o.contains_key("@type") => {
                self.value(&serde_json::json!({ "x-proto-any": true }), doc, "")
            }
            _ => self.message("envoy.config.bootstrap.v3.Bootstrap", doc, ""),
        }
    }

    /// An Istio document, a list of them (several YAML documents, or `kind: List`).
    fn istio(&mut self, doc: &Value, path: &str) {
        if let Value::Array(docs) = doc {
            for (i, d) in docs.iter().enumerate() {
                self.istio(d, &format!("{path}[{i}]"));
            }
            return;
        }
        if doc["kind"] == "List" {
            return self.istio(&doc["items"], &format!("{path}.items"));
        }
        let api = doc["apiVersion"].as_str().unwrap_or_default();
        if !["v1", "v1beta1", "v1alpha3"].contains(&api.trim_start_matches("networking.istio.io/"))
            || !api.starts_with("networking.istio.io/")
        {
            self.fail(
                &format!("{path}.apiVersion"),
                format!("not networking.istio.io/v1 (or v1beta1, v1alpha3): {api:?}"),
            );
        }
        let kind = doc["kind"].as_str().unwrap_or_default();
        let Some(schema) = self.root["definitions"].get(kind) else {
            return self.fail(
                &format!("{path}.kind"),
                format!("not DestinationRule or VirtualService: {kind:?}"),
            );
        };
        if !doc["metadata"]["name"].is_string() {
            self.fail(
                &format!("{path}.metadata.name"),
                "a name is required (a string)",
            );
        }
        let mut body = doc.as_object().cloned().unwrap_or_default();
        for k in ["apiVersion", "kind", "metadata"] {
            body.remove(k);
        }
        self.value(schema, &Value::Object(body), path);
    }

    fn message(&mut self, name: &str, value: &Value, path: &str) {
        let schema = &self.root["definitions"][name];
        assert!(!schema.is_null(), "{name} is not in the schema's extract");
        self.value(schema, value, path);
        if let Value::Object(o) = value {
            for (key, what) in ranges::out_of_range(name, o) {
                self.fail(&format!("{path}.{key}"), what);
            }
        }
    }

    /// `value` at `path` against `schema`.
    fn value(&mut self, schema: &Value, value: &Value, path: &str) {
        let Some(s) = schema.as_object() else {
            assert!(
                schema == &Value::Bool(true),
                "a schema is an object: {schema}"
            );
            return;
        };
        if let Some(k) = s.keys().find(|k| !KEYWORDS.contains(&k.as_str())) {
            panic!("schema keyword {k:?} is not understood by this check (at {path})");
        }
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            let name = r.strip_prefix("#/definitions/").expect("a local $ref");
            return self.message(name, value, path);
        }
        if value.is_null() && s.get("nullable") == Some(&Value::Bool(true)) {
            return;
        }
        if s.get("x-proto-any") == Some(&Value::Bool(true)) {
            return self.any(value, path);
        }
        if let Some(kind) = s.get("x-spring").and_then(Value::as_str) {
            return self.spring(kind, s.get("enum"), value, path);
        }
        if !self.typed(s, value, path) {
            return;
        }
        self.scalar(s, value, path);
        if let Value::Object(o) = value {
            self.object(s, o, path);
        }
        if let (Value::Array(items), Some(item)) = (value, s.get("items")) {
            for (i, v) in items.iter().enumerate() {
                self.value(item, v, &format!("{path}[{i}]"));
            }
        }
        self.combinators(s, value, path);
    }

    /// `type` (and int-or-string): false, with the problem said, when `value` is of another.
    fn typed(&mut self, s: &Map<String, Value>, value: &Value, path: &str) -> bool {
        let types: Vec<&str> = match s.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect(),
            _ if s.contains_key("x-kubernetes-int-or-string") => vec!["integer", "string"],
            _ => return true,
        };
        let is = |t: &str| match t {
            "object" => value.is_object(),
            "array" => value.is_array(),
            "string" => value.is_string(),
            "boolean" => value.is_boolean(),
            "number" => value.is_number(),
            "integer" => value.is_i64() || value.is_u64(),
            other => panic!("type {other:?} is not understood by this check"),
        };
        if types.iter().any(|t| is(t)) {
            return true;
        }
        self.fail(
            path,
            format!("expected {}, got {value}", types.join(" or ")),
        );
        false
    }

    /// `enum`, `format`, ranges, lengths and the CEL rules this check knows.
    fn scalar(&mut self, s: &Map<String, Value>, value: &Value, path: &str) {
        if let (Some(Value::Array(names)), Value::String(_)) = (s.get("enum"), value)
            && !names.contains(value)
        {
            let names: Vec<&str> = names.iter().filter_map(Value::as_str).collect();
            self.fail(path, format!("{value} is not one of {}", names.join(", ")));
        }
        if let Some(f) = s.get("format").and_then(Value::as_str)
            && let Err(e) = format_ok(f, value)
        {
            self.fail(path, e);
        }
        let number = value.as_f64();
        if let (Some(min), Some(n)) = (s.get("minimum").and_then(Value::as_f64), number)
            && n < min
        {
            self.fail(path, format!("{n} is below the minimum {min}"));
        }
        if let (Some(max), Some(n)) = (s.get("maximum").and_then(Value::as_f64), number)
            && n > max
        {
            self.fail(path, format!("{n} is above the maximum {max}"));
        }
        let len = match value {
            Value::Array(a) => Some((a.len(), "maxItems")),
            Value::String(t) => Some((t.chars().count(), "maxLength")),
            Value::Object(o) => Some((o.len(), "maxProperties")),
            _ => None,
        };
        if let Some((n, key)) = len
            && let Some(max) = s.get(key).and_then(Value::as_u64)
            && n as u64 > max
        {
            self.fail(path, format!("{n} is more than {key} {max}"));
        }
        for rule in s
            .get("x-kubernetes-validations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            match rule["rule"].as_str().unwrap_or_default() {
                "duration(self) >= duration('1ms')" => match value.as_str().map(go_duration_ns) {
                    Some(Some(ns)) if ns >= 1_000_000 => {}
                    _ => self.fail(
                        path,
                        format!(
                            "{value}: {}",
                            rule["message"]
                                .as_str()
                                .unwrap_or("a duration of at least 1ms")
                        ),
                    ),
                },
                // workloadSelector.matchLabels: no key with `*`, no empty key, no value with `*`.
                "self.all(key, !key.contains(\"*\"))" => {
                    if let Some(k) = value
                        .as_object()
                        .and_then(|o| o.keys().find(|k| k.contains('*')))
                    {
                        self.fail(
                            path,
                            format!(
                                "{k:?}: {}",
                                rule["message"].as_str().unwrap_or("no key may contain *")
                            ),
                        );
                    }
                }
                "self.all(key, key.size() != 0)" => {
                    if value.as_object().is_some_and(|o| o.contains_key("")) {
                        self.fail(
                            path,
                            rule["message"].as_str().unwrap_or("no key may be empty"),
                        );
                    }
                }
                "!self.contains(\"*\")" => {
                    if value.as_str().is_some_and(|v| v.contains('*')) {
                        self.fail(
                            path,
                            format!(
                                "{value}: {}",
                                rule["message"].as_str().unwrap_or("may not contain *")
                            ),
                        );
                    }
                }
                other => panic!("CEL rule {other:?} is not understood by this check"),
            }
        }
    }

    /// `properties`, `additionalProperties`, `required` and the oneofs of a proto message.
    fn object(&mut self, s: &Map<String, Value>, o: &Map<String, Value>, path: &str) {
        let empty = Map::new();
        let props = s
            .get("properties")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let json_names = s.get("x-proto-json-names") == Some(&Value::Bool(true));
        let open = s.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
        let mut present = Vec::new();
        for (key, v) in o {
            let at = format!("{path}.{key}");
            match self.property(props, key, json_names) {
                Some(name) => {
                    present.push(name.as_str());
                    self.value(&props[name.as_str()], v, &at);
                }
                None => match s.get("additionalProperties") {
                    Some(Value::Bool(false)) => self.unknown(props, &at),
                    Some(extra @ Value::Object(_)) => self.value(extra, v, &at),
                    _ if self.closed && s.contains_key("properties") && !open => {
                        self.unknown(props, &at)
                    }
                    _ => {}
                },
            }
        }
        for r in s
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().expect("a required name");
            if !present.contains(&r) {
                self.fail(path, format!("{r} is required"));
            }
        }
        for oneof in s
            .get("x-oneofs")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let fields: Vec<&str> = oneof["fields"]
                .as_array()
                .expect("fields")
                .iter()
                .filter_map(Value::as_str)
                .collect();
            let set: Vec<&str> = fields
                .iter()
                .copied()
                .filter(|f| present.contains(f))
                .collect();
            if set.len() > 1 {
                self.fail(
                    path,
                    format!(
                        "at most one of {} may be set, got {}",
                        fields.join(", "),
                        set.join(", ")
                    ),
                );
            }
            if set.is_empty() && oneof["required"] == Value::Bool(true) {
                self.fail(path, format!("one of {} is required", fields.join(", ")));
            }
        }
    }

    /// The schema's name of the document's `key`, as the reader matches names.
    fn property<'p>(
        &self,
        props: &'p Map<String, Value>,
        key: &str,
        json_names: bool,
    ) -> Option<&'p String> {
        let same = |name: &str| match self.names {
            Names::Exact => name == key || (json_names && camel(name) == key),
            Names::CaseInsensitive => {
                name.eq_ignore_ascii_case(key)
                    || (json_names && camel(name).eq_ignore_ascii_case(key))
            }
            Names::Spring => relaxed(name) == relaxed(key),
        };
        props.keys().find(|name| same(name))
    }

    fn unknown(&mut self, props: &Map<String, Value>, path: &str) {
        let names: Vec<&str> = props.keys().map(String::as_str).collect();
        self.fail(
            path,
            format!("unknown field (the fields here: {})", names.join(", ")),
        );
    }

    /// `oneOf`, `anyOf`, `allOf` and `not`, each branch checked on its own.
    fn combinators(&mut self, s: &Map<String, Value>, value: &Value, path: &str) {
        let passes = |this: &Self, branch: &Value| {
            let mut inner = Check {
                root: this.root,
                closed: false,
                names: this.names,
                errors: Vec::new(),
            };
            inner.value(branch, value, path);
            inner.errors.is_empty()
        };
        for branch in s
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.value(branch, value, path);
        }
        if let Some(Value::Array(branches)) = s.get("oneOf") {
            let n = branches.iter().filter(|b| passes(self, b)).count();
            if n != 1 {
                self.fail(path, format!("matches {n} of the oneOf's {} forms, not one (fields that exclude each other?)", branches.len()));
            }
        }
        if let Some(Value::Array(branches)) = s.get("anyOf")
            && !branches.iter().any(|b| passes(self, b))
        {
            self.fail(path, "matches none of the anyOf's forms");
        }
        if let Some(branch) = s.get("not")
            && passes(self, branch)
        {
            self.fail(path, format!("matches what is excluded: {branch}"));
        }
    }

    /// A protobuf `Any`: `@type` names a message of the extract, the rest is that message.
    fn any(&mut self, value: &Value, path: &str) {
        let Some(t) = value.get("@type").and_then(Value::as_str) else {
            return self.fail(path, "an Any needs its \"@type\"");
        };
        let name = t.rsplit('/').next().unwrap_or(t);
        if self.root["definitions"].get(name).is_none() {
            return self.fail(
                &format!("{path}.@type"),
                format!("{name} is outside the vendored schema's extract: not checked"),
            );
        }
        let mut body = value.as_object().cloned().unwrap_or_default();
        body.remove("@type");
        self.message(name, &Value::Object(body), path);
    }

    /// A Spring property's value, converted as Spring converts it.
    fn spring(&mut self, kind: &str, names: Option<&Value>, value: &Value, path: &str) {
        let text = match value {
            Value::String(t) => Some(t.trim().to_string()),
            Value::Number(n) => Some(n.to_string()),
            Value::Bool(b) => Some(b.to_string()),
            _ => None,
        };
        let class = |t: &str| {
            !t.is_empty()
                && t.split('.').all(|p| {
                    p.chars()
                        .next()
                        .is_some_and(|c| c.is_alphabetic() || c == '_' || c == '$')
                        && p.chars()
                            .all(|c| c.is_alphanumeric() || c == '_' || c == '$')
                })
        };
        let list = |v: &Value, each: &dyn Fn(&str) -> bool| match v {
            Value::Array(items) => items.iter().all(|i| i.as_str().is_some_and(each)),
            Value::String(t) => t.split(',').all(|p| each(p.trim())),
            _ => false,
        };
        let ok = match (kind, text.as_deref()) {
            ("integer", Some(t)) => t.parse::<i64>().is_ok(),
            ("number", Some(t)) => t.parse::<f64>().is_ok(),
            ("boolean", Some(t)) => {
                t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false")
            }
            ("duration", Some(t)) => spring_duration(t),
            ("string", Some(_)) => true,
            ("class", Some(t)) => class(t),
            ("enum", Some(t)) => names.and_then(Value::as_array).is_some_and(|ns| {
                ns.iter()
                    .any(|n| n.as_str().is_some_and(|n| relaxed(n) == relaxed(t)))
            }),
            ("class-list", _) => list(value, &class),
            ("list", _) => list(value, &|_| true),
            ("map", _) => value
                .as_object()
                .is_some_and(|o| o.values().all(|v| !v.is_object() && !v.is_array())),
            (_, None) => false,
            (other, _) => panic!("Spring kind {other:?} is not understood by this check"),
        };
        if !ok {
            let expected = match kind {
                "duration" => "a duration as Spring reads one (10s, 250ms, PT10S, or milliseconds)"
                    .to_string(),
                "class" | "class-list" => format!("a {kind} of Java class names"),
                "enum" => format!("one of {}", names.map(Value::to_string).unwrap_or_default()),
                other => format!("a value Spring converts to {other}"),
            };
            self.fail(path, format!("expected {expected}, got {value}"));
        }
    }
}

/// Every message and field the range rules name is in Envoy's extract (a rule under a wrong
/// name would check nothing).
pub fn range_rules_name_fields_of_the_extract() -> Vec<String> {
    let defs = &schema(TargetFormat::Envoy)["definitions"];
    ranges::messages()
        .filter(|(m, f)| defs[*m]["properties"].get(*f).is_none())
        .map(|(m, f)| format!("{m}.{f}"))
        .collect()
}
