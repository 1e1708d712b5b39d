#!/usr/bin/env python3
"""Concurrency plans and barrier classes of graph mode on the simulated device
(docs/concurrency.md), with the sim's cuBLAS:

  dep       conc_rules dep: GEMMs through cublasSgemm, dlsym'd cublasSgemm_v2,
            cublasGemmEx and cublasLtMatmul with two dependences; in safe mode
            under 20 shuffled orders and the reversed one, the checksum equals
            the run without the shim, plans were kept and replayed, the four
            GEMMs were footprinted
  alias     conc_rules alias: one key, aliasing on every third step; a plan
            made without it falls back to the chain where it appears
  batched   conc_rules batched: a cublasSgemmBatched whose device pointer
            arrays alias other GEMMs' outputs is a barrier (its footprint is
            in device memory); exact under every order with forced builds, and
            the GEMMs around it still get a kept plan
  nccl      a kernel named like NCCL's is never held, ends its regions
  coop      the same for a cooperative launch
  observe   GRAPE_CONCURRENCY=observe changes nothing but the report (against
            off): same simulated times and counts; the report has each path's DAG
  worse     a device where concurrency does not pay (memory bandwidth cut so
            that the GEMMs are memory-bound): the plans the estimator predicts
            faster are measured, reverted, and the run ends within 2% of chain
            graphs
  moe       the moe example in safe mode: plans kept, the checksum equal to the
            plain run in observe and graph mode and in topological and reversed
            graph orders; moe_shuffle_a and moe_shuffle_b: the same under
            shuffled orders 1-10 and 11-20 (one test each, so that none runs
            long under ASan on a busy machine)
  prefill   the prefill showcase: exact in safe mode (small sizes, the reversed
            graph order); prefill_shuffle: the same in a shuffled order
  prefill_pays  at full sizes (timed only) safe mode ends at least 1.3x sooner
            than chain graphs under the default and fair profiles; grape
            report's summary has its concurrency line
  go        GRAPE_CONCURRENCY=go on the prefill showcase (full size, timed
            only, one chunk of 512 tokens per prompt): an SM-count target is
            applied to the persistent shared-expert GEMM and the program's
            handle holds its own target after every call (prefill checks it
            and exits 3 otherwise); a go plan is built, measured against the
            safe plan and decided; a sampled numerics check ran and its
            largest difference is reported; the summary has the go line.
            Then with SIMCU_TARGET_SLOWDOWN=3 (the sim's targeted kernels three
            times slower per tile) the go plan is measured slower and
            reverted, its targets withdrawn, and the run ends within 10% of
            safe mode (its trial)
  go_lt     go mode on the prefill showcase issued through cublasLtMatmul as
            PyTorch issues it (--lt: a descriptor per call, the heuristic's
            algorithm; CUBLASLT_WORKSPACE_SIZE=0, PyTorch's knob, so split-K
            partial sums in one shared workspace do not order the experts'
            GEMMs): the targets reach the library on copies of the program's
            descriptors (targets applied, replays run as the go plan, which
            the library's targeted grids alone allow), a go plan is decided,
            and the program's descriptor and algorithm are as it made them
            after every call (prefill checks, exit 3). Results: at small sizes
            the Lt route in go mode gives the plain run's checksum; the
            targeted full-size GEMMs are timed only (the sim's stand-in keeps
            results bit-identical under a target, docs/concurrency.md)
  hostcost  the plans' host-cost rule (GRAPE_PLAN_HOST_PCT at its default 2%)
            on conc_rules dep in safe mode, the re-check charged at the sim's
            row shim_check (200 ns an op), with the rule's other input, the
            host time a replay saves, set through GRAPE_COSTS far from the
            line on either side: eager launches of 1 ns (a replay saves a few
            ns) drop every plan at its verdict (plans_dropped_host, none
            kept); launches of 10 ms (a replay saves tens of ms) keep plans,
            none dropped
  go_hostshare go's host cost (rule at 2%): prefill at T = 448 under default,
            the go plan kept (its targets against its gain over safe, its
            whole cost against its gain over the chain); with shim_target at
            5 ms, dropped for its targets
  go_regions the issue's go target on the showcase: at T = 448 and 512 under
            default and fair, with the host-cost rule at its default 2%, go
            is at least 1.15x faster than safe on the persistent-GEMM
            fork/joins (the sim's kernel timeline, their mean over the last
            quarter of the prompts, as bench/graph/prefill.py --go-only
            measures), and no held op flushed by the watchdog during the
            sampled numerics check (also in go): go judges a target's predicted gain on the fork/join
            it changes, not the whole segment, and looks at a safe plan too
            dear for its host cost alone
  go_e2e    go end to end on the showcase's hashed lengths (prefill --iters
            30, full size, timed only, the builder thread and the host-cost
            rule at 2% as bench/graph/prefill.py runs them) under default
            and fair: go ends no
            later than safe. Its sampled numerics checks (one per shape and
            target) are queued on a private stream and compared once done,
            never waited for (a check that waited cost go 3.0% / 5.6%
            against safe), and the segments launched while one runs are not
            timed (a go plan on trial beside a check's GEMMs was reverted).
            The checks are all compared by the exit (numerics_checks >= 1),
            and in these timed-only runs, whose GEMM bodies do not run, they
            report no difference (the sampled outputs are zeroed first, not
            the allocator's leftovers)
  go_moe    moe (--iters 20, the fair profile, the shim's default costs, the
            host-cost rule at 2%): safe mode drops a plan for its host cost;
            go, with no GEMM there to target, drops it as safe does, not
            held and replayed until go finds nothing: go ends when safe
            does, with the same plan launches, and within 1% of the chain
  moe_chain moe as a user runs it (builder thread, host-cost rule at 2%):
            safe mode within 1% of chain graphs at --iters 20 under default
            and --iters 60 under fair (the builder takes a key's lost
            segment before sets and recuts, and those before plans)
  plancharge the plans' host cost on graph mode's clock: on the sim exactly
            the rows shim_check (per op re-checked) and shim_target (per
            target, the cuBLAS call itself not counted), the same simulated
            end over two safe-mode runs, and the rule dropping a plan at
            shim_check 1000 ns and keeping it at 0
  spin      conc_spin: two ranks, a collective stand-in spinning on mapped
            memory and a CPU barrier, GRAPE_FLUSH_US at its maximum: both
            finish, with replays and no watchdog flush; another stream's held
            work is submitted when the collective is launched

usage: test_conc.py CASE --preload LIBS --simdir DIRS --prog PROGRAM [--moe MOE] [--prefill PREFILL] [--grape GRAPE]
Exits 77 (skipped) when PROGRAM is "-" (built without nvcc)."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

from simenv import sim_env

# The showcase's region yardstick is the benchmark's (bench/graph/prefill.py).
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bench", "graph"))
import prefill  # noqa: E402
import simrun  # noqa: E402
STEPS = 12   # conc_spin.cu's steps


def fail(msg, p=None):
    if p is not None:
        msg += f"\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-4000:]}"
    sys.exit("FAIL: " + msg)


def env_for(a, d, shim, mode, extra):
    # The plans' host-cost rule (GRAPE_PLAN_HOST_PCT) drops plans whose
    # re-checks cost more than their segments' replays save at the table's
    # rows (conc_hostcost, conc_plancharge test it): these tests of what plans
    # do switch it off unless a case sets it.
    e = {"GRAPE_PLAN_HOST_PCT": "100"}
    e.update(extra or {})
    return sim_env(a.simdir, a.preload, d, shim, mode, e, clean=True)


def reports(d):
    rep = sim = None
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name)) as f:
            r = json.load(f)
        if name.startswith("grape."):
            rep = r
        if name.startswith("sim."):
            sim = r
    return rep, sim


def run(a, prog, args, shim=True, mode="graph", env=None, timeout=300):
    """Runs prog; returns (process, grape report or None, sim report)."""
    with tempfile.TemporaryDirectory() as d:
        p = subprocess.run([prog] + list(args), env=env_for(a, d, shim, mode, env),
                           capture_output=True, text=True, timeout=timeout)
        if p.returncode != 0:
            fail(f"{prog} {args} ({mode if shim else 'no shim'}, {env}) exited {p.returncode}", p)
        rep, sim = reports(d)
        return p, rep, sim


def checksum(p):
    lines = [l for l in p.stdout.splitlines() if l.startswith("checksum")]
    return lines[-1] if lines else None


def adversarial(a, prog, args, env=None, seeds=range(1, 21), fixed=("topo", "reverse")):
    """The plain run's checksum, then safe mode's under the FIXED orders and the
    shuffles of SEEDS: equal. Returns the first order's run and report."""
    base, _, _ = run(a, prog, args, shim=False)
    want = checksum(base)
    if want is None:
        fail("no checksum", base)
    first = None
    orders = list(fixed) + [f"shuffle:{seed}" for seed in seeds]
    for order in orders:
        e = {"GRAPE_CONCURRENCY": "safe", "SIMCU_GRAPH_ORDER": order}
        e.update(env or {})
        p, rep, _ = run(a, prog, args, env=e)
        if checksum(p) != want:
            fail(f"order {order}: {checksum(p)} against {want} without the shim: a dependence "
                 f"the plan did not keep", p)
        if first is None:
            first = (p, rep)
    return first


