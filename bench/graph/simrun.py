"""The one runner of the graph-mode benches (run_examples.py, grid.py,
anchors.py, run_soak.py): runs a program on the simulated device, without the
shim ("eager") or preloading it in a mode, with the sim's knobs set, and
returns what it printed and both exit reports.

The sim's time is deterministic, so one run per figure is enough: a figure
differs between two runs only if the program or the shim behaves differently.
Every run gets its own temporary folder, so runs may go on side by side."""
import json
import os
import subprocess
import tempfile


class Run:
    """stdout of the program, its SIMCU_REPORT (sim) and GRAPE_REPORT (grape,
    None without the shim)."""

    def __init__(self, stdout, stderr, sim, grape):
        self.stdout, self.stderr, self.sim, self.grape = stdout, stderr, sim, grape

    @property
    def checksum(self):
        """The last line the program printed (the examples' "checksum <hex>")."""
        lines = self.stdout.strip().splitlines()
        return lines[-1] if lines else ""


def kernel_costs(kernel_ns):
    """A SIMCU_COSTS file's text that makes every kernel last kernel_ns on the
    device (threads add their usual few ns). A graph's kernel node saves the
    1.5 us of per-launch device overhead an eager launch pays (the defaults'
    2000 against 500), down to a quarter of the kernel for the shortest
    kernels, so the defaults are the case kernel_ns = 2000."""
    node = max(kernel_ns - 1500, kernel_ns // 4)
    return f"device_kernel {kernel_ns}\ndevice_graph_kernel {node}\n"


def run(prog, args, simdir, lib=None, mode="eager", host_ns=0, costs=None, env=None,
        check=True):
    """Runs prog with args on the sim. mode "eager" runs it without the shim;
    any other mode preloads lib with GRAPE_MODE=mode (no other GRAPE_ variable
    is passed on: the shim's defaults apply unless env sets them). costs: the
    text of a SIMCU_COSTS file, or None for the sim's defaults."""
    with tempfile.TemporaryDirectory() as d:
        e = dict(os.environ)
        for k in [k for k in e if k.startswith(("GRAPE_", "SIMCU_"))] + ["LD_PRELOAD"]:
            e.pop(k, None)
        e["SIMCU_HOST_NS"] = str(host_ns)
        e["SIMCU_REPORT"] = os.path.join(d, "sim.json")
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
        return Run(p.stdout, p.stderr, sim, grape)


def gap_closed(eager, run, bound):
    """The share of the eager -> LB gap a run closes, or None without a gap."""
    return (eager - run) / (eager - bound) if eager > bound else None
