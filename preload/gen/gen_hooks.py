#!/usr/bin/env python3
"""Generates the shim's hook table from cuda.h / cudaTypedefs.h and preload/gen/hooks.txt.

The driver headers are run through the C preprocessor once, with
__CUDA_API_VERSION_INTERNAL defined, which makes cuda.h declare every exported function under its
real (versioned, _ptds/_ptsz) name, exactly as libcuda.so.1 exports it. cudaTypedefs.h names each
variant's ABI version (PFN_cuMemAlloc_v3020, PFN_cuMemcpyHtoDAsync_v7000_ptsz ...). For one base
name and one stream kind, the exported names (cuX, cuX_v2, cuX_v3 ...) and the PFN versions pair
up in order; the generator checks that the counts agree and that the parameter types match, and
fails the build otherwise.

Outputs (all in --out-dir):
  hook_table.h     GSHARE_HOOKED_EXPORTS(X): X(export, PFN type) for every hooked export
  variants.inc     rows {base, version, kind, export, hooked} for every variant of a hooked base
  forwarders.cc    the generated gate forwarders (kind "gate" in hooks.txt)
  libgshare.map    the linker version script: only the hooked names and dlsym are exported
  hooks.md         the human-readable list of hooked entry points (docs/hooks.md)
"""

import argparse
import collections
import os
import re
import subprocess
import sys

KINDS = {"": "kNone", "ptds": "kPtds", "ptsz": "kPtsz"}


def preprocess(cc, include_dir):
    src = '#include <cudaTypedefs.h>\n'
    out = subprocess.run(
        [cc, "-E", "-P", "-x", "c", "-D__CUDA_API_VERSION_INTERNAL", "-I", include_dir, "-"],
        input=src, capture_output=True, text=True, check=True)
    return out.stdout


def normalise(params):
    return " ".join(params.split())


ALIASES = {}  # typedef name -> what it names (filled by parse)


def canonical_type(text):
    words = text.replace("*", " * ").split()
    out = []
    for w in words:
        seen = set()
        while w in ALIASES and w not in seen:
            seen.add(w)
            w = ALIASES[w]
        out.append(w)
    return " ".join(" ".join(out).split())


def param_types(params):
    """Canonical types of a parameter list (names dropped, typedef aliases resolved)."""
    out = []
    for p in split_params(params):
        name = param_name(p)
        t = p[: p.rfind(name)] if name else p
        out.append(canonical_type(t))
    return out


def split_params(params):
    params = normalise(params)
    if params in ("", "void"):
        return []
    parts, depth, cur = [], 0, ""
    for ch in params:
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
            continue
        depth += ch in "(["
        depth -= ch in ")]"
        cur += ch
    parts.append(cur.strip())
    return parts


def param_name(p):
    m = re.search(r"([A-Za-z_]\w*)\s*(\[\s*\d*\s*\])?$", p)
    return m.group(1) if m else None


def parse(text):
    for m in re.finditer(r"typedef\s+((?:(?:struct|enum|union|unsigned|signed|long|short|int|char)\s+)*\w+)"
                         r"\s+(\w+)\s*;", text):
        if m.group(1) != m.group(2):
            ALIASES[m.group(2)] = m.group(1)
    decls = {m.group(1): normalise(m.group(2))
             for m in re.finditer(r"CUresult\s+(cu\w+)\s*\(([^;]*?)\)\s*;", text)}
    pfns = collections.defaultdict(list)  # (base, kind) -> [(version, params)]
    for m in re.finditer(
            r"typedef\s+CUresult\s*\(\s*\*\s*PFN_(cu\w+?)_v(\d+)(?:_(ptds|ptsz))?\s*\)\s*"
            r"\(([^;]*?)\)\s*;", text):
        pfns[(m.group(1), m.group(3) or "")].append((int(m.group(2)), normalise(m.group(4))))
    return decls, pfns