def conc(rep):
    return rep["concurrency"]


def case_dep(a):
    p, rep = adversarial(a, a.prog, ["dep"])
    c = conc(rep)
    if c["plans_kept"] < 1 or c["plan_launches"] < 1:
        fail(f"no concurrent plan was kept and replayed, so the orders tested nothing: {c}", p)
    if rep["launches_by_route"]["dlsym"] < 1:
        fail(f"no launch on the dlsym route: {rep['launches_by_route']}", p)
    gemm_paths = [t for t in rep["top_paths"] if t.get("dag", {}).get("gemms") == 4]
    if not gemm_paths or gemm_paths[0]["dag"]["ops"]["footprinted"] != 4:
        fail(f"the four GEMMs (Sgemm, dlsym'd Sgemm, GemmEx, LtMatmul) were not all footprinted: "
             f"{[t.get('dag') for t in rep['top_paths']]}", p)
    if "kept" not in (gemm_paths[0]["dag"]["plan"] or ""):
        fail(f"the path's plan is not reported kept: {gemm_paths[0]['dag']}", p)


def case_alias(a):
    p, rep = adversarial(a, a.prog, ["alias"])
    c = conc(rep)
    if c["plans_kept"] < 1 or c["plan_launches"] < 1:
        fail(f"no concurrent plan was kept and replayed: {c}", p)
    if c["plan_fallbacks"] < 1:
        fail(f"no replay fell back to the chain, though every third step aliases: {c}", p)


