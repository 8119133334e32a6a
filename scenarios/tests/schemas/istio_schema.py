#!/usr/bin/env python3
"""Extract the OpenAPI v3 schemas of Istio's DestinationRule and VirtualService from
istio/api's kubernetes/customresourcedefinitions.gen.yaml (the file Istio's charts ship as
crd-all.gen.yaml): the `v1` version of each (v1alpha3 and v1beta1 are checked to be the same
schema), with the `description` texts left out and nothing else changed.

usage: istio_schema.py CRDS.yaml OUT_DIR"""
import json, sys
import yaml

def strip(x):
    if isinstance(x, dict):
        return {k: strip(v) for k, v in x.items() if k != 'description'}
    if isinstance(x, list):
        return [strip(v) for v in x]
    return x

names = {'destinationrules.networking.istio.io': 'istio-destinationrule.json',
         'virtualservices.networking.istio.io': 'istio-virtualservice.json'}
for doc in yaml.safe_load_all(open(sys.argv[1])):
    if not doc or doc['metadata']['name'] not in names:
        continue
    versions = {v['name']: v['schema']['openAPIV3Schema'] for v in doc['spec']['versions']}
    v1 = json.dumps(versions['v1'], sort_keys=True)
    assert all(json.dumps(s, sort_keys=True) == v1 for s in versions.values()), 'versions differ'
    with open(sys.argv[2] + '/' + names[doc['metadata']['name']], 'w') as fh:
        json.dump(strip(versions['v1']), fh, indent=1)
