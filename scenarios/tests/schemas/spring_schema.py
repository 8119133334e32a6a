#!/usr/bin/env python3
"""Derive the schema of resilience4j's Spring Boot properties (`resilience4j.<module>.…`)
from the classes Spring binds them to, in a resilience4j checkout: each module's
`@ConfigurationProperties` class (resilience4j-spring-boot3), the spring6 class it extends
(the `…AspectOrder` setter) and the framework-common class below it (`instances` and
`configs`: maps of `InstanceProperties`, whose setters are the instance's properties), and
`CommonProperties` (`tags`). Spring binds a property by its setter's name, so setters are
read, not fields; Java enums are read for their constants.

usage: spring_schema.py RESILIENCE4J_CHECKOUT OUT.json"""
import json, os, re, sys

ROOT = sys.argv[1]
COMMON = 'resilience4j-framework-common/src/main/java/io/github/resilience4j/common/'
SPRING6 = 'resilience4j-spring6/src/main/java/io/github/resilience4j/spring6/'
MODULES = [  # prefix under resilience4j., framework-common class, spring6 class
    ('retry', 'retry/configuration/CommonRetryConfigurationProperties', 'retry/configure/RetryConfigurationProperties'),
    ('circuitbreaker', 'circuitbreaker/configuration/CommonCircuitBreakerConfigurationProperties', 'circuitbreaker/configure/CircuitBreakerConfigurationProperties'),
    ('ratelimiter', 'ratelimiter/configuration/CommonRateLimiterConfigurationProperties', 'ratelimiter/configure/RateLimiterConfigurationProperties'),
    ('bulkhead', 'bulkhead/configuration/CommonBulkheadConfigurationProperties', 'bulkhead/configure/BulkheadConfigurationProperties'),
    ('thread-pool-bulkhead', 'bulkhead/configuration/CommonThreadPoolBulkheadConfigurationProperties', None),
    ('timelimiter', 'timelimiter/configuration/CommonTimeLimiterConfigurationProperties', 'timelimiter/configure/TimeLimiterConfigurationProperties'),
]
ENUMS = {
    'State': 'resilience4j-circuitbreaker/src/main/java/io/github/resilience4j/circuitbreaker/CircuitBreaker.java',
    'SlidingWindowType': 'resilience4j-circuitbreaker/src/main/java/io/github/resilience4j/circuitbreaker/CircuitBreakerConfig.java',
}

def read(path):
    return open(os.path.join(ROOT, path), encoding='utf-8').read()

def enum_constants(name):
    text = read(ENUMS[name])
    body = re.search(r'enum ' + name + r'\s*\{(.*?)[;}]', text, re.S).group(1)
    body = re.sub(r'/\*.*?\*/|//[^\n]*', '', body, flags=re.S)
    return [m.group(1) for m in re.finditer(r'\b([A-Z][A-Z_]+)\s*(?:\([^)]*\))?\s*(?:,|$)', body.strip() + ',')]

def kind(java):
    java = java.strip()
    if java.endswith('[]') or java.endswith('...'):
        return {'x-spring': 'class-list'} if java.startswith('Class') else {'x-spring': 'list'}
    if java.startswith('Class'):
        return {'x-spring': 'class'}
    table = {'Integer': 'integer', 'int': 'integer', 'Long': 'integer', 'long': 'integer',
             'Float': 'number', 'float': 'number', 'Double': 'number', 'double': 'number',
             'Boolean': 'boolean', 'boolean': 'boolean', 'Duration': 'duration', 'String': 'string'}
    if java in table:
        return {'x-spring': table[java]}
    if java in ENUMS:
        return {'x-spring': 'enum', 'enum': enum_constants(java)}
    if java.startswith('Map<'):
        return {'x-spring': 'map'}
    raise SystemExit('a setter type this script does not know: ' + java)

def setters(text):
    out = {}
    for m in re.finditer(r'public\s+\w+\s+set([A-Z]\w*)\s*\(\s*(?:@\w+\s+)?([\w<>?.,\[\] ]+?)\s+\w+\s*\)', text):
        name = m.group(1)[0].lower() + m.group(1)[1:]
        out[name] = kind(m.group(2))
    return out

def instance_class(text):
    start = text.index('public static class InstanceProperties')
    return text[start:]

definitions, modules = {}, {}
common = setters(read(COMMON + 'CommonProperties.java'))
for prefix, common_class, spring6 in MODULES:
    props = setters(instance_class(read(COMMON + common_class + '.java')))
    definitions[prefix] = {'type': ['object'], 'additionalProperties': False, 'properties': dict(sorted(props.items()))}
    ref = {'$ref': '#/definitions/' + prefix}
    module = {'instances': {'type': ['object'], 'additionalProperties': ref},
              'configs': {'type': ['object'], 'additionalProperties': ref}}
    module.update(common)
    if spring6:
        module.update(setters(read(SPRING6 + spring6 + '.java')))
    # additional-spring-configuration-metadata.json: resilience4j.<module>.metrics.enabled, .legacy.enabled
    module['metrics'] = {'type': ['object'], 'additionalProperties': False, 'properties': {
        'enabled': {'x-spring': 'boolean'},
        'legacy': {'type': ['object'], 'additionalProperties': False, 'properties': {'enabled': {'x-spring': 'boolean'}}}}}
    modules[prefix] = {'type': ['object'], 'additionalProperties': False, 'properties': dict(sorted(module.items()))}

schema = {
    'x-spring-relaxed-names': True,
    'type': ['object'],
    'properties': {'resilience4j': {'type': ['object'], 'additionalProperties': False, 'properties': modules}},
    'definitions': definitions,
}
with open(sys.argv[2], 'w') as fh:
    json.dump(schema, fh, indent=1)
    fh.write('\n')