def case_batched(a):
    """A pointer-array batched GEMM (cublasSgemmBatched) whose arrays alias
    other GEMMs' outputs: its footprint cannot be known without reading
    device memory, so it is a barrier; exact in every order with forced
    builds, while the GEMMs around it still get a concurrent plan."""
    p, rep = adversarial(a, a.prog, ["batched"], env={"GRAPE_COSTS": "build=0,build_node=0"})
    c = conc(rep)
    if c["plans_kept"] < 1 or c["plan_launches"] < 1:
        fail(f"no concurrent plan was kept and replayed, so the orders tested nothing: {c}", p)
    step = [t for t in rep["top_paths"] if t.get("dag", {}).get("gemms") == 4]
    if not step or step[0]["graph_hits"] < 1:
        fail(f"the step (four footprinted GEMMs and the batch) was not replayed: "
             f"{[(t.get('dag'), t['graph_hits']) for t in rep['top_paths']]}", p)
    ops = step[0]["dag"]["ops"]
    if ops["footprinted"] != 4 or ops["kernel_outside_library_call"] != 4:
        fail(f"want the four GEMMs footprinted and the batch's kernel, fill and the sums "
             f"opaque: {ops}", p)


def barrier_case(a, mode, kernel, why):
    base, _, _ = run(a, a.prog, [mode], shim=False)
    p, rep, _ = run(a, a.prog, [mode], env={"GRAPE_CONCURRENCY": "safe", "GRAPE_FLUSH_US": "60000000"})
    if checksum(p) != checksum(base):
        fail(f"{mode}: {checksum(p)} against {checksum(base)} without the shim", p)
    alone = [t for t in rep["top_paths"] if t["kernels"] == [kernel] and t["dag"]["ops"][why] == 1]
    if not alone:
        fail(f"{mode}: the barrier launch is not a region of its own, classified {why}: "
             f"{[(t['kernels'], t['dag']['ops']) for t in rep['top_paths']]}", p)
    if alone[0]["graph_hits"] != 0:
        fail(f"{mode}: the barrier launch was replayed: {alone[0]}", p)
    if rep["graph_hits"] == 0:
        fail(f"{mode}: nothing else was replayed (the rule was not exercised): {rep}", p)


def case_nccl(a):
    barrier_case(a, "nccl", "ncclDevKernel_AllReduce_Sum_i32", "collective_or_spin")


def case_coop(a):
    barrier_case(a, "coop", "bump", "cooperative")


def case_observe(a):
    """observe against off: the same run but for the report's DAG."""
    for prog, args in ((a.prog, ["dep"]), (a.moe, [])):
        if prog in (None, "-"):
            continue
        p0, r0, s0 = run(a, prog, args, env={"GRAPE_CONCURRENCY": "off"})
        p1, r1, s1 = run(a, prog, args, env={"GRAPE_CONCURRENCY": "observe"})
        if p0.stdout != p1.stdout or s0["sim_end_ns"] != s1["sim_end_ns"]:
            fail(f"{prog}: observe changed the run: {s0['sim_end_ns']} vs {s1['sim_end_ns']}", p1)
        for key in ("regions", "graph_hits", "graph_launches", "submission_calls", "node_updates"):
            if r0[key] != r1[key]:
                fail(f"{prog}: observe changed {key}: {r0[key]} vs {r1[key]}", p1)
        if any("dag" in t for t in r0["top_paths"]):
            fail(f"{prog}: GRAPE_CONCURRENCY=off reported a DAG", p0)
        dags = [t["dag"] for t in r1["top_paths"] if "dag" in t]
        if not dags or not any(d["gemms"] >= 2 and d["predicted_critical_path_ns"] < d["predicted_chain_ns"]
                               for d in dags):
            fail(f"{prog}: no path's DAG shows independent GEMMs: {dags}", p1)


def case_worse(a):
    """Memory so slow that the GEMMs are memory-bound: concurrency cannot pay
    on the device, while the estimator (compute-bound rates) predicts it does."""
    with tempfile.TemporaryDirectory() as d:
        costs = os.path.join(d, "costs.txt")
        with open(costs, "w") as f:
            f.write("device_mem_bytes_per_ns 1\n")
        e = {"SIMCU_COSTS": costs}
        _, chain, s_chain = run(a, a.prog, ["dep"], env=dict(e, GRAPE_CONCURRENCY="observe"))
        p, safe, s_safe = run(a, a.prog, ["dep"], env=dict(e, GRAPE_CONCURRENCY="safe"))
    c = conc(safe)
    if c["plans_built"] < 1:
        fail(f"the estimator predicted nothing, so no plan was measured: {c}", p)
    if c["plans_kept"] != 0 or c["plans_reverted"] < 1:
        fail(f"a plan that does not pay was kept, or none reverted: {c}", p)
    ratio = s_safe["sim_end_ns"] / s_chain["sim_end_ns"]
    if not 0.98 <= ratio <= 1.02:
        fail(f"safe ended at {ratio:.4f} of the chain graphs' time (outside 2%)", p)
    print(f"worse: {c['plans_built']} built, {c['plans_reverted']} reverted; safe/chain {ratio:.4f}")


MOE_ARGS = ["--iters", "6"]


