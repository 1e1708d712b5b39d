#!/usr/bin/env python3
"""cuda_api.py: the CUDA runtime and driver API, read from the CUDA headers.

Lists (a) every function of cuda_runtime_api.h and (b) every driver entry
point a program can obtain: each exported symbol of cuda.h and each
(cuGetProcAddress name, version, per-thread variant) triple of cudaTypedefs.h
with the symbol it resolves to. Python 3 standard library only.

    scripts/cuda_api.py --runtime [--json] [--include DIR]
    scripts/cuda_api.py --driver  [--json] [--include DIR]

DIR defaults to $CUDA_HOME/include, else /usr/local/cuda/include. Text output
is one line per function, its prototype with "  [ptds]"/"  [ptsz]" after the
per-thread forms (--runtime), or one line per triple, "name version variant
symbol" with "-" for the plain variant, e.g. "cuMemAlloc 3020 - cuMemAlloc_v2"
(--driver); --json prints the structures below. Exit status 1, with one line
on stderr, when a header cannot be read or parsed.

DESIGN: the headers are read with a small preprocessor of our own, not with
cpp, because the answers live in the macros cpp would consume: cuda.h maps
API names to exported symbols with `#define cuMemAlloc cuMemAlloc_v2` and
`#define cuMemcpyHtoD __CUDA_API_PTDS(cuMemcpyHtoD_v2)`, and both headers
declare their legacy and per-thread symbols only under
__CUDA_API_VERSION_INTERNAL (the view NVIDIA's own libraries are built with).
The preprocessor keeps a macro table in file order, evaluates #if/#elif with
a configuration (C, not C++; INTERNAL or a user's per-thread build), and
expands each declared function name with the macros live at its line, so a
declaration `cuMemcpyHtoD(...)` in the INTERNAL view declares
cuMemcpyHtoD_v2_ptds exactly as the compiler sees it.

The exported symbols are the functions declared in the INTERNAL view; the
user-visible name of each comes from the plain and the per-thread views.
cudaTypedefs.h gives the cuGetProcAddress triples as typedef names
PFN_<name>_v<version>[_ptds|_ptsz] with the signature of each; a triple's
symbol is found by matching that signature (typedefs resolved, parameter
names and const dropped) against the symbols <name>, <name>_v2, ... (with the
triple's per-thread suffix). Where several versions share one signature
(cuStreamWaitValue32 v8000 and v11070), older versions take the lower
suffixes in order. CUDA 12's cudaTypedefs.h also has `#define PFN_<name>
PFN_<name>_v<version>` lines (the version a program compiled against that
header gets); CUDA 13's has none. When present they are reported as
"default_pfn".

OUTPUT FORMAT (stable; other tools import this module)

runtime_functions(include_dir, header="cuda_runtime_api.h") -> list of dicts,
one per exported function, in header order (RUNTIME_OTHER_HEADERS names the
other headers whose functions the runtime exports: profiler, interop):
    name     exported symbol, e.g. "cudaMemcpy2DAsync_ptsz"
    base     API name, e.g. "cudaMemcpy2DAsync"
    variant  "" | "ptds" | "ptsz"  (per-thread default-stream variant)
    ret      return type, e.g. "cudaError_t", "const char*"
    params   list of {"type", "name", "decl"}: "decl" is the declaration as
             written with a name (a missing one becomes "a<index>"), "type"
             the declaration without the name
    proto    "ret name(decl, ...)", ready to compile against the header
    line     line of the declaration in the header
    header   the header's file name

driver_api(include_dir, header="cuda.h", typedefs_header="cudaTypedefs.h")
-> dict (DRIVER_OTHER_HEADERS names the profiler's pair of headers):
    symbols  list of dicts as above (ret is always "CUresult"), one per symbol
             exported by the driver: current (cuMemAlloc_v2), legacy
             (cuMemAlloc), per-thread (cuMemcpyHtoD_v2_ptds)
    procs    list of dicts, one per cudaTypedefs.h triple, sorted by name then
             version then variant:
               name     the cuGetProcAddress name, e.g. "cuMemAlloc"
               version  int, e.g. 3020: returned to callers asking >= this
               variant  "" | "ptds" | "ptsz": returned with
                        CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
               symbol   exported symbol it resolves to, e.g. "cuMemAlloc_v2"
               pfn      typedef name, e.g. "PFN_cuMemAlloc_v3020"
               params   as for symbols
    aliases  {API name: other base name} for cuda.h defines that map one API
             name onto another function (cuGraphInstantiate ->
             cuGraphInstantiateWithFlags)
    default_pfn  {name: PFN typedef} from `#define PFN_<name> ...` (CUDA 12)

Errors (a header missing, a triple without a symbol, a PFN typedef whose
name does not parse) raise CudaApiError; the CLI prints them and exits 1.
"""
import argparse
import json
import os
import re
import sys


