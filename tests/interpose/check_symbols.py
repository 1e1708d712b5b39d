#!/usr/bin/env python3
"""libgrape.so exports exactly the names in tests/exported_symbols.txt (the CUDA
overrides and dlsym) plus public grape_* API names (GRAPE_API), nothing else.
usage: check_symbols.py NM LIBGRAPE EXPECTED_LIST"""
import subprocess
import sys

nm, lib, listing = sys.argv[1:4]
out = subprocess.run([nm, "-D", "--defined-only", lib], check=True, capture_output=True,
                     text=True).stdout
exported = {line.split()[-1].split("@")[0] for line in out.splitlines() if line.strip()}
expected = {l.strip() for l in open(listing) if l.strip() and not l.startswith("#")}
extra = sorted(s for s in exported - expected if not s.startswith("grape_"))
missing = sorted(expected - exported)
for s in extra:
    print("exported but not listed:", s)
for s in missing:
    print("listed but not exported:", s)
sys.exit(1 if extra or missing else 0)