def moe_orders(a, seeds, fixed=()):
    if a.moe in (None, "-"):
        sys.exit(77)
    p, rep = adversarial(a, a.moe, MOE_ARGS, seeds=seeds, fixed=fixed)
    c = conc(rep)
    if c["plans_kept"] < 1 or c["plan_launches"] < 1:
        fail(f"moe: no concurrent plan was kept and replayed: {c}", p)


def case_moe(a):
    if a.moe in (None, "-"):
        sys.exit(77)
    base, _, _ = run(a, a.moe, MOE_ARGS, shim=False)
    for mode in ("observe", "graph"):
        p, _, _ = run(a, a.moe, MOE_ARGS, mode=mode, env={"GRAPE_CONCURRENCY": "safe"})
        if checksum(p) != checksum(base):
            fail(f"moe ({mode}, safe): {checksum(p)} against {checksum(base)}", p)
    moe_orders(a, seeds=(), fixed=("topo", "reverse"))


def case_moe_shuffle_a(a):
    moe_orders(a, seeds=range(1, 11))


def case_moe_shuffle_b(a):
    moe_orders(a, seeds=range(11, 21))


def prefill_exact(a, order):
    """Exact: at small sizes the bodies run; safe mode's plans, in graph order
    ORDER, give the plain run's checksum."""
    if a.prefill in (None, "-"):
        sys.exit(77)
    args = ["--small", "--iters", "14"]
    base, _, _ = run(a, a.prefill, args, shim=False)
    p, rep, _ = run(a, a.prefill, args, env={"GRAPE_CONCURRENCY": "safe", "SIMCU_GRAPH_ORDER": order})
    if checksum(p) != checksum(base):
        fail(f"prefill --small, safe, {order}: {checksum(p)} against {checksum(base)}", p)
    c = conc(rep)
    if c["plans_kept"] < 1 or c["plan_launches"] < 1:
        fail(f"prefill --small: no concurrent plan was kept and replayed: {c}", p)


def case_prefill(a):
    prefill_exact(a, "reverse")


def case_prefill_shuffle(a):
    prefill_exact(a, "shuffle:1")


def case_prefill_pays(a):
    if a.prefill in (None, "-"):
        sys.exit(77)
    # Pays: at full sizes (timed, bodies skipped) safe mode ends at least 1.3x
    # sooner than chain graphs under both sourced profiles, the issue's target
    # (with the tests' inline builds: 1.32x default, 1.44x fair; on the
    # builder thread 1.37x and 1.40x, docs/concurrency.md).
    for profile in ("default", "fair"):
        ends = {}
        for mode in ("observe", "safe"):
            env = {"GRAPE_CONCURRENCY": mode, "SIMCU_TIME_ONLY": "1", "SIMCU_COSTS": profile,
                   "GRAPE_COSTS": "build=0,build_node=0"}
            _, rep, sim = run(a, a.prefill, ["--iters", "30"], env=env)
            ends[mode] = sim["sim_end_ns"]
        if ends["observe"] < 1.3 * ends["safe"]:
            fail(f"prefill ({profile}): safe {ends['safe']} ns against chain graphs' "
                 f"{ends['observe']} ns: under 1.3x")
    # The summary tells the user what safe mode did (the last run's report).
    if a.grape not in (None, "-"):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump(rep, f)
            p = subprocess.run([a.grape, "report", path], capture_output=True, text=True)
        c = conc(rep)
        want = (f"concurrency (safe): {c['plans_built']} plans built, {c['plans_kept']} kept, "
                f"{c['plans_reverted']} reverted; {c['plan_launches']} plan launches")
        if p.returncode != 0 or want not in p.stdout + p.stderr:
            fail(f"grape report has no concurrency line {want!r}", p)


def watchdog_quiet(rep, p):
    # The sampled check is the shim's own bounded work on the holding thread
    # (it waits for its private stream only): the watchdog (GRAPE_FLUSH_US,
    # real time) must not take it for a spin and flush the held ops, which
    # made go's simulated time depend on how long the check ran.
    if rep["held_ops_flushed_eager"]["watchdog"] != 0:
        fail(f"go mode: {rep['held_ops_flushed_eager']['watchdog']} held ops flushed by the watchdog "
             f"(during the sampled numerics check?)", p)