def pair_variants(decls, pfns):
    """Returns {base: [(version, kind, export, pfn_type)]}; raises on any disagreement."""
    variants = collections.defaultdict(list)
    errors = []
    for (base, kind), versions in sorted(pfns.items()):
        versions.sort()
        suffix = "_" + kind if kind else ""
        exports = []
        for name in decls:
            m = re.fullmatch(re.escape(base) + r"(?:_v(\d+))?" + re.escape(suffix), name)
            if m:
                exports.append((int(m.group(1) or 1), name))
        exports.sort()
        if len(exports) != len(versions):
            errors.append(f"{base}{suffix}: PFN versions {[v for v, _ in versions]} vs "
                          f"exports {[n for _, n in exports]}")
            continue
        for (version, pparams), (_, export) in zip(versions, exports):
            if param_types(pparams) != param_types(decls[export]):
                errors.append(f"{export}: PFN_{base}_v{version}{suffix} has ({pparams}) but "
                              f"cuda.h declares ({decls[export]})")
                continue
            variants[base].append((version, kind, export, f"PFN_{base}_v{version}{suffix}"))
    if errors:
        raise SystemExit("gen_hooks: headers disagree:\n  " + "\n  ".join(errors))
    return variants


def read_hooks(path, variants):
    by_export = {v[2]: (base, v) for base, vs in variants.items() for v in vs}
    hooks = collections.OrderedDict()  # export -> (kind, base, variant, section)
    section = ""
    errors = []
    for lineno, raw in enumerate(open(path), 1):
        if raw.startswith("## "):
            section = raw[3:].strip()
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        fields = line.split()
        if len(fields) != 2 or fields[0] not in ("custom", "gate"):
            errors.append(f"{path}:{lineno}: expected '<custom|gate> <name>'")
            continue
        kind, name = fields
        if kind == "custom":
            if name not in by_export:
                errors.append(f"{path}:{lineno}: {name} is not an exported driver symbol")
                continue
            base, v = by_export[name]
            targets = [(name, base, v)]
        else:
            if name not in variants:
                errors.append(f"{path}:{lineno}: {name} is not a driver base name")
                continue
            targets = [(v[2], name, v) for v in variants[name]]
        for export, base, v in targets:
            if export in hooks:
                errors.append(f"{path}:{lineno}: {export} is hooked twice")
            hooks[export] = (kind, base, v, section)
    if errors:
        raise SystemExit("gen_hooks: " + "\n  ".join(errors))
    return hooks


def write_if_changed(path, text):
    if os.path.exists(path) and open(path).read() == text:
        return
    with open(path, "w") as f:
        f.write(text)


HEADER = "// Generated by preload/gen/gen_hooks.py from cuda.h, cudaTypedefs.h and hooks.txt. Do not edit.\n"


def gen_hook_table(hooks):
    lines = [HEADER, "#pragma once\n",
             "// X(export, PFN type of that exact variant) for every hooked export.",
             "#define GSHARE_HOOKED_EXPORTS(X) \\"]
    for export, (_, _, v, _) in hooks.items():
        lines.append(f"  X({export}, {v[3]}) \\")
    lines.append("")
    lines.append(f"#define GSHARE_HOOKED_EXPORT_COUNT {len(hooks)}")
    return "\n".join(lines) + "\n"


def gen_variants(variants, hooks):
    hooked_bases = sorted({h[1] for h in hooks.values()})
    lines = [HEADER, "// {base, ABI version, stream kind, export, hooked}, sorted by base, kind, version."]
    for base in hooked_bases:
        for version, kind, export, _ in sorted(variants[base], key=lambda v: (v[1], v[0])):
            lines.append(f'{{"{base}", {version}, StreamKind::{KINDS[kind]}, "{export}", '
                         f'{"true" if export in hooks else "false"}}},')
    return "\n".join(lines) + "\n"


def stream_expression(export, params):
    """The stream a submission goes to (for the in-flight tracker): its CUstream parameter, the
    launch configuration's stream, or nullptr (the default stream: calls without a stream)."""
    for p in split_params(params):
        if re.match(r"^CUstream\s+\w+$", p):
            return param_name(p)
    for p in split_params(params):
        if re.match(r"^const CUlaunchConfig\s*\*\s*\w+$", p):
            name = param_name(p)
            return f"{name} != nullptr ? {name}->hStream : nullptr"
    return "nullptr"


