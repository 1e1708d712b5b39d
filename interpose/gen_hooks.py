#!/usr/bin/env python3
"""gen_hooks.py: the shim's hook rows for every function of the CUDA headers.

Reads the driver's cuGetProcAddress triples and the runtime's functions
(scripts/cuda_api.py) and the classification interpose/api.txt, and writes
hooks_gen.def: one X-macro row per exported symbol that is not harmless,
which interpose/hooks.def includes, so that every route (exported override,
dlsym, cuGetProcAddress, cudaGetDriverEntryPoint) reaches a hook for it.

    gen_hooks.py --classes api.txt --out hooks_gen.def [--include DIR]
                 [--unclassified FILE] [--classes-json FILE]

Rows (see hooks.def for the fields):
  GRAPE_DRV(ret, symbol, base, "gpa name", version, ptds, KIND, stream, (params), (args))
  GRAPE_DRV0(ret, symbol, base, "gpa name", version, ptds, KIND)        no arguments
  GRAPE_RT(symbol, base, ptds, KIND, stream, (params), (args))
  GRAPE_RT0(symbol, base, ptds, KIND)                                   no arguments
base is the symbol without its _ptsz/_ptds suffix (a symbol and its
per-thread twin share one hand-written hook). A `custom` class applies to
the newest ABI of each variant; an older ABI of the same name (cuMemAlloc
with 32-bit sizes) gets SYNC_ALL, which needs no hand-written code. `manual`
(functions written out whole) applies to every ABI. A line whose pattern
names one ABI, NAME@VERSION (cuMemcpy3DBatchAsync@12080), classes that ABI
before the name's lines, and its class is kept even for an older ABI: the
line promises the code for that ABI's parameters (copies.h).

--unclassified lists header functions no line of api.txt matched (they get
SYNC_ALL); --classes-json writes {"driver": {gpa name: class},
"driver_symbols": {symbol: class}, "runtime": {name: class}} for the tests. A classification that cannot be applied (a *_stream class on a
function with no stream argument, or two) stops the build with a message.
"""
import argparse
import fnmatch
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scripts"))
import cuda_api  # noqa: E402

KINDS = {"sync_stream": "SYNC_STREAM", "wait_stream": "WAIT_STREAM", "sync_all": "SYNC_ALL",
         "wait_all": "WAIT_ALL", "report": "REPORT", "custom": "CUSTOM", "manual": "MANUAL",
         "copy_all": "COPY_ALL", "copy_stream": "COPY_STREAM",
         "memset_all": "MEMSET_ALL", "memset_stream": "MEMSET_STREAM",
         "graph_stream": "GRAPH_STREAM", "graph_made": "GRAPH_MADE",
         "graph_made_all": "GRAPH_MADE_ALL"}
# What an older ABI of a name gets when its class needs code written for the
# newest one's parameters (a hand-written hook, a copy's description).
OLDER_ABI = {"custom": "sync_all", "copy_all": "wait_all", "copy_stream": "sync_stream",
             "memset_all": "wait_all", "memset_stream": "sync_stream", "graph_stream": "sync_stream"}
STREAM_TYPES = {"CUstream", "cudaStream_t"}


def read_classes(path):
    rules = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) not in (2, 3) or (line[1] not in ("harmless", "interop") and line[1] not in KINDS):
                sys.exit(f"{path}:{n}: want 'PATTERN CLASS [STREAM]', CLASS one of harmless, interop, "
                         f"{', '.join(KINDS)}")
            rules.append((line[0], line[1], line[2] if len(line) == 3 else None, n))
    return rules


def classify(rules, name):
    for pat, cls, stream, n in rules:
        if fnmatch.fnmatchcase(name, pat):
            return cls, stream
    return None, None


def classify_abi(rules, p):
    """The class and stream argument a NAME@VERSION line gives driver ABI p, or Nones."""
    return classify([r for r in rules if "@" in r[0]], f'{p["name"]}@{p["version"]}')


def stream_arg(f, named, where):
    if named:
        if named not in [p["name"] for p in f["params"]]:
            sys.exit(f"{where}: {f['name']} has no parameter '{named}'")
        return named
    s = [p["name"] for p in f["params"] if p["type"].strip() in STREAM_TYPES]
    if len(s) != 1:
        sys.exit(f"{where}: {f['name']} has {len(s)} stream parameters; name the one to flush")
    return s[0]


def params_of(f):
    return ("(" + ", ".join(p["decl"] for p in f["params"]) + ")",
            "(" + ", ".join(p["name"] for p in f["params"]) + ")")


def base_of(symbol):
    for suffix in ("_ptsz", "_ptds"):
        if symbol.endswith(suffix):
            return symbol[: -len(suffix)]
    return symbol