def case_go(a):
    if a.prefill in (None, "-"):
        sys.exit(77)
    args = ["--iters", "40", "--len", "512"]
    base = {"SIMCU_TIME_ONLY": "1", "GRAPE_COSTS": "build=0,build_node=0"}
    p, rep, sim = run(a, a.prefill, args, env=dict(base, GRAPE_CONCURRENCY="go"))
    if p.returncode != 0:
        fail(f"prefill in go mode exited {p.returncode} (3: its handle's target was left changed)", p)
    c = conc(rep)
    if c["targets_applied"] < 1 or c["go_plans_built"] < 1:
        fail(f"no SM-count target was applied, or no go plan built: {c}", p)
    if c["go_plans_kept"] + c["go_plans_reverted"] < 1:
        fail(f"the go plan was never decided: {c}", p)
    if c["numerics_checks"] < 1 or "numerics_max_rel_diff" not in c:
        fail(f"no sampled numerics check: {c}", p)
    watchdog_quiet(rep, p)
    if a.grape not in (None, "-"):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "r.json")
            with open(path, "w") as f:
                json.dump(rep, f)
            q = subprocess.run([a.grape, "report", path], capture_output=True, text=True)
        want = f"concurrency (go): {c['go_plans_built']} SM-target plans built"
        if q.returncode != 0 or want not in q.stdout + q.stderr or "host cost" not in q.stdout + q.stderr:
            fail(f"grape report has no go line {want!r} or no host cost", q)
    # Slower under targets: measured, reverted, targets withdrawn.
    slow = dict(base, SIMCU_TARGET_SLOWDOWN="3")
    _, safe, s_safe = run(a, a.prefill, args, env=dict(slow, GRAPE_CONCURRENCY="safe"))
    p, rep, s_go = run(a, a.prefill, args, env=dict(slow, GRAPE_CONCURRENCY="go"))
    c = conc(rep)
    if p.returncode != 0 or c["go_plans_built"] < 1:
        fail(f"go (slow targets): no go plan built: {c}", p)
    if c["go_plans_kept"] != 0 or c["go_plans_reverted"] < 1:
        fail(f"go (slow targets): a slower go plan was kept, or none reverted: {c}", p)
    ratio = s_go["sim_end_ns"] / s_safe["sim_end_ns"]
    # Its trial (4 slow launches, ~1 ms) costs the run; nothing more
    # (docs/concurrency.md).
    if ratio > 1.10:
        fail(f"go (slow targets) ended at {ratio:.4f} of safe mode's time (over 10%)", p)
    print(f"go: {c['go_plans_built']} built, {c['go_plans_reverted']} reverted under slow targets; "
          f"go/safe {ratio:.4f}")


def case_go_lt(a):
    if a.prefill in (None, "-"):
        sys.exit(77)
    lt = {"CUBLASLT_WORKSPACE_SIZE": "0"}
    small = ["--small", "--iters", "6", "--lt"]
    base, _, _ = run(a, a.prefill, small, shim=False, env=lt)
    p, _, _ = run(a, a.prefill, small, env=dict(lt, GRAPE_CONCURRENCY="go"))
    if checksum(p) != checksum(base):
        fail(f"prefill --small --lt in go mode: {checksum(p)} against {checksum(base)} without the shim", p)
    env = dict(lt, SIMCU_TIME_ONLY="1", GRAPE_COSTS="build=0,build_node=0", GRAPE_CONCURRENCY="go")
    with tempfile.TemporaryDirectory() as d:
        # A target on this route costs the shim's own work (row shim_target)
        # and the heuristic re-query it makes (row shim_requery); a legacy
        # call's costs the first only (case_plancharge).
        env["SIMCU_COSTS"] = os.path.join(d, "lt.costs")
        with open(env["SIMCU_COSTS"], "w") as f:
            f.write("shim_target 30011\nshim_requery 50021\n")
        p, rep, _ = run(a, a.prefill, ["--iters", "40", "--len", "512", "--lt"], env=env)
    c = conc(rep)
    if c["targets_costed"] < 1 or c["target_host_ns"] != (30011 + 50021) * c["targets_costed"]:
        fail(f"--lt: {c['targets_costed']} targets cost {c['target_host_ns']} ns, not shim_target "
             f"30011 + shim_requery 50021 each (the re-query not charged)", p)
    if c["targets_applied"] < 1 or c["go_plans_built"] < 1 or c["go_launches"] < 1:
        fail(f"--lt: no target reached cuBLASLt on a descriptor copy, no go plan, or no replay took "
             f"the targeted grids: {c}", p)
    if c["go_plans_kept"] + c["go_plans_reverted"] < 1:
        fail(f"--lt: the go plan was never decided: {c}", p)
    print(f"go_lt: {c['targets_applied']} targets on descriptor copies, {c['go_plans_built']} go plans "
          f"built, {c['go_launches']} go launches")


def case_hostcost(a):
    # The rule's inputs: the shim's host time per plan launch, on the sim
    # its re-check of each op charged at the row shim_check (200 ns here),
    # and what a replay saves (its ops' eager launches less a graph launch),
    # set here on either side of the line. update=0: a node update saves
    # nothing either way; shim=0: the ledger never stands graph mode down.
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "check.costs")
        with open(path, "w") as f:
            f.write("shim_check 200\n")
        for launch, dropped in (("1", True), ("10000000", False)):
            costs = f"build=0,build_node=0,update=0,shim=0,graph_launch=0,launch={launch}"
            p, rep, _ = run(a, a.prog, ["dep"], env={"GRAPE_CONCURRENCY": "safe", "GRAPE_PLAN_HOST_PCT": "2",
                                                     "GRAPE_COSTS": costs, "SIMCU_COSTS": path})
            c = conc(rep)
            if c["plans_built"] < 1 or c["plan_host_launches"] < 1:
                fail(f"launch={launch} ns: no plan was built and launched, so the rule was not met: {c}", p)
            if dropped and (c["plans_dropped_host"] < 1 or c["plans_kept"] != 0):
                fail(f"launch=1 ns: a replay saves a few ns, yet no plan was dropped for its host cost "
                     f"({c['plan_host_ns'] / c['plan_host_launches']:.0f} ns a launch): {c}", p)
            if not dropped and (c["plans_dropped_host"] != 0 or c["plans_kept"] < 1):
                fail(f"launch=10 ms: a replay saves tens of ms, yet a plan was dropped for its host cost "
                     f"or none kept: {c}", p)
            print(f"hostcost: launch={launch} ns: {c['plans_built']} built, {c['plans_kept']} kept, "
                  f"{c['plans_dropped_host']} dropped for host cost "
                  f"({c['plan_host_ns'] / c['plan_host_launches']:.0f} ns a plan launch)")


