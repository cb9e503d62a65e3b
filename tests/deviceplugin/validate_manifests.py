#!/usr/bin/env python3
"""Validates Kubernetes manifests against Kubernetes' published OpenAPI schema with a real
JSON-schema validator (python3-jsonschema), offline.

The schema is Kubernetes' own swagger.json as Debian ships it in kube-openapi's test data
(package golang-k8s-kube-openapi-dev, Apache-2.0, the Kubernetes Authors; it describes the API of
Kubernetes v1.14). Its definitions are JSON Schema; as kubeconform/openapi2jsonschema do, this
script (1) makes every object definition strict (additionalProperties: false unless the API
allows arbitrary keys there), so an unknown or misspelt field is an error as in
`kubectl --validate=strict`, and (2) accepts numbers for Quantity and IntOrString, which the API
server accepts but the swagger types as strings.

Built-in kinds (those with x-kubernetes-group-version-kind) are validated whole. Knative's
Service and KServe's InferenceService are custom resources whose CRD schemas are not available
offline: their metadata is validated as ObjectMeta and the pod parts they embed (Knative's
revision template, KServe's predictor containers) as core/v1 PodSpec and Container; their own
fields are checked against the fields their v1 APIs define.

Usage: validate_manifests.py [--schema SWAGGER_JSON] FILE...
  --expect-error TEXT  each FILE must fail with a message containing TEXT (self-test)
Exit status 0 when every document is valid (or, with --expect-error, every file fails as
expected), 1 otherwise; 2 when the schema or a validator is missing.
"""
import argparse
import copy
import json
import os
import sys

DEFAULT_SCHEMA = ("/usr/share/gocode/src/k8s.io/kube-openapi/test/integration/testdata/aggregator/"
                  "openapi.json")
Q = "io.k8s.apimachinery.pkg.api.resource.Quantity"
IOS = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"

# Fields of Knative serving.knative.dev/v1 RevisionSpec beside the PodSpec it embeds, and of
# KServe serving.kserve.io/v1beta1 ComponentExtensionSpec beside the predictor's PodSpec.
KNATIVE_REVISION_FIELDS = {"containerConcurrency": int, "timeoutSeconds": int,
                           "responseStartTimeoutSeconds": int, "idleTimeoutSeconds": int}
KSERVE_COMPONENT_FIELDS = {"minReplicas": int, "maxReplicas": int, "scaleTarget": int,
                           "scaleMetric": str, "containerConcurrency": int, "timeout": int,
                           "canaryTrafficPercent": int, "logger": dict, "batcher": dict,
                           "labels": dict, "annotations": dict, "deploymentStrategy": dict}


def die(msg, code=2):
    print("validate_manifests: " + msg, file=sys.stderr)
    sys.exit(code)


try:
    import jsonschema
    import yaml
except ImportError as e:  # pragma: no cover
    die(f"{e}: install python3-jsonschema and python3-yaml (scripts/install-deps.sh)")