def class_of(rules, name, classes, unclassified):
    """name's class and named stream argument, recorded in classes; a name no
    line matches is listed in unclassified and gets sync_all (the safe default)."""
    cls, named = classify(rules, name)
    if cls is None:
        unclassified.append(name)
        cls = "sync_all"
    classes[name] = cls
    return cls, named


def row_fields(f, cls, named, name):
    """The KIND, ptds and stream fields of f's row."""
    kind = KINDS[cls]
    ptds = 1 if f["variant"] else 0
    stream = stream_arg(f, named, f"api.txt ({name})") if kind.endswith("STREAM") else "0"
    return kind, ptds, stream


def driver_rows(api, rules, classes, symbols, unclassified):
    rows = []
    procs = api["procs"]
    newest = {}
    for p in procs:
        key = (p["name"], p["variant"])
        newest[key] = max(newest.get(key, 0), p["version"])
    seen = set()
    for p in procs:
        cls, named = class_of(rules, p["name"], classes, unclassified)
        abi_cls, abi_named = classify_abi(rules, p)
        if abi_cls is not None:
            cls, named = abi_cls, abi_named
        symbols[p["symbol"]] = cls
        if cls in ("harmless", "interop") or p["symbol"] in seen:
            continue
        seen.add(p["symbol"])
        if (abi_cls is None and cls in OLDER_ABI and
                p["version"] != newest[(p["name"], p["variant"])]):
            cls = OLDER_ABI[cls]   # an older ABI: no hand-written code for it
        kind, ptds, stream = row_fields(p, cls, named, p["name"])
        if not p["params"]:
            rows.append(f'GRAPE_DRV0(CUresult, {p["symbol"]}, {base_of(p["symbol"])}, "{p["name"]}", '
                        f'{p["version"]}, {ptds}, {kind})')
            continue
        params, args = params_of(p)
        rows.append(f'GRAPE_DRV(CUresult, {p["symbol"]}, {base_of(p["symbol"])}, "{p["name"]}", '
                    f'{p["version"]}, {ptds}, {kind}, {stream},\n          {params},\n          {args})')
    abis = {f'{p["name"]}@{p["version"]}' for p in procs}
    for pat, cls, stream, n in rules:
        if "@" in pat and not fnmatch.filter(abis, pat):
            sys.exit(f"api.txt:{n}: {pat} names no ABI of the driver's headers")
    return rows


def runtime_rows(funcs, rules, classes, unclassified):
    rows = []
    for f in funcs:
        cls, named = class_of(rules, f["base"], classes, unclassified)
        if cls in ("harmless", "interop"):
            continue
        if f["ret"].strip() != "cudaError_t":
            sys.exit(f"api.txt ({f['base']}): returns {f['ret']}, so it can only be harmless")
        kind, ptds, stream = row_fields(f, cls, named, f["base"])
        if not f["params"]:
            rows.append(f'GRAPE_RT0({f["name"]}, {base_of(f["name"])}, {ptds}, {kind})')
            continue
        params, args = params_of(f)
        rows.append(f'GRAPE_RT({f["name"]}, {base_of(f["name"])}, {ptds}, {kind}, {stream},\n'
                    f'         {params},\n         {args})')
    return rows


def main():
    ap = argparse.ArgumentParser(description="hook rows for every CUDA header function")
    ap.add_argument("--classes", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--include", default=cuda_api.default_include())
    ap.add_argument("--unclassified")
    ap.add_argument("--classes-json")
    a = ap.parse_args()
    try:
        api = cuda_api.driver_api(a.include)
        funcs = cuda_api.runtime_functions(a.include)
    except cuda_api.CudaApiError as e:
        sys.exit(f"gen_hooks.py: {e}")
    rules = read_classes(a.classes)
    unclassified, dclasses, dsymbols, rclasses = [], {}, {}, {}
    drv = driver_rows(api, rules, dclasses, dsymbols, unclassified)
    rt = runtime_rows(funcs, rules, rclasses, unclassified)
    out = ["/* Generated by interpose/gen_hooks.py from the CUDA headers and",
           " * interpose/api.txt: do not edit. */"]
    out += ["", "/* ---- Driver ---- */"] + drv + ["", "/* ---- Runtime ---- */"] + rt + [""]
    with open(a.out + ".tmp", "w") as f:
        f.write("\n".join(out))
    os.replace(a.out + ".tmp", a.out)
    if a.unclassified:
        with open(a.unclassified, "w") as f:
            f.write("".join(n + "\n" for n in sorted(set(unclassified))))
    if a.classes_json:
        with open(a.classes_json, "w") as f:
            json.dump({"driver": dclasses, "driver_symbols": dsymbols, "runtime": rclasses}, f,
                      indent=1, sort_keys=True)


if __name__ == "__main__":
    main()