def gen_forwarders(hooks, decls):
    lines = [HEADER,
             "// Forwarders for work-submitting calls: pass the submission gate, call the real driver.",
             "// Each has a fast path (FastGatedCall, inlined) and its full path (Gated_<export>).",
             "#include <cuda.h>", "#include <cudaTypedefs.h>", "",
             '#include "hooks/submission.h"', "",
             'extern "C" {', ""]
    for export, (kind, _, _, _) in hooks.items():
        if kind != "gate":
            continue
        params = decls[export]
        names = [param_name(p) for p in split_params(params)]
        if any(n is None for n in names):
            raise SystemExit(f"gen_hooks: cannot name the parameters of {export}({params})")
        args = ", ".join(names)
        per_thread = 'true' if export.endswith(('_ptsz', '_ptds')) else 'false'
        stream = stream_expression(export, params)
        lines += ["namespace {",
                  f"[[gnu::noinline]] CUresult Gated_{export}({params}) {{",
                  f'  return gshare::preload::GatedSubmission(  // GSHARE_BACKTRACE',
                  f'      "{export}", {stream}, {per_thread},',
                  "      [&](const gshare::preload::RealDriver& real) {",
                  f"        const auto real_fn = real.{export};",
                  f"        return real_fn != nullptr ? real_fn({args})",
                  "                                  : gshare::preload::MissingEntryPoint(real);",
                  "      });",
                  "}",
                  "}  // namespace",
                  f"GSHARE_EXPORT CUresult {export}({params}) {{",
                  f"  return gshare::preload::FastGatedCall<&gshare::preload::RealDriver::{export}, "
                  f"&Gated_{export}, {per_thread}>(",
                  f'      "{export}", {stream}{", " if args else ""}{args});',
                  "}", ""]
    lines.append('}  // extern "C"')
    return "\n".join(lines) + "\n"


def gen_version_script(hooks):
    names = "\n".join(f"    {e};" for e in hooks)
    return ("/* Generated by preload/gen/gen_hooks.py. Only the hooked driver entry points and dlsym\n"
            "   (under both glibc versions) are exported; everything else is local. */\n"
            "GLIBC_2.2.5 {\n  global:\n    dlsym;\n};\n"
            "GLIBC_2.34 {\n  global:\n    dlsym;\n} GLIBC_2.2.5;\n"
            "GSHARE_CUDA {\n  global:\n" + names + "\n  local:\n    *;\n};\n")


def gen_markdown(hooks, variants):
    out = ["# Hooked CUDA driver entry points", "",
           "Generated by `preload/gen/gen_hooks.py` from `preload/gen/hooks.txt` and the CUDA",
           "headers; do not edit. `tests/preload` checks that this file matches the build",
           "(regenerate: build `gshare_preload` and copy `build/preload/generated/hooks.md`).", "",
           f"{len(hooks)} exported symbols. *custom*: hand-written hook; *gate*: generated",
           "forwarder through the submission gate. Every other driver symbol passes straight",
           "through (dlsym and cuGetProcAddress return the real driver's function).", ""]
    by_section = collections.OrderedDict()
    for export, (kind, base, v, section) in hooks.items():
        by_section.setdefault(section or "Hooks", []).append((export, kind, base, v))
    for section, rows in by_section.items():
        out += [f"## {section}", "", "| export | base | ABI version | stream | hook |",
                "|---|---|---|---|---|"]
        for export, kind, base, v in rows:
            out.append(f"| `{export}` | {base} | {v[0]} | {v[1] or '-'} | {kind} |")
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cc", required=True, help="C compiler used as preprocessor")
    ap.add_argument("--cuda-include", required=True)
    ap.add_argument("--hooks", required=True)
    ap.add_argument("--out-dir", required=True)
    a = ap.parse_args()
    text = preprocess(a.cc, a.cuda_include)
    decls, pfns = parse(text)
    variants = pair_variants(decls, pfns)
    hooks = read_hooks(a.hooks, variants)
    os.makedirs(a.out_dir, exist_ok=True)
    write_if_changed(os.path.join(a.out_dir, "hook_table.h"), gen_hook_table(hooks))
    write_if_changed(os.path.join(a.out_dir, "variants.inc"), gen_variants(variants, hooks))
    write_if_changed(os.path.join(a.out_dir, "forwarders.cc"), gen_forwarders(hooks, decls))
    write_if_changed(os.path.join(a.out_dir, "libgshare.map"), gen_version_script(hooks))
    write_if_changed(os.path.join(a.out_dir, "hooks.md"), gen_markdown(hooks, variants))
    return 0


if __name__ == "__main__":
    sys.exit(main())
