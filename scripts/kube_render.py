"""Render deploy/kubernetes overlays and validate them offline, with no kustomize, kubectl or cluster.

Rendering covers the kustomize subset the manifests use (`resources`, `images`, strategic-merge
`patches` with a target) and refuses any other key, so a manifest change that needs real kustomize fails
here instead of rendering wrongly; where `kustomize` or `kubectl` is installed, tests/deploy compares the
two renderings. Validation: the built-in kinds against the Kubernetes OpenAPI JSON schemas bundled in
the `kubernetes-validate` wheel (strict: unknown fields are errors); the CRDs (ServiceMonitor, PrometheusRule,
InferenceService) have no bundled schema and are checked by tests/deploy/test_kubernetes.py instead.

    .venv/bin/python scripts/kube_render.py deploy/kubernetes/overlays/gpu            # print the YAML
    .venv/bin/python scripts/kube_render.py --validate deploy/kubernetes/overlays/*   # lint
"""

from __future__ import annotations

import argparse
import copy
import sys
from pathlib import Path

import yaml

KUBERNETES_VERSION = "1.33.0"  # oldest release still supported upstream when this was written
KNOWN_KEYS = {"apiVersion", "kind", "resources", "images", "patches"}
# Kinds whose schema is not in the Kubernetes OpenAPI (custom resources).
CRD_KINDS = {"ServiceMonitor", "PrometheusRule", "InferenceService"}


def merge(base, patch):
    """Strategic merge for the fields used here: maps merge, lists of named maps merge by name."""
    if isinstance(base, dict) and isinstance(patch, dict):
        out = dict(base)
        for key, value in patch.items():
            if value is None:
                out.pop(key, None)
            else:
                out[key] = merge(base[key], value) if key in base else copy.deepcopy(value)
        return out
    if (
        isinstance(base, list)
        and isinstance(patch, list)
        and all(isinstance(x, dict) and "name" in x for x in base + patch)
    ):
        out = [copy.deepcopy(x) for x in base]
        for item in patch:
            same = [i for i, x in enumerate(out) if x["name"] == item["name"]]
            if same:
                out[same[0]] = merge(out[same[0]], item)
            else:
                out.append(copy.deepcopy(item))
        return out
    return copy.deepcopy(patch)


def _matches(doc: dict, target: dict) -> bool:
    return all(doc.get(k) == v for k, v in target.items() if k in ("kind", "apiVersion")) and (
        "name" not in target or doc["metadata"]["name"] == target["name"]
    )


def render(directory: Path) -> list[dict]:
    """The documents `kustomize build directory` gives, for the subset of kustomize used here."""
    spec = yaml.safe_load((directory / "kustomization.yaml").read_text())
    unknown = set(spec) - KNOWN_KEYS
    if unknown:
        raise ValueError(f"{directory}: kustomization keys {sorted(unknown)} need real kustomize")
    docs: list[dict] = []
    for entry in spec.get("resources", []):
        path = directory / entry
        if path.is_dir():
            docs += render(path)
        else:
            docs += [d for d in yaml.safe_load_all(path.read_text()) if d]
    for image in spec.get("images", []):
        for doc in docs:
            for container in _containers(doc):
                name, _, _tag = container["image"].partition(":")
                if name == image["name"]:
                    new = image.get("newName", name)
                    container["image"] = (
                        f"{new}@{image['digest']}"
                        if "digest" in image
                        else (f"{new}:{image.get('newTag', _tag)}")
                    )
    for patch in spec.get("patches", []):
        body = (
            yaml.safe_load(patch["patch"])
            if "patch" in patch
            else yaml.safe_load((directory / patch["path"]).read_text())
        )
        targets = [i for i, d in enumerate(docs) if _matches(d, patch.get("target", {}))]
        if not targets:
            raise ValueError(f"{directory}: patch target {patch.get('target')} matches nothing")
        for i in targets:
            docs[i] = merge(docs[i], {k: v for k, v in body.items() if k not in ("apiVersion", "kind")})
    return docs


def _containers(doc: dict) -> list[dict]:
    pod = doc.get("spec", {}).get("template", {}).get("spec", {})
    return pod.get("containers", []) + pod.get("initContainers", [])


def validate(docs: list[dict], version: str = KUBERNETES_VERSION) -> list[str]:
    """Errors of the built-in kinds against the bundled OpenAPI schemas (strict); CRDs are skipped."""
    import kubernetes_validate

    errors = []
    for doc in docs:
        if doc["kind"] in CRD_KINDS:
            continue
        try:
            kubernetes_validate.validate(doc, version, strict=True)
        except kubernetes_validate.ValidationError as err:
            errors.append(f"{doc['kind']}/{doc['metadata']['name']}: {err.message} at {list(err.path)}")
    return errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", type=Path, help="kustomization directories")
    parser.add_argument("--validate", action="store_true", help="validate instead of printing the YAML")
    parser.add_argument("--kubernetes-version", default=KUBERNETES_VERSION, help="(default: %(default)s)")
    args = parser.parse_args()
    failed = False
    for directory in args.dirs:
        docs = render(directory)
        if not args.validate:
            print(yaml.safe_dump_all(docs, sort_keys=False), end="")
            continue
        errors = validate(docs, args.kubernetes_version)
        kinds = ", ".join(d["kind"] for d in docs)
        print(f"{directory}: {'FAIL' if errors else 'ok'} ({kinds}; CRDs not schema-checked)")
        for error in errors:
            print(f"  {error}")
        failed |= bool(errors)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
