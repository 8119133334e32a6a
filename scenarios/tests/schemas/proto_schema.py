#!/usr/bin/env python3
"""Derive a JSON schema (the subset `scenarios/tests/suite/support/schema.rs` checks) from
protobuf sources, as the proto3 JSON mapping reads a message: each field under its proto name
and its lowerCamelCase JSON name, a oneof's fields at most one at a time, enums by name (or
number), 64-bit integers as numbers or strings, the well-known types in their JSON forms,
`Any` as an object whose `@type` names the message it holds. protoc-gen-validate's
`message.required`, `string.min_len` and a oneof's `(validate.required)` become `required`.

The proto3 JSON mapping reads every integer from a JSON number or a string of digits, and a
float from a number or a string ("NaN", "Infinity" or digits); `format` says which range.

usage: proto_schema.py OUT.json ROOT_DIR... -- MESSAGE...
Every `.proto` under each ROOT_DIR is read; the schema holds the messages reachable from the
MESSAGEs. A type found in no file read is written as `{}` (anything) and listed in
`x-unresolved`, so what the extract does not check is said, not hidden."""
import json, os, re, sys

TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\'(?:\\.|[^\'\\])*\'|[A-Za-z_.][A-Za-z0-9_.]*|-?[0-9][A-Za-z0-9_.+-]*|\S')

def tokens(text):
    # One pass, so that a `/*` inside a line comment (`path/*`) opens nothing.
    text = re.sub(r'"(?:\\.|[^"\\])*"|//[^\n]*|/\*.*?\*/',
                  lambda m: m.group(0) if m.group(0).startswith('"') else ' ', text, flags=re.S)
    return TOKEN.findall(text)

class Parser:
    def __init__(self, toks):
        self.t, self.i = toks, 0
    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else None
    def next(self):
        self.i += 1
        return self.t[self.i - 1]
    def skip_statement(self):
        depth = 0
        while True:
            tok = self.next()
            if tok in '{[(':
                depth += 1
            elif tok in '}])':
                depth -= 1
                if depth == 0 and tok == '}':
                    if self.peek() == ';':
                        self.next()
                    return
            elif tok == ';' and depth == 0:
                return
    def options(self):
        """The text of `[...]` after a field, if any."""
        if self.peek() != '[':
            return ''
        depth, out = 0, []
        while True:
            tok = self.next()
            out.append(tok)
            if tok == '[':
                depth += 1
            elif tok == ']':
                depth -= 1
                if depth == 0:
                    return ' '.join(out)

MESSAGES, ENUMS = {}, {}

def parse_body(p, scope, kind):
    fields, oneofs = [], []
    while p.peek() != '}':
        tok = p.peek()
        if tok in ('message', 'enum'):
            p.next()
            name = p.next()
            p.next()  # {
            full = scope + '.' + name
            if tok == 'message':
                MESSAGES[full] = parse_body(p, full, 'message')
            else:
                ENUMS[full] = parse_enum(p)
        elif tok == 'oneof':
            p.next()
            name = p.next()
            p.next()
            inner = parse_body(p, scope, 'oneof')
            oneofs.append({'name': name, 'fields': [f['name'] for f in inner['fields']],
                           'required': inner['required_oneof']})
            # A rule on a oneof's field applies when it is the one set: none is required.
            for f in inner['fields']:
                f['in_oneof'] = True
            fields.extend(inner['fields'])
        elif tok in ('option', 'reserved', 'extensions', 'extend'):
            if tok == 'option' and kind == 'oneof':
                start = p.i
                p.skip_statement()
                if 'validate.required' in ' '.join(p.t[start:p.i]) and 'true' in p.t[start:p.i]:
                    oneofs_required.append(scope)
                continue
            p.skip_statement()
        elif tok == ';':
            p.next()
        else:
            label = None
            if tok in ('repeated', 'optional', 'required'):
                label = p.next()
            if p.peek() == 'map':
                p.next(); p.next()  # map <
                key = p.next(); p.next(); value = p.next(); p.next()  # K , V >
                typ = ('map', key, value)
            else:
                typ = p.next()
            name = p.next()
            p.next()  # =
            p.next()  # number
            opts = p.options()
            p.next()  # ;
            fields.append({'name': name, 'type': typ, 'repeated': label == 'repeated',
                           'opts': opts, 'scope': scope})
    p.next()  # }
    required_oneof = bool(oneofs_required and oneofs_required[-1] == scope)
    if required_oneof:
        oneofs_required.pop()
    return {'fields': fields, 'oneofs': oneofs, 'required_oneof': required_oneof}

oneofs_required = []

def parse_enum(p):
    values = []
    while p.peek() != '}':
        tok = p.next()
        if tok in ('option', 'reserved'):
            p.i -= 1
            p.skip_statement()
        elif tok == ';':
            pass
        else:
            p.next(); p.next()  # = N
            p.options()
            p.next()  # ;
            values.append(tok)
    p.next()
    return values

def parse_file(path):
    p = Parser(tokens(open(path, encoding='utf-8').read()))
    package = ''
    while p.peek() is not None:
        tok = p.next()
        if tok == 'package':
            package = p.next()
            p.next()
        elif tok in ('message', 'enum'):
            name = p.next()
            p.next()
            full = (package + '.' if package else '') + name
            if tok == 'message':
                MESSAGES[full] = parse_body(p, full, 'message')
            else:
                ENUMS[full] = parse_enum(p)
        elif tok in ('service', 'extend'):
            p.i -= 1
            p.skip_statement()
        elif tok in ('syntax', 'import', 'option', 'edition'):
            p.i -= 1
            p.skip_statement()