class CudaApiError(Exception):
    pass


def write_if_changed(path, text):
    """Writes text to path unless it already holds exactly that, so that a
    build tool does not rebuild from a generated file that did not change."""
    try:
        with open(path) as f:
            if f.read() == text:
                return
    except OSError:
        pass
    with open(path, "w") as f:
        f.write(text)


def default_include():
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH") or "/usr/local/cuda"
    return os.path.join(home, "include")


# ---- A small preprocessor ----

_COMMENT = re.compile(r'("(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\')|/\*.*?\*/|//[^\n]*', re.S)


def _strip_comments(text):
    # A comment becomes a space and its newlines, so line numbers hold.
    def repl(m):
        if m.group(1):
            return m.group(1)
        return " " + "\n" * m.group(0).count("\n")
    return _COMMENT.sub(repl, text)


def _join_continuations(lines):
    """Joins backslash-continued lines; returns [(line_no, text)]."""
    out, buf, start = [], None, 0
    for i, line in enumerate(lines, 1):
        if buf is None:
            buf, start = line, i
        else:
            buf += " " + line
        if buf.endswith("\\"):
            buf = buf[:-1]
            continue
        out.append((start, buf))
        buf = None
    if buf is not None:
        out.append((start, buf))
    return out


_TOKEN = re.compile(r"\s*(\d+[uUlL]*|[A-Za-z_]\w*|&&|\|\||==|!=|>=|<=|[()!<>+\-*/%])")
_DEFINED = re.compile(r"\bdefined\s*(?:\(\s*([A-Za-z_]\w*)\s*\)|([A-Za-z_]\w*))")


