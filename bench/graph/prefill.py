#!/usr/bin/env python3
"""The concurrency showcase (examples/prefill.cu, docs/concurrency.md) on the
simulated device under the sourced cost profiles: chain graphs
(GRAPE_CONCURRENCY=observe) against safe and go modes, end to end and per region.

- End to end: --iters prompts of hashed lengths at full size, eager and in
  graph mode (observe, safe), per profile: simulated end, host time, the
  speed-up of safe over the chain, plans built/kept/reverted.
- Per region: every prompt --len T tokens (one chunk of T tokens, one graph
  key), per T and profile: the mean device time of a timed segment launch
  (graph mode cuts a chunk's region into segments, each timed on the
  device) under chain graphs (observe) and of safe mode's plans, their
  ratio, and the end-to-end ratio of the same short runs (warm-up and trials
  included).
- go on the persistent-GEMM regions (--go-lens, T = 448 and 512 by default,
  the chunk lengths at which the shared expert's gate|up GEMM is persistent):
  every prompt one chunk of T tokens, --go-iters prompts, chain (observe),
  safe and go, with the sim's kernel timeline (SIMCU_TIMELINE). A
  persistent-GEMM region is the fork/join that holds the persistent GEMM:
  the GEMMs between the program kernels before and after it (the 8 routed
  experts' up projections and the shared expert's gate|up), from the time
  the first could start to the end of the last. Their mean over the last
  quarter of the prompts (steady state, the plans decided), go's speed-up
  over safe there, and beside it go's measured gain on its whole segment
  (go_gain_ns / go_timed_gain against the segment's safe plan), the
  simulated ends, the plans and the host rule's drops.
- Exact: --small sizes (bodies run) eager and in safe mode under the reversed
  graph order: the checksums must agree.

Full-size runs skip the kernels' bodies (SIMCU_TIME_ONLY=1): the example's path
does not depend on its results, so the times are those of a full run. Builds
are free in the shim's cost model and happen on its builder thread, as in
bench/graph/concurrency.py.

usage: prefill.py --prog build/examples/prefill --simdir build/sim:build/sim/cublas
                  --lib build/interpose/libgrape.so [--iters 30] [--lens 64 256 512]
                  [--go-lens 448 512] [--go-iters 40] [--go-only]"""
import argparse
import collections
import sys

import simrun

PROFILES = ("default", "fair")


def env(profile, mode=None):
    e = {"SIMCU_TIME_ONLY": "1", "SIMCU_COSTS": profile, "GRAPE_COSTS": "build=0,build_node=0"}
    if mode:
        e["GRAPE_CONCURRENCY"] = mode
    return e


def persistent_regions_ns(kernels):
    """The spans (ns) of the fork/joins holding a persistent GEMM on the
    program's stream (its most used one: a sampled check's private stream
    is left out), in order: a fork/join is a maximal run of the sim's
    cuBLAS kernels between two other kernels."""
    main = collections.Counter(k.stream for k in kernels).most_common(1)[0][0]
    spans, group = [], []
    for k in kernels + [None]:
        if k is not None and k.stream != main:
            continue
        if k is not None and k.name.startswith("simcublas_"):
            group.append(k)
            continue
        if any(g.name.endswith("_persistent") for g in group):
            spans.append(max(g.end for g in group) - min(g.ready for g in group))
        group = []
    return spans