def resolve(name, scope):
    if name.startswith('.'):
        return name[1:]
    parts = scope.split('.')
    while True:
        candidate = '.'.join(parts + [name]) if parts else name
        if candidate in MESSAGES or candidate in ENUMS or candidate in WELL_KNOWN:
            return candidate
        if not parts:
            return name
        parts.pop()

GRPC_CODES = ['OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND',
              'ALREADY_EXISTS', 'PERMISSION_DENIED', 'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION',
              'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS',
              'UNAUTHENTICATED']

WELL_KNOWN = {
    'google.protobuf.Duration': {'type': ['string'], 'format': 'google-duration'},
    'google.protobuf.Timestamp': {'type': ['string']},
    'google.protobuf.Struct': {'type': ['object']},
    'google.protobuf.Value': {},
    'google.protobuf.ListValue': {'type': ['array']},
    'google.protobuf.Empty': {'type': ['object'], 'additionalProperties': False, 'properties': {}},
    'google.protobuf.Any': {'x-proto-any': True},
    'google.protobuf.BoolValue': {'type': ['boolean']},
    'google.protobuf.StringValue': {'type': ['string']},
    'google.protobuf.BytesValue': {'type': ['string']},
    'google.protobuf.UInt32Value': {'type': ['integer', 'string'], 'format': 'uint32'},
    'google.protobuf.Int32Value': {'type': ['integer', 'string'], 'format': 'int32'},
    'google.protobuf.UInt64Value': {'type': ['integer', 'string'], 'format': 'uint64'},
    'google.protobuf.Int64Value': {'type': ['integer', 'string'], 'format': 'int64'},
    'google.protobuf.DoubleValue': {'type': ['number', 'string']},
    'google.protobuf.FloatValue': {'type': ['number', 'string']},
    # google/rpc/code.proto, not in the trees read: its names, as the gRPC spec lists them.
    'google.rpc.Code': {'type': ['string', 'integer'], 'enum': GRPC_CODES},
}
SCALAR = {
    'string': {'type': ['string']}, 'bytes': {'type': ['string']}, 'bool': {'type': ['boolean']},
    'double': {'type': ['number', 'string']}, 'float': {'type': ['number', 'string']},
    'int32': {'type': ['integer', 'string'], 'format': 'int32'}, 'sint32': {'type': ['integer', 'string'], 'format': 'int32'},
    'sfixed32': {'type': ['integer', 'string'], 'format': 'int32'},
    'uint32': {'type': ['integer', 'string'], 'format': 'uint32'}, 'fixed32': {'type': ['integer', 'string'], 'format': 'uint32'},
    'int64': {'type': ['integer', 'string'], 'format': 'int64'}, 'sint64': {'type': ['integer', 'string'], 'format': 'int64'},
    'sfixed64': {'type': ['integer', 'string'], 'format': 'int64'},
    'uint64': {'type': ['integer', 'string'], 'format': 'uint64'}, 'fixed64': {'type': ['integer', 'string'], 'format': 'uint64'},
}

def camel(name):
    return re.sub(r'_([a-z0-9])', lambda m: m.group(1).upper(), name)

definitions, unresolved, queue = {}, set(), []

def type_schema(typ, scope):
    if typ in SCALAR:
        return dict(SCALAR[typ])
    full = resolve(typ, scope)
    if full in WELL_KNOWN:
        return dict(WELL_KNOWN[full])
    if full in ENUMS:
        return {'type': ['string', 'integer'], 'enum': ENUMS[full]}
    if full in MESSAGES:
        if full not in definitions and full not in queue:
            queue.append(full)
        return {'$ref': '#/definitions/' + full}
    unresolved.add(full)
    return {}

def message_schema(full):
    m = MESSAGES[full]
    props, required = {}, []
    for f in m['fields']:
        if isinstance(f['type'], tuple):
            s = {'type': ['object'], 'additionalProperties': type_schema(f['type'][2], f['scope'])}
        else:
            s = type_schema(f['type'], f['scope'])
            if f['repeated']:
                s = {'type': ['array'], 'items': s}
        opts = f['opts'].replace(' ', '')
        if f.get('in_oneof'):
            pass
        elif 'message={required:true}' in opts or '.message.required=true' in opts \
                or re.search(r'string={[^}]*min_len:1', opts) or re.search(r'repeated={[^}]*min_items:1', opts):
            required.append(f['name'])
        if 'deprecated=true' in opts:
            s['x-deprecated'] = True
        props[f['name']] = s
    # x-proto-json-names: each field is also read under its lowerCamelCase JSON name.
    schema = {'type': ['object'], 'additionalProperties': False, 'x-proto-json-names': True,
              'properties': props}
    if required:
        schema['required'] = required
    if m['oneofs']:
        schema['x-oneofs'] = [{'fields': o['fields'], 'required': o['required']} for o in m['oneofs']]
    return schema

def main():
    args = sys.argv[1:]
    out, rest = args[0], args[1:]
    cut = rest.index('--')
    roots, messages = rest[:cut], rest[cut + 1:]
    for root in roots:
        for d, _, files in sorted(os.walk(root)):
            for f in sorted(files):
                if f.endswith('.proto'):
                    parse_file(os.path.join(d, f))
    queue.extend(messages)
    while queue:
        full = queue.pop(0)
        if full not in definitions:
            definitions[full] = message_schema(full)
    doc = {'x-roots': messages, 'x-unresolved': sorted(unresolved),
           'definitions': dict(sorted(definitions.items()))}
    with open(out, 'w') as fh:
        json.dump(doc, fh, indent=1, sort_keys=False)
        fh.write('\n')

main()