def _eval_cond(expr, macros):
    """Evaluates a #if expression: object-like macros expand, unknown
    identifiers are 0, as in cpp."""
    expr = _DEFINED.sub(lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", expr)
    for _ in range(16):
        def repl(m):
            v = macros.get(m.group(0))
            return "(" + v[1] + ")" if v is not None and v[0] is None and v[1] else "0"
        new = re.sub(r"\b[A-Za-z_]\w*\b", repl, expr)
        new = _DEFINED.sub(lambda m: "1" if (m.group(1) or m.group(2)) in macros else "0", new)
        if new == expr:
            break
        expr = new
    py, pos = [], 0
    while pos < len(expr):
        m = _TOKEN.match(expr, pos)
        if not m:
            if expr[pos:].strip() == "":
                break
            raise CudaApiError(f"cannot evaluate #if {expr!r}")
        tok, pos = m.group(1), m.end()
        if tok[0].isdigit():
            py.append(tok.rstrip("uUlL"))
        elif tok[0].isalpha() or tok[0] == "_":
            py.append("0")
        else:
            py.append({"&&": " and ", "||": " or ", "!": " not "}.get(tok, tok))
    try:
        return bool(eval("".join(py) or "0", {"__builtins__": {}}, {}))
    except Exception as e:  # a malformed expression in a header
        raise CudaApiError(f"cannot evaluate #if {expr!r}: {e}")


class View:
    """A header read under one configuration: the active code, with the macro
    table live at each line (macros: name -> (params or None, body))."""

    def __init__(self, path, defines):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                raw = f.read()
        except OSError as e:
            raise CudaApiError(f"cannot read {path}: {e.strerror}")
        self.path = path
        self.macros_at = []          # per active code line: the macro table (shared until changed)
        self.code = []               # (line_no, text) of active non-directive lines
        macros = {k: (None, v) for k, v in defines.items()}
        self.all_defines = []        # (line_no, name, params, body) seen while active
        stack = []                   # (taking, taken_any, parent_active)
        active = True
        for no, line in _join_continuations(_strip_comments(raw).split("\n")):
            s = line.strip()
            m = re.match(r"#\s*(\w+)\s*(.*)", s)
            if not m:
                if active:
                    self.code.append((no, line))
                    self.macros_at.append(macros)
                continue
            d, rest = m.group(1), m.group(2).strip()
            if d in ("if", "ifdef", "ifndef"):
                if not active:
                    stack.append((False, True, False))
                    continue
                if d == "ifdef":
                    c = rest.split()[0] in macros
                elif d == "ifndef":
                    c = rest.split()[0] not in macros
                else:
                    c = _eval_cond(rest, macros)
                stack.append((c, c, active))
                active = c
            elif d == "elif":
                taking, taken, parent = stack.pop()
                c = parent and not taken and _eval_cond(rest, macros)
                stack.append((c, taken or c, parent))
                active = c
            elif d == "else":
                taking, taken, parent = stack.pop()
                c = parent and not taken
                stack.append((c, True, parent))
                active = c
            elif d == "endif":
                if not stack:
                    raise CudaApiError(f"{path}:{no}: #endif without #if")
                active = stack.pop()[2]
            elif not active:
                continue
            elif d == "define":
                dm = re.match(r"([A-Za-z_]\w*)(\(([^)]*)\))?\s*(.*)", rest)
                if dm:
                    params = None
                    if dm.group(2):
                        params = [p.strip() for p in dm.group(3).split(",") if p.strip()]
                    macros = dict(macros)
                    macros[dm.group(1)] = (params, dm.group(4).strip())
                    self.all_defines.append((no, dm.group(1), params, dm.group(4).strip()))
            elif d == "undef":
                name = rest.split()[0] if rest else ""
                if name in macros:
                    macros = dict(macros)
                    del macros[name]
        if stack:
            raise CudaApiError(f"{path}: unterminated #if")
        self.text = "\n".join(t for _, t in self.code)
        # offset of each code line in self.text, for mapping matches back
        self.offsets, off = [], 0
        for _, t in self.code:
            self.offsets.append(off)
            off += len(t) + 1

    def where(self, offset):
        """(line_no, macros) of the code line holding text offset."""
        lo, hi = 0, len(self.offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.offsets[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return self.code[lo][0], self.macros_at[lo]


def expand_name(name, macros, _busy=frozenset()):
    """Expands an identifier through object-like macros and the simple
    function-like ones the headers use (api ## _ptds). As in cpp, a macro is
    not expanded again inside its own expansion."""
    if name in _busy or name not in macros or macros[name][0] is not None:
        return name
    busy = _busy | {name}
    body = macros[name][1]
    m = re.fullmatch(r"([A-Za-z_]\w*)\s*\(\s*([A-Za-z_]\w*)\s*\)", body)
    if m and m.group(1) in macros and macros[m.group(1)][0] is not None:
        fparams, fbody = macros[m.group(1)]
        if len(fparams) == 1:
            arg = m.group(2) if "##" in fbody else expand_name(m.group(2), macros, busy)
            out = re.sub(r"\b%s\b" % re.escape(fparams[0]), arg, fbody)
            out = re.sub(r"\s*##\s*", "", out).strip()
            return expand_name(out, macros, busy | {m.group(1)})
    if re.fullmatch(r"[A-Za-z_]\w*", body):
        return expand_name(body, macros, busy)
    return name


# ---- Declarations ----

_QUALIFIERS = {"const", "volatile", "restrict", "struct", "enum", "union"}
_BASIC_TYPES = {"void", "char", "short", "int", "long", "float", "double", "signed", "unsigned",
                "size_t", "_Bool"}
_TYPE_WORDS = _QUALIFIERS | _BASIC_TYPES


def _split_params(text):
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([{":
            depth += 1
        elif ch in ")]}":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    parts.append(cur)
    return [" ".join(p.split()) for p in parts if p.strip()]


def _param(decl, index):
    """One parameter declaration as {"type", "name", "decl"} (see the header)."""
    decl = re.sub(r"\b__dv\s*\([^)]*\)", "", decl)       # runtime default arguments
    decl = " ".join(re.sub(r"\s*=\s*[^,]*$", "", decl).split())   # C++ default values
    fp = re.search(r"\(\s*(?:\w+\s+)?\*\s*([A-Za-z_]\w*)?\s*\)", decl)
    if fp:                                                  # a function pointer
        name = fp.group(1) or f"a{index}"
        start = fp.start(1) if fp.group(1) else fp.end() - 1
        end = fp.end(1) if fp.group(1) else fp.end() - 1
        typ = decl[:start] + decl[end:]
        return {"type": " ".join(typ.split()), "name": name,
                "decl": decl[:start] + name + decl[end:]}
    arr = ""
    m = re.search(r"(\[[^\]]*\])+\s*$", decl)
    if m:
        arr, decl = m.group(0), decl[:m.start()].rstrip()
    m = re.search(r"([A-Za-z_]\w*)\s*$", decl)
    words = re.findall(r"[A-Za-z_]\w*", decl)
    # A declaration names its parameter when its last word is not a type word
    # and a type precedes it ("CUstream hStream", not "size_t" or "const CUdevice").
    named = (m is not None and m.group(1) not in _TYPE_WORDS and
             len([w for w in words if w not in _QUALIFIERS]) >= 2)
    if named:
        name, typ = m.group(1), decl[:m.start()].rstrip()
    else:
        name, typ = f"a{index}", decl
    sep = "" if typ.endswith("*") else " "
    return {"type": typ + arr, "name": name, "decl": f"{typ}{sep}{name}{arr}"}


def _params(text):
    parts = _split_params(text)
    if parts == ["void"] or not parts:
        return []
    return [_param(p, i) for i, p in enumerate(parts)]


_RET_NOISE = re.compile(r"\b(extern|__host__|__device__|__cudart_builtin__|CUDART_DEVICE|"
                        r"__CUDA_DEPRECATED|EXCLUDE_FROM_RTC|static|__inline__)\b")


def _find_decls(view, api_macro, ret_pattern):
    """Yields (line, declared name, ret, params text) for `ret API name(...);`."""
    rx = re.compile(r"\b%s\s+([A-Za-z_]\w*)\s*\(" % api_macro)
    text = view.text
    for m in rx.finditer(text):
        start = m.end()
        depth, i = 1, start
        while i < len(text) and depth:
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
            i += 1
        tail = text[i:i + 40].lstrip()
        if not tail.startswith(";"):
            continue                                 # a definition or a typedef, not a declaration
        ret = " ".join(text[max(text.rfind(c, 0, m.start()) for c in ";{}()") + 1:m.start()].split())
        ret = " ".join(_RET_NOISE.sub(" ", ret).split())
        if not re.fullmatch(ret_pattern, ret):
            continue
        line, macros = view.where(m.start(1))
        yield line, expand_name(m.group(1), macros), ret, text[start:i - 1], m.group(1)


def _typedefs(view):
    """Simple typedef aliases of a header: name -> aliased type text."""
    out = {}
    text = view.text
    for m in re.finditer(r"\btypedef\s+([^;{}()]+?)\s*([A-Za-z_]\w*)\s*;", text):
        out[m.group(2)] = m.group(1)
    # typedef struct/enum/union Tag { ... } Name, *PName;
    for m in re.finditer(r"\btypedef\s+(struct|enum|union)\s*([A-Za-z_]\w*)?\s*\{", text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        n = re.match(r"\s*([^;]*);", text[i:])
        if not n:
            continue
        tag = m.group(2) or ("anon@%d" % m.start())
        for d in n.group(1).split(","):
            d = d.strip()
            nm = re.search(r"([A-Za-z_]\w*)\s*$", d)
            if nm:
                out[nm.group(1)] = f"{m.group(1)} {tag}" + (" *" * d.count("*"))
    return out


_TOKENS = re.compile(r"[A-Za-z_]\w*|\S")
_TYPE_NOISE = {"const", "volatile", "CUDA_CB", "CUDAAPI", "CUDART_CB"}


def _norm_type(typ, typedefs, _depth=0):
    """A canonical spelling of a type: typedef names replaced by what they
    name (not after struct/enum/union), const and spaces dropped."""
    out, prev = [], None
    for t in _TOKENS.findall(typ):
        if (t in typedefs and t not in _TYPE_WORDS and prev not in ("struct", "enum", "union")
                and _depth < 16):
            out.append(_norm_type(typedefs[t], typedefs, _depth + 1))
        elif t not in _TYPE_NOISE:
            out.append(t)
        prev = t
    return "".join(out)


def _signature(params, typedefs):
    return tuple(_norm_type(p["type"], typedefs) for p in params)


def _proto(ret, name, params):
    return f"{ret} {name}({', '.join(p['decl'] for p in params) or 'void'})"


def _variant(sym):
    m = re.search(r"_(ptds|ptsz)$", sym)
    return m.group(1) if m else ""


# ---- Runtime ----

# The other headers whose functions NVIDIA's libcudart.so.13 exports: the
# profiler's and the graphics interop ones (their window-system types come
# from OpenGL's, EGL's and VDPAU's own headers).
RUNTIME_OTHER_HEADERS = ("cuda_profiler_api.h", "cuda_gl_interop.h", "cuda_egl_interop.h",
                         "cuda_vdpau_interop.h")


def runtime_functions(include_dir=None, header="cuda_runtime_api.h"):
    """Every function a runtime header declares (cuda_runtime_api.h unless
    told), per exported symbol (see the header of this file)."""
    include_dir = include_dir or default_include()
    path = os.path.join(include_dir, header)
    internal = View(path, {"__CUDA_API_VERSION_INTERNAL": "1"})
    funcs, seen = [], {}
    for line, name, ret, ptext, written in _find_decls(internal, "CUDARTAPI", r".+"):
        params = _params(ptext)
        variant = _variant(name)
        base = name[:-5] if variant else name
        f = {"name": name, "base": base, "variant": variant, "ret": ret, "params": params,
             "proto": _proto(ret, name, params), "line": line, "header": header}
        if name in seen:
            old = seen[name]
            if [p["type"] for p in old["params"]] != [p["type"] for p in params]:
                raise CudaApiError(f"{path}:{line}: {name} declared twice with different parameters")
            continue
        seen[name] = f
        funcs.append(f)
    if not funcs:
        raise CudaApiError(f"{path}: no CUDARTAPI declarations found")
    return funcs


# ---- Driver ----

def _pfn_typedefs(include_dir, header="cudaTypedefs.h"):
    path = os.path.join(include_dir, header)
    view = View(path, {"__CUDA_API_VERSION_INTERNAL": "1"})
    out = []
    rx = re.compile(r"\btypedef\s+CUresult\s*\(\s*CUDAAPI\s*\*\s*(PFN_\w+)\s*\)\s*\(")
    text = view.text
    for m in rx.finditer(text):
        depth, i = 1, m.end()
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        pfn = m.group(1)
        pm = re.fullmatch(r"PFN_(\w+?)_v(\d+)(?:_(ptds|ptsz))?", pfn)
        if not pm:
            raise CudaApiError(f"{path}: cannot parse typedef name {pfn}")
        line, _ = view.where(m.start())
        out.append({"name": pm.group(1), "version": int(pm.group(2)), "variant": pm.group(3) or "",
                    "pfn": pfn, "ptext": text[m.end():i - 1], "line": line})
    defaults = {}
    for no, name, params, body in view.all_defines:
        if name.startswith("PFN_") and params is None:
            defaults[name[4:]] = body
    if not out:
        raise CudaApiError(f"{path}: no PFN typedefs found")
    return out, defaults


def _suffix_rank(base, sym):
    """Order of a symbol among base's versions: base=1, base_v2=2, ..."""
    core = re.sub(r"_(ptds|ptsz)$", "", sym)
    if core == base:
        return 1
    m = re.fullmatch(re.escape(base) + r"_v(\d+)", core)
    return int(m.group(1)) if m else None


# The driver's other header pair: the profiler's functions (libcuda.so.1
# exports them and cuGetProcAddress resolves them, as cuda.h's).
DRIVER_OTHER_HEADERS = (("cudaProfiler.h", "cudaProfilerTypedefs.h"),)


def driver_api(include_dir=None, header="cuda.h", typedefs_header="cudaTypedefs.h"):
    """Every driver symbol and cuGetProcAddress triple of a header and its
    PFN typedefs (cuda.h and cudaTypedefs.h unless told; see the header of
    this file)."""
    include_dir = include_dir or default_include()
    path = os.path.join(include_dir, header)
    internal = View(path, {"__CUDA_API_VERSION_INTERNAL": "1"})
    typedefs = _typedefs(internal)
    symbols, seen = [], {}
    for line, name, ret, ptext, written in _find_decls(internal, "CUDAAPI", r"CUresult"):
        params = _params(ptext)
        if name in seen:
            continue
        f = {"name": name, "base": None, "variant": _variant(name), "ret": ret, "params": params,
             "proto": _proto(ret, name, params), "line": line, "header": header}
        seen[name] = f
        symbols.append(f)
    if not symbols:
        raise CudaApiError(f"{path}: no CUDAAPI declarations found")

    # The user-visible name of each symbol: the plain and per-thread views.
    aliases = {}
    for defs in ({}, {"CUDA_API_PER_THREAD_DEFAULT_STREAM": "1"}):
        view = View(path, defs)
        for line, name, ret, ptext, written in _find_decls(view, "CUDAAPI", r"CUresult"):
            if name in seen and seen[name]["base"] is None:
                seen[name]["base"] = written
        for no, mname, params, body in view.all_defines:
            if params is None and re.fullmatch(r"cu[A-Z]\w*", mname):
                target = re.sub(r"_(ptds|ptsz)$", "", expand_name(mname, view.macros_at[-1])
                                if mname in view.macros_at[-1] else body)
                if (re.fullmatch(r"cu[A-Z]\w*", target) and target != mname
                        and not target.startswith(mname + "_v")):
                    aliases[mname] = target
    for f in symbols:
        if f["base"] is None:
            core = re.sub(r"_(ptds|ptsz)$", "", f["name"])
            f["base"] = re.sub(r"_v\d+$", "", core)

    pfns, defaults = _pfn_typedefs(include_dir, typedefs_header)
    by_base = {}
    for f in symbols:
        core = re.sub(r"_(ptds|ptsz)$", "", f["name"])
        by_base.setdefault(re.sub(r"_v\d+$", "", core), []).append(f)
        by_base.setdefault(core, []).append(f) if core != re.sub(r"_v\d+$", "", core) else None
    procs = []
    groups = {}
    for p in pfns:
        groups.setdefault((p["name"], p["variant"]), []).append(p)
    for (name, variant), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r["version"])
        cands = []
        for f in by_base.get(name, []):
            rank = _suffix_rank(name, f["name"])
            if rank is not None and f["variant"] == variant and f not in cands:
                cands.append(f)
        cands.sort(key=lambda f: _suffix_rank(name, f["name"]))
        last_rank = 0
        for r in rows:
            params = _params(r["ptext"])
            sig = _signature(params, typedefs)
            match = [f for f in cands if _signature(f["params"], typedefs) == sig]
            later = [f for f in match if _suffix_rank(name, f["name"]) > last_rank]
            pick = later[0] if later else (match[-1] if match else None)
            if pick is None:
                raise CudaApiError(f"{typedefs_header}:{r['line']}: no symbol of {header} has "
                                   f"the signature of {r['pfn']}")
            last_rank = _suffix_rank(name, pick["name"])
            procs.append({"name": name, "version": r["version"], "variant": variant,
                          "symbol": pick["name"], "pfn": r["pfn"], "params": params})
    procs.sort(key=lambda p: (p["name"], p["version"], p["variant"]))
    return {"symbols": symbols, "procs": procs, "aliases": dict(sorted(aliases.items())),
            "default_pfn": defaults}


# ---- CLI ----

def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--runtime", action="store_true", help="functions of cuda_runtime_api.h")
    g.add_argument("--driver", action="store_true", help="driver symbols and cuGetProcAddress triples")
    ap.add_argument("--json", action="store_true", help="print the structures as JSON")
    ap.add_argument("--include", default=None, help="CUDA include directory")
    a = ap.parse_args(argv)
    try:
        if a.runtime:
            funcs = runtime_functions(a.include)
            if a.json:
                json.dump(funcs, sys.stdout, indent=1)
                print()
            else:
                for f in funcs:
                    print(f["proto"] + (f"  [{f['variant']}]" if f["variant"] else ""))
        else:
            d = driver_api(a.include)
            if a.json:
                json.dump(d, sys.stdout, indent=1)
                print()
            else:
                for p in d["procs"]:
                    print(f"{p['name']} {p['version']} {p['variant'] or '-'} {p['symbol']}")
    except CudaApiError as e:
        print(f"cuda_api.py: error: {e}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