def steady_us(spans):
    """The mean of the last quarter of spans, in us."""
    tail = spans[len(spans) * 3 // 4:]
    return sum(tail) / max(len(tail), 1) / 1e3


def go_table(a):
    """The go table (the module's docstring)."""
    print(f"\ngo on the persistent-GEMM regions: one chunk of T tokens per prompt, --iters {a.go_iters}; "
          "mean fork/join of the persistent GEMM over the last quarter of the prompts\n")
    print("| profile | T | chain us | safe us | go us | go vs safe (region) | go vs safe (segment) "
          "| end ms chain / safe / go | go built/kept/reverted | dropped (host) | checks |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for prof in PROFILES:
        for t in a.go_lens:
            args = ["--iters", a.go_iters, "--len", t]
            runs = [simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=env(prof, m), timeline=True)
                    for m in ("observe", "safe", "go")]
            us = [steady_us(persistent_regions_ns(r.timeline)) for r in runs]
            sc, g = runs[1].grape["concurrency"], runs[2].grape["concurrency"]
            seg = ""
            if g.get("go_timed_gain") and sc["timed_plan"]:
                safe_us = sc["device_ns_plan"] / sc["timed_plan"] / 1e3
                gain_us = g["go_gain_ns"] / g["go_timed_gain"] / 1e3
                seg = f"{safe_us / (safe_us - gain_us):.2f}x ({gain_us:.1f} us, {g['go_timed_gain']} timed)"
            ends = " / ".join(f"{r.sim['sim_end_ns'] / 1e6:.2f}" for r in runs)
            print(f"| {prof} | {t} | {us[0]:.1f} | {us[1]:.1f} | {us[2]:.1f} | {us[1] / us[2]:.2f}x | {seg} "
                  f"| {ends} | {g.get('go_plans_built', 0)}/{g.get('go_plans_kept', 0)}/"
                  f"{g.get('go_plans_reverted', 0)} | {sc.get('plans_dropped_host', 0)} / "
                  f"{g.get('plans_dropped_host', 0)} | {g.get('numerics_checks', 0)} |")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--prog", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--lib", required=True)
    ap.add_argument("--iters", default="30")
    ap.add_argument("--lens", nargs="*", default=["64", "256", "512"])
    ap.add_argument("--small-iters", default="14")
    ap.add_argument("--go-lens", nargs="*", default=["448", "512"])
    ap.add_argument("--go-iters", default="40")
    ap.add_argument("--go-only", action="store_true", help="only the go table")
    a = ap.parse_args()
    if a.go_only:
        go_table(a)
        return
    bad = 0

    print(f"End to end, --iters {a.iters} (full size, timed only)\n")
    print("| profile | mode | sim_end ms | host ms | vs chain | plans built/kept/reverted | plan launches |")
    print("|---|---|---|---|---|---|---|")
    for prof in PROFILES:
        args = ["--iters", a.iters]
        e = simrun.run(a.prog, args, a.simdir, env=env(prof))
        print(f"| {prof} | eager | {e.sim['sim_end_ns'] / 1e6:.3f} | {e.sim['sim_host_ns'] / 1e6:.3f} | | | |")
        chain = None
        for mode in ("observe", "safe", "go"):
            r = simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=env(prof, mode))
            t, c = r.sim["sim_end_ns"], r.grape["concurrency"]
            chain = chain or t
            print(f"| {prof} | {mode} | {t / 1e6:.3f} | {r.sim['sim_host_ns'] / 1e6:.3f} | {chain / t:.3f}x "
                  f"| {c['plans_built']}/{c['plans_kept']}/{c['plans_reverted']} | {c['plan_launches']} |")

    print("\nPer region: one chunk of T tokens per prompt, --iters 20; mean device time of a "
          "timed segment launch\n")
    print("| profile | T | chain us (timed) | safe plan us (timed) | segment speed-up | end to end "
          "| go plans built/kept/reverted | go vs safe (segment) |")
    print("|---|---|---|---|---|---|---|---|")
    for prof in PROFILES:
        for t in a.lens:
            args = ["--iters", "20", "--len", t]
            o = simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=env(prof, "observe"))
            s = simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=env(prof, "safe"))
            oc, sc = o.grape["concurrency"], s.grape["concurrency"]
            chain_us = oc["device_ns_chain"] / max(oc["timed_chain"], 1) / 1e3
            if sc["timed_plan"]:
                plan_us = sc["device_ns_plan"] / sc["timed_plan"] / 1e3
                plan = f"{plan_us:.1f} ({sc['timed_plan']})"
                ratio = f"{chain_us / plan_us:.2f}x"
            else:
                plan, ratio = "no plan kept", ""
            e2e = o.sim["sim_end_ns"] / s.sim["sim_end_ns"]
            g = simrun.run(a.prog, args, a.simdir, a.lib, "graph", env=env(prof, "go")).grape["concurrency"]
            go = ""
            if g.get("go_timed_gain") and sc["timed_plan"]:
                gain_us = g["go_gain_ns"] / g["go_timed_gain"] / 1e3
                go = f"{plan_us / (plan_us - gain_us):.2f}x ({g['go_timed_gain']} timed)"
            print(f"| {prof} | {t} | {chain_us:.1f} ({oc['timed_chain']}) | {plan} | {ratio} | {e2e:.3f}x "
                  f"| {g.get('go_plans_built', 0)}/{g.get('go_plans_kept', 0)}/{g.get('go_plans_reverted', 0)} | {go} |")

    go_table(a)

    args = ["--small", "--iters", a.small_iters]
    want = simrun.run(a.prog, args, a.simdir).checksum
    r = simrun.run(a.prog, args, a.simdir, a.lib, "graph",
                   env={"GRAPE_CONCURRENCY": "safe", "SIMCU_GRAPH_ORDER": "reverse"})
    same = r.checksum == want
    bad += not same
    print(f"\n--small --iters {a.small_iters}, safe, reversed graph order: {r.checksum.split()[-1]} "
          f"({'the eager checksum' if same else 'DIFFERENT from eager ' + want}), "
          f"{r.grape['concurrency']['plan_launches']} plan launches")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