def case_go_hostshare(a):
    # A go plan replaces its segment's safe plan and shares its
    # re-verification: its targets are weighed against what it gains over
    # the safe plan, its whole cost against what it earns over the chain.
    # prefill at T = 448 under default: a go plan gains ~72 us a launch over
    # safe for targets of ~0.1 us (kept at the rule's 2%), but its segment's
    # re-check (~4 us) is more than 2% of 72 us, so weighed against go's own
    # gain it was dropped; at shim_target 5 ms (more than 2% of any gain
    # here) it is dropped for its targets.
    if a.prefill in (None, "-"):
        sys.exit(77)
    base = {"SIMCU_TIME_ONLY": "1", "GRAPE_COSTS": "build=0,build_node=0", "GRAPE_CONCURRENCY": "go",
            "GRAPE_PLAN_HOST_PCT": "2"}
    args = ["--iters", "40", "--len", "448"]
    p, rep, _ = run(a, a.prefill, args, env=dict(base, SIMCU_COSTS="default"))
    c = conc(rep)
    if c["go_plans_kept"] < 1:
        fail(f"T = 448 under default: the go plan was not kept at the rule's 2% (its targets weighed "
             f"with the re-verification the safe plan pays anyway?): {c}", p)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "dear.costs")
        with open(path, "w") as f:
            f.write("shim_target 5000000\n")
        p, rep, _ = run(a, a.prefill, args, env=dict(base, SIMCU_COSTS=path))
    c2 = conc(rep)
    if c2["go_plans_kept"] != 0 or c2["go_plans_built"] < 1:
        fail(f"shim_target 5 ms: the go plan was kept (or never built) though its targets cost more than "
             f"2% of its gain: {c2}", p)
    # What go does with a safe plan too dear for its host cost alone (held
    # while a go plan may pay for both) is not tested here: since a
    # region-ending copy is an op of the region, safe mode drops no plan of
    # prefill that go then keeps (T = 384-640 under default and fair);
    # conc_go_moe tests that go drops such a plan where no GEMM can be
    # targeted.
    print(f"go_hostshare: kept at 2% ({c['go_gain_ns'] / max(c['go_timed_gain'], 1) / 1e3:.1f} us a launch "
          f"over safe), dropped with dear targets")


def case_go_e2e(a):
    if a.prefill in (None, "-"):
        sys.exit(77)
    for prof in ("default", "fair"):
        ends = {}
        for mode in ("safe", "go"):
            env = {"GRAPE_CONCURRENCY": mode, "SIMCU_TIME_ONLY": "1", "SIMCU_COSTS": prof,
                   "GRAPE_COSTS": "build=0,build_node=0", "GRAPE_PLAN_HOST_PCT": "2",
                   "GRAPE_BUILDER": "thread"}   # as bench/graph/prefill.py runs it
            p, rep, sim = run(a, a.prefill, ["--iters", "30"], env=env)
            ends[mode] = sim["sim_end_ns"]
        c = conc(rep)
        if c["go_plans_kept"] < 1:
            fail(f"{prof}: no go plan kept, so nothing was measured: {c}", p)
        if c["numerics_checks"] < 1:
            fail(f"{prof}: the sampled numerics checks were not compared by the exit: {c}", p)
        if c["numerics_max_rel_diff"] != 0:
            fail(f"{prof}: a difference of {c['numerics_max_rel_diff']} where no GEMM body ran "
                 f"(the check read memory its GEMMs never wrote): {c}", p)
        if ends["go"] > ends["safe"]:
            fail(f"{prof}: go ended at {ends['go']} ns, after safe mode's {ends['safe']} "
                 f"({ends['go'] / ends['safe']:.4f}x): does its numerics check wait for the device?", p)
        print(f"go_e2e {prof}: safe {ends['safe'] / 1e6:.3f} ms, go {ends['go'] / 1e6:.3f} "
              f"({ends['safe'] / ends['go']:.3f}x), {c['numerics_checks']} checks")


def case_go_regions(a):
    # Each of the showcase's 4 layers has a fork/join holding the persistent
    # gate|up GEMM; graph mode's segments (about a layer) hold it among
    # other stages, so judged on the segment a target's gain (~11 us of
    # ~250 us) stayed under the 5% bar and only 1 of 4 regions got a go
    # plan under fair (1.05x); under default at T = 512 the safe plan of a
    # segment was dropped for its host cost, so go never looked (1.00x).
    if a.prefill in (None, "-"):
        sys.exit(77)
    for prof in ("default", "fair"):
        for t in ("448", "512"):
            us = []
            for mode in ("safe", "go"):
                with tempfile.TemporaryDirectory() as d:
                    tl = os.path.join(d, "timeline.txt")
                    env = {"SIMCU_TIME_ONLY": "1", "SIMCU_COSTS": prof, "GRAPE_COSTS": "build=0,build_node=0",
                           "GRAPE_CONCURRENCY": mode, "GRAPE_PLAN_HOST_PCT": "2", "SIMCU_TIMELINE": tl,
                           "GRAPE_BUILDER": "thread"}   # as the benchmark runs (inline builds cut
                                                        # the chunk elsewhere)
                    p, rep, _ = run(a, a.prefill, ["--iters", "40", "--len", t], env=env)
                    if mode == "go":
                        watchdog_quiet(rep, p)
                    with open(tl) as f:
                        kernels = [simrun.Kernel(line) for line in f if line.strip()]
                us.append(prefill.steady_us(prefill.persistent_regions_ns(kernels)))
            if us[0] < 1.15 * us[1]:
                fail(f"{prof}, T = {t}: go's persistent-GEMM fork/joins {us[1]:.1f} us against safe's "
                     f"{us[0]:.1f} ({us[0] / us[1]:.3f}x, under 1.15x): {conc(rep)}", p)
            print(f"go_regions: {prof}, T = {t}: safe {us[0]:.1f} us, go {us[1]:.1f} us ({us[0] / us[1]:.3f}x)")


