"""The one runner of the graph-mode benches (run_examples.py, grid.py,
anchors.py, run_soak.py): runs a program on the simulated device, without the
shim ("eager") or preloading it in a mode, with the sim's knobs set, and
returns what it printed and both exit reports.

The sim's time is deterministic, so one run per figure is enough: a figure
differs between two runs only if the program or the shim behaves differently.
Every run gets its own temporary folder, so runs may go on side by side."""
import argparse
import json
import os
import subprocess
import tempfile


class Run:
    """stdout of the program, its SIMCU_REPORT (sim) and GRAPE_REPORT (grape,
    None without the shim), and with timeline=True the sim's kernel timeline
    (SIMCU_TIMELINE: Kernel tuples in placement order, else None)."""

    def __init__(self, stdout, stderr, sim, grape, timeline=None):
        self.stdout, self.stderr, self.sim, self.grape = stdout, stderr, sim, grape
        self.timeline = timeline

    @property
    def checksum(self):
        """The last line the program printed (the examples' "checksum <hex>")."""
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""


class Kernel:
    """One kernel of SIMCU_TIMELINE: its stream's id, when its dependencies
    were met and when its last block ended (simulated ns), its blocks,
    whether a graph node, its name."""

    def __init__(self, line):
        w = line.split(None, 5)
        self.stream, self.ready, self.end, self.blocks = (int(x) for x in w[:4])
        self.graph, self.name = w[4] == "1", w[5].strip() if len(w) > 5 else ""


def profile_rows(profile):
    """The rows of a cost profile of sim/costs/, named or a cost file's path
    ("" or None: none, the sim's built-in table), as {name: ns}."""
    rows = {}
    if profile:
        path = profile if os.sep in profile else os.path.join(
            os.path.dirname(os.path.abspath(__file__)), "..", "..", "sim", "costs",
            profile + ".costs")
        with open(path) as f:
            for line in f:
                words = line.split("#", 1)[0].split()
                if len(words) == 2:
                    rows[words[0]] = int(words[1])
    return rows


def pair(text):
    """NAME=VALUE of a bench's --cost and --shim-env."""
    name, eq, value = text.partition("=")
    if not eq or not name:
        raise argparse.ArgumentTypeError(f"want NAME=VALUE, not {text!r}")
    return name, value


def kernel_costs(kernel_ns, profile=None):
    """A SIMCU_COSTS file's text that makes every kernel last kernel_ns on the
    device (threads add their usual few ns), on top of a profile's rows (or
    the sim's built-in table). A graph's kernel node saves the profile's
    per-launch device overhead of an eager launch (device_kernel -
    device_graph_kernel: 1.5 us in the built-in table), down to a quarter of
    the kernel for the shortest kernels, so the table is the case kernel_ns =
    its device_kernel."""
    rows = profile_rows(profile)
    gap = rows.get("device_kernel", 2000) - rows.get("device_graph_kernel", 500)
    node = max(kernel_ns - gap, kernel_ns // 4)
    rows.update(device_kernel=kernel_ns, device_graph_kernel=node)
    return "".join(f"{k} {v}\n" for k, v in rows.items())


def run(prog, args, simdir, lib=None, mode="eager", host_ns=0, costs=None, env=None,
        check=True, timeline=False):
    """Runs prog with args on the sim. mode "eager" runs it without the shim;
    any other mode preloads lib with GRAPE_MODE=mode (no other GRAPE_ variable
    is passed on: the shim's defaults apply unless env sets them). costs: the
    text of a SIMCU_COSTS file, or None for the sim's defaults. timeline:
    keep the sim's kernel timeline (Run.timeline)."""
    with tempfile.TemporaryDirectory() as d:
        e = dict(os.environ)
        for k in [k for k in e if k.startswith(("GRAPE_", "SIMCU_"))] + ["LD_PRELOAD"]:
            e.pop(k, None)
        e["SIMCU_HOST_NS"] = str(host_ns)
        e["SIMCU_REPORT"] = os.path.join(d, "sim.json")
        if timeline:
            e["SIMCU_TIMELINE"] = os.path.join(d, "timeline.txt")
        e["LD_LIBRARY_PATH"] = simdir + ":" + os.environ.get("LD_LIBRARY_PATH", "")
        if costs is not None:
            path = os.path.join(d, "costs.txt")
            with open(path, "w") as f:
                f.write(costs)
            e["SIMCU_COSTS"] = path
        if mode != "eager":
            e.update(LD_PRELOAD=lib, GRAPE_MODE=mode, GRAPE_REPORT=os.path.join(d, "grape.json"))
        e.update(env or {})
        p = subprocess.run([prog] + list(args), env=e, capture_output=True, text=True)
        if check and p.returncode != 0:
            raise RuntimeError(f"{prog} {' '.join(args)} ({mode}) exited with {p.returncode}:\n"
                               f"{p.stderr[-2000:]}")
        with open(os.path.join(d, "sim.json")) as f:
            sim = json.load(f)
        grape = None
        if mode != "eager":
            with open(os.path.join(d, "grape.json")) as f:
                grape = json.load(f)
        kernels = None
        if timeline:
            with open(os.path.join(d, "timeline.txt")) as f:
                kernels = [Kernel(line) for line in f if line.strip()]
        return Run(p.stdout, p.stderr, sim, grape, kernels)


def gap_closed(eager, run, bound):
    """The share of the eager -> LB gap a run closes, or None without a gap."""
    return (eager - run) / (eager - bound) if eager > bound else None