def strict(defs):
    out = copy.deepcopy(defs)
    for name, d in out.items():
        if "properties" in d and "additionalProperties" not in d:
            d["additionalProperties"] = False
    out[Q] = {"oneOf": [{"type": "string"}, {"type": "number"}]}
    out[IOS] = {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    return out


class Schema:
    def __init__(self, path):
        try:
            with open(path) as f:
                swagger = json.load(f)
        except OSError as e:
            die(f"cannot read Kubernetes' OpenAPI schema {path}: {e.strerror} (install "
                "golang-k8s-kube-openapi-dev, or pass --schema)")
        self.version = swagger.get("info", {}).get("version", "?")
        self.defs = strict(swagger["definitions"])
        self.root = {"definitions": self.defs}
        self.kinds = {}
        for name, d in self.defs.items():
            for gvk in d.get("x-kubernetes-group-version-kind", []):
                api = gvk["version"] if not gvk["group"] else f"{gvk['group']}/{gvk['version']}"
                self.kinds[(api, gvk["kind"])] = name

    def errors(self, definition, value, where):
        schema = {"$ref": "#/definitions/" + definition, "definitions": self.defs}
        v = jsonschema.Draft4Validator(schema)
        out = []
        for e in sorted(v.iter_errors(value), key=lambda e: list(e.absolute_path)):
            path = ".".join(str(p) for p in e.absolute_path)
            out.append(f"{where}{'.' + path if path else ''}: {e.message}")
        return out


def check_fields(obj, allowed, where):
    errs = []
    for k, t in allowed.items():
        if k in obj and not isinstance(obj[k], t):
            errs.append(f"{where}.{k}: {obj[k]!r} is not of type {t.__name__}")
    return errs


def validate_knative_service(schema, doc, where):
    errs = schema.errors("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", doc.get("metadata", {}),
                         where + ".metadata")
    spec = doc.get("spec", {})
    for k in spec:
        if k not in ("template", "traffic"):
            errs.append(f"{where}.spec: unknown field '{k}' (Knative Service has template, traffic)")
    template = spec.get("template")
    if not isinstance(template, dict):
        return errs + [f"{where}.spec.template: required"]
    for k in template:
        if k not in ("metadata", "spec"):
            errs.append(f"{where}.spec.template: unknown field '{k}'")
    errs += schema.errors("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta",
                          template.get("metadata", {}), where + ".spec.template.metadata")
    rev = dict(template.get("spec", {}))
    errs += check_fields(rev, KNATIVE_REVISION_FIELDS, where + ".spec.template.spec")
    pod = {k: v for k, v in rev.items() if k not in KNATIVE_REVISION_FIELDS}
    # Knative names the container itself when there is one: the PodSpec wants a name.
    pod["containers"] = [dict({"name": "user-container"}, **c) for c in pod.get("containers", [])]
    return errs + schema.errors("io.k8s.api.core.v1.PodSpec", pod, where + ".spec.template.spec")


def validate_inference_service(schema, doc, where):
    errs = schema.errors("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", doc.get("metadata", {}),
                         where + ".metadata")
    spec = doc.get("spec", {})
    for k in spec:
        if k not in ("predictor", "transformer", "explainer"):
            errs.append(f"{where}.spec: unknown field '{k}'")
    predictor = spec.get("predictor")
    if not isinstance(predictor, dict):
        return errs + [f"{where}.spec.predictor: required"]
    errs += check_fields(predictor, KSERVE_COMPONENT_FIELDS, where + ".spec.predictor")
    pod = {k: v for k, v in predictor.items() if k not in KSERVE_COMPONENT_FIELDS}
    if "containers" not in pod:
        return errs + [f"{where}.spec.predictor: expected a custom predictor (containers)"]
    return errs + schema.errors("io.k8s.api.core.v1.PodSpec", pod, where + ".spec.predictor")


CUSTOM = {("serving.knative.dev/v1", "Service"): validate_knative_service,
          ("serving.kserve.io/v1beta1", "InferenceService"): validate_inference_service}


def validate_file(schema, path):
    errs, count = [], 0
    try:
        with open(path) as f:
            docs = list(yaml.safe_load_all(f))
    except (OSError, yaml.YAMLError) as e:
        return [f"{path}: {e}"], 0
    for i, doc in enumerate(docs):
        if doc is None:
            continue
        count += 1
        where = f"{path}[{i}]"
        if not isinstance(doc, dict) or "apiVersion" not in doc or "kind" not in doc:
            errs.append(f"{where}: not a Kubernetes object (apiVersion and kind required)")
            continue
        key = (doc["apiVersion"], doc["kind"])
        where += f" {doc['kind']} {doc.get('metadata', {}).get('name', '?')}"
        if key in CUSTOM:
            errs += CUSTOM[key](schema, doc, where)
        elif key in schema.kinds:
            errs += schema.errors(schema.kinds[key], doc, where)
        else:
            errs.append(f"{where}: {key[0]} {key[1]} is not in Kubernetes {schema.version}'s API")
    return errs, count


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--schema", default=os.environ.get("GSHARE_K8S_OPENAPI", DEFAULT_SCHEMA))
    ap.add_argument("--expect-error")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    schema = Schema(args.schema)
    failed = False
    total = 0
    for path in args.files:
        errs, count = validate_file(schema, path)
        total += count
        if args.expect_error is not None:
            if not any(args.expect_error in e for e in errs):
                print(f"{path}: expected an error containing {args.expect_error!r}, got: {errs}")
                failed = True
            else:
                print(f"{path}: refused as expected: {[e for e in errs if args.expect_error in e][0]}")
            continue
        for e in errs:
            print(e)
        failed = failed or bool(errs)
        if not errs:
            print(f"{path}: {count} object(s) valid against Kubernetes {schema.version}'s schema")
    if total == 0:
        print("validate_manifests: no Kubernetes object found")
        failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