def case_go_moe(a):
    # moe's GEMMs (<= 8 tokens) never fill the device, so go has nothing to
    # target. A safe plan too dear for its host cost alone was held for go
    # anyway, replayed once more, and the run's timing moved on from there:
    # go ended 1.7% after the chain under fair where safe was within 0.5%.
    if a.moe in (None, "-"):
        sys.exit(77)
    env = {"SIMCU_COSTS": "fair", "GRAPE_PLAN_HOST_PCT": "2"}
    ends, cs = {}, {}
    for mode in ("off", "safe", "go"):
        p, rep, sim = run(a, a.moe, ["--iters", "20"], env=dict(env, GRAPE_CONCURRENCY=mode))
        ends[mode], cs[mode] = sim["sim_end_ns"], conc(rep) if mode != "off" else None
    if cs["safe"]["plans_dropped_host"] < 1:
        fail(f"safe mode dropped no plan for its host cost, so nothing was tested: {cs['safe']}")
    if cs["go"]["go_plans_built"] != 0:
        fail(f"go built a go plan on moe, whose GEMMs do not fill the device: {cs['go']}")
    if ends["go"] != ends["safe"] or cs["go"]["plan_launches"] != cs["safe"]["plan_launches"]:
        fail(f"go with nothing to target ended at {ends['go']} ns after {cs['go']['plan_launches']} plan "
             f"launches, safe at {ends['safe']} ns after {cs['safe']['plan_launches']} (a safe plan "
             f"too dear alone held for go?)")
    if ends["off"] / ends["go"] < 0.99:
        fail(f"go {ends['go']} ns against the chain's {ends['off']} ({ends['off'] / ends['go']:.3f}x)")
    print(f"go_moe: chain {ends['off'] / 1e6:.3f} ms, safe {ends['safe'] / 1e6:.3f}, go {ends['go'] / 1e6:.3f} "
          f"({ends['off'] / ends['go']:.3f}x)")


def case_moe_chain(a):
    # moe's keys share their first ops and take cuts from one another; the
    # key that lost one runs eagerly until the builder rebuilds its segment.
    # Behind sets, recuts and plans taken in order, safe mode's few plans
    # decided which keys lost how many steps (0.972x of the chain, default,
    # --iters 20); with plans queued beside sets, moe --iters 60 under fair
    # ended 1.04% behind the chain (plans of rare segments never tried).
    if a.moe in (None, "-"):
        sys.exit(77)
    runs = [("default", "20"), ("fair", "60")]
    if "libasan" in a.preload or "libtsan" in a.preload:
        # A property of simulated time, the same under a sanitizer: its
        # longer run (4 minutes under ASan on a busy machine) is left to the
        # normal build, the code paths are the same.
        runs = runs[:1]
    for prof, iters in runs:
        ends = {}
        for mode in ("observe", "safe"):
            env = {"SIMCU_COSTS": prof, "GRAPE_PLAN_HOST_PCT": "2", "GRAPE_BUILDER": "thread",
                   "GRAPE_CONCURRENCY": mode}
            p, rep, sim = run(a, a.moe, ["--iters", iters], env=env)
            ends[mode] = sim["sim_end_ns"]
        if conc(rep)["plans_built"] < 1:
            fail(f"{prof}: safe mode built no plan, so nothing was tested: {conc(rep)}", p)
        ratio = ends["observe"] / ends["safe"]
        if ratio < 0.99:
            fail(f"moe --iters {iters} ({prof}): safe {ends['safe']} ns against the chain's "
                 f"{ends['observe']} ({ratio:.4f}x, more than 1% slower)", p)
        print(f"moe_chain {prof} --iters {iters}: chain {ends['observe'] / 1e6:.3f} ms, "
              f"safe {ends['safe'] / 1e6:.3f} ({ratio:.4f}x)")


