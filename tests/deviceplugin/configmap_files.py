#!/usr/bin/env python3
"""Writes every data entry of one ConfigMap of a manifest to a directory, so the node daemons'
own parsers can check the configuration packaging/kubernetes/ ships (tests/deviceplugin).

Usage: configmap_files.py MANIFEST CONFIGMAP_NAME OUTDIR
"""
import os
import sys

import yaml


def main():
    manifest, name, outdir = sys.argv[1:4]
    with open(manifest) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    maps = [d for d in docs if d.get("kind") == "ConfigMap" and d["metadata"]["name"] == name]
    if len(maps) != 1:
        print(f"{manifest}: expected one ConfigMap named {name}, found {len(maps)}", file=sys.stderr)
        return 1
    os.makedirs(outdir, exist_ok=True)
    for key, text in maps[0].get("data", {}).items():
        with open(os.path.join(outdir, key), "w") as f:
            f.write(text)
        print(f"{outdir}/{key}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