def case_plancharge(a):
    # A plan's host cost is measured on the clock replays are timed with. On
    # the sim the shim charges its re-check of each op before a plan's replay
    # (row shim_check) and each SM-count target (row shim_target) to that
    # clock, so the costs are exact multiples of the rows whatever the
    # machine's speed (sanitizers, load), the rule decides the same way every
    # run, and simulated time repeats to the ns (with the real clock it did
    # not: moe in safe mode ended 22.52-22.88 ms from run to run).
    with tempfile.TemporaryDirectory() as d:
        def costs(check, target):
            path = os.path.join(d, f"c{check}_{target}.costs")
            with open(path, "w") as f:
                f.write(f"shim_check {check}\nshim_target {target}\nshim_requery 50021\n")
            return path
        base = {"GRAPE_CONCURRENCY": "safe", "GRAPE_COSTS": "build=0,build_node=0"}
        ends = set()
        for _ in range(2):
            p, rep, sim = run(a, a.prog, ["dep"], env=dict(base, SIMCU_COSTS=costs(7001, 0)))
            c = conc(rep)
            if c["plan_host_launches"] < 1:
                fail(f"no plan launch was checked, so nothing was measured: {c}", p)
            if c["plan_host_ns"] == 0 or c["plan_host_ns"] % 7001 != 0:
                fail(f"shim_check 7001 ns: the plans' host time {c['plan_host_ns']} ns is not a "
                     f"multiple of it (measured on another clock): {c}", p)
            ends.add(sim["sim_end_ns"])
        if len(ends) != 1:
            fail(f"safe mode's simulated end differs from run to run: {sorted(ends)}")
        # The rule on that clock: dear re-checks drop the plan, free ones keep it.
        for check, dropped in ((1000, True), (0, False)):
            p, rep, _ = run(a, a.prog, ["dep"], env=dict(base, SIMCU_COSTS=costs(check, 0),
                                                         GRAPE_PLAN_HOST_PCT="2"))
            c = conc(rep)
            if dropped != (c["plans_dropped_host"] > 0) or (not dropped and c["plans_kept"] < 1):
                fail(f"shim_check {check} ns: plans dropped for host cost {c['plans_dropped_host']}, "
                     f"kept {c['plans_kept']}: want {'a drop' if dropped else 'a kept plan'}", p)
        if a.prefill in (None, "-"):
            print("plancharge: targets not checked (no prefill)")
            return
        args = ["--iters", "40", "--len", "512"]
        go = {"SIMCU_TIME_ONLY": "1", "GRAPE_COSTS": "build=0,build_node=0", "GRAPE_CONCURRENCY": "go",
              "SIMCU_COSTS": costs(0, 30011)}
        p, rep, _ = run(a, a.prefill, args, env=go)
        c = conc(rep)
        if c["targets_costed"] < 1 or c["target_host_ns"] != 30011 * c["targets_costed"]:
            fail(f"shim_target 30011 ns: {c['targets_costed']} targets cost {c['target_host_ns']} ns, "
                 f"not the row's cost each (measured on another clock, the call itself counted, or "
                 f"a legacy call charged the cuBLASLt re-query's row shim_requery)", p)
    print(f"plancharge: {c['targets_applied']} targets, plans re-checked at the row's cost, "
          f"one simulated end ({ends.pop()} ns)")


def case_spin(a):
    with tempfile.TemporaryDirectory() as d:
        flags = os.path.join(d, "flags")
        with open(flags, "wb") as f:
            f.write(b"\0" * 4096)
        r01, w01 = os.pipe()   # rank 0 -> rank 1
        r10, w10 = os.pipe()   # rank 1 -> rank 0
        procs = []
        for rank, (rfd, wfd) in enumerate(((r10, w01), (r01, w10))):
            dd = os.path.join(d, f"rank{rank}")
            os.mkdir(dd)
            e = env_for(a, dd, True, "graph", {"GRAPE_FLUSH_US": "60000000",
                                               "GRAPE_CONCURRENCY": "safe"})
            procs.append((dd, subprocess.Popen([a.prog, str(rank), flags, str(rfd), str(wfd)], env=e,
                                               pass_fds=(rfd, wfd), stdout=subprocess.PIPE,
                                               stderr=subprocess.PIPE, text=True)))
        for fd in (r01, w01, r10, w10):
            os.close(fd)
        outs = []
        for dd, pr in procs:
            try:
                out, err = pr.communicate(timeout=120)
            except subprocess.TimeoutExpired:
                for _, q in procs:
                    q.kill()
                fail("the ranks did not finish in 120 s (a deadlock)")
            outs.append((pr.returncode, out, err, reports(dd)[0]))
    for rank, (rc, out, err, rep) in enumerate(outs):
        if rc != 0 or f"ok rank {rank}" not in out:
            fail(f"rank {rank} exited {rc}:\n{out}\n{err[-3000:]}")
        if rep is None or rep["held_ops_flushed_eager"]["watchdog"] != 0:
            fail(f"rank {rank}: the watchdog flushed (or no report): {rep and rep['held_ops_flushed_eager']}")
    rep0 = outs[0][3]
    if rep0["graph_hits"] == 0:
        fail(f"rank 0 replayed nothing: nothing was held before the collective: {rep0}")
    # The second stream's two held kernels of each step after the warm-up
    # went to the device when the collective was launched, not at their sync.
    flushed = rep0["held_ops_flushed_eager"]["collective"]
    if flushed < 2 * (STEPS // 2):
        fail(f"rank 0: {flushed} held ops submitted ahead of the collective; another stream's "
             f"held work must go first: {rep0['held_ops_flushed_eager']}")
    spin = [t for t in rep0["top_paths"] if t["kernels"] == ["allreduce"]]
    if not spin or spin[0]["graph_hits"] != 0:
        fail(f"rank 0's collective stand-in is not a region of its own, or was replayed: "
             f"{[(t['kernels'], t['graph_hits']) for t in rep0['top_paths']]}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("case")
    ap.add_argument("--preload", required=True)
    ap.add_argument("--simdir", required=True)
    ap.add_argument("--prog", required=True)
    ap.add_argument("--moe")
    ap.add_argument("--prefill")
    ap.add_argument("--grape")
    a = ap.parse_args()
    if a.prog == "-":
        print("skipped: built without nvcc")
        sys.exit(77)
    globals()["case_" + a.case](a)
    print(f"ok {a.case}")


if __name__ == "__main__":
    main()
