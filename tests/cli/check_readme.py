#!/usr/bin/env python3
"""check_readme.py --readme README.md --build BUILD --source SOURCE [--preload P]:
every command of the README's "Using it" section runs as written.
check_readme.py --recipe NAME --build BUILD --source SOURCE [--job P] [--job-mpi P]:
the same for a recipe of docs/ (RECIPES below: torchrun, mpirun, Slurm,
predictor.md's loop, its cross-validation lines, the full data set's
download, the default model's training, bench/predict/eval.sh and
bench/predict/neusight.py), with the output the doc shows (or, where it
shows none, PRINTS).

The section's first code block is read from the README itself (so the README
cannot rot), and each line is run in order by bash in an empty folder that
holds `build` and `data` as links to the build tree and to the checkout's
data/, as from a checkout: each must exit 0, with nothing left to fill in
(no "...", no "[...]"). On this machine without a GPU, the plain LD_PRELOAD
line must reach the simulated device (its report counts kernel launches).
Then the traced run is repeated: `grape inspect run.*.grape` must summarise
both traces.

Skips (77) without nvcc's examples, and in a sanitizer build (its shim
cannot be preloaded by a plain LD_PRELOAD line without the sanitizer's
runtime first; the normal build runs this test). A line naming a file of the
CUDA toolkit that is not installed is reported and not run.
"""
import argparse
import glob
import gzip
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_torch_examples import find_python, python_path  # noqa: E402


def fail(msg, p=None):
    if p is not None:
        msg += f"\nexit {p.returncode}\nstdout:\n{p.stdout[-2000:]}\nstderr:\n{p.stderr[-3000:]}"
    sys.exit("FAIL: " + msg)


def using_it(readme):
    text = open(readme).read()
    m = re.search(r"^## Using it\n(.*?)(?=^## )", text, re.S | re.M)
    if not m:
        fail(f"{readme} has no '## Using it' section")
    block, started = [], False
    for line in m.group(1).split("\n"):
        if line.startswith("    "):
            block.append(line[4:])
            started = True
        elif started and line.strip():
            break
    if not block:
        fail("the 'Using it' section has no code block")
    return block


# --recipe: a recipe of docs/, run as printed in an empty folder. Each is the
# section's code (a paragraph of commands; backslash lines joined) and the
# output it shows (a paragraph starting "grape:", or "mode M:" for grape
# report), whose every line must be
# printed by the commands: "..." stands for anything (what varies from run to
# run: pids, host times), runs of spaces for any.
# name: (doc, section heading, text the command paragraph holds)
RECIPES = {
    "torchrun": ("multi-rank.md", "### torchrun", "--nproc-per-node"),
    "torchrun-debian": ("multi-rank.md", "### torchrun", "--nproc_per_node"),
    "mpirun": ("multi-rank.md", "### mpirun (Open MPI)", "mpirun"),
    "predictor": ("predictor.md", "## The loop: replayed timings → training → predictions",
                  "grape replay"),
    "slurm": ("multi-rank.md", "### A job started without grape run (Slurm)", "sbatch"),
    "cv-extrapolate": ("predictor.md", "### Beyond the training range (`grape train --cv "
                       "extrapolate`)", "the 50% split"),
    "cv-extrapolate-75": ("predictor.md", "### Beyond the training range (`grape train --cv "
                          "extrapolate`)", "GRAPE_CV_SPLIT=0.75"),
    "cv-shapes": ("predictor.md", "### Shapes like real models: alignment and shape families "
                  "(`--cv-families`)", "--cv-shapes"),
    "neusight-data": ("predictor.md", "## The full NeuSight data set", "git clone"),
    "default-model": ("predictor.md", "## Model file and the default model",
                      "-o data/default_model.txt"),
    "eval": ("predictor.md", "### End to end (`bench/predict/eval.sh`)", "eval.sh"),
    "neusight": ("predictor.md", "### Against NeuSight itself (`bench/predict/neusight.py`)",
                 "--epochs"),
    "real-rows": ("predictor.md", "### Against NeuSight itself (`bench/predict/neusight.py`)",
                  "real_rows.py"),
}
# What a recipe whose doc shows no output must print instead (regexes searched).
PRINTS = {
    "cv-extrapolate": [r"^extrapolation cross-validation: .* up to the 50th percentile",
                       r"^bmm +\| +\d+ +[\d.]+ +[\d.]+"],
    "cv-extrapolate-75": [r"^extrapolation cross-validation: .* up to the 75th percentile",
                          r"^bmm +\| +\d+ +[\d.]+ +[\d.]+"],
    "cv-shapes": [r"^shape-fold cross-validation \(5 folds", r"^bmm +\d+ +\d+ +[\d.]+",
                  r"^## shapes-before.csv: \d+ held-out rows", r"^\| bmm \| \d+ \|"],
    "neusight-data": [],
    "eval": [r"^## held-out shapes: \d+ held-out rows", r"^## held-out shape families: \d+ held-out rows",
             r"^\| bmm \| \d+ \|", r"^## held-out GPUs", r"^bmm +\d+ +[\d.]+ "],
    "neusight": [r"^\| softmax \| [\d.]+ / [\d.]+ \([\d.]+×\), \d+ rows \| .* 3 epochs, ",
                 r"^\| ln \| [\d.]+ / [\d.]+ .* 3 epochs, ", r"^\| class \| GPU \| grape / NeuSight MAPE % \|",
                 r"^\| softmax \| (known|known-extrapolated|transfer) \| \d+ \| [\d.]+ \|"],
    # Both runs' tables: the default model's and the pooled one's.
    "real-rows": [r"^\| class \| GPUs \| regime \| half \|(.|\n)*^\| class \| GPUs \| regime \| half \|",
                  r"^\| bmm \| training \| known \| [01] \| \d+ \| [\d.]+ \| [\d.]+ \|"],
}
# The cross-validation recipes, the default model's training and the
# evaluations run on the full data set, neusight/train/OP/, minutes each; the
# test lays the repository's subset out there instead
# (neusight/train/OP/subset.csv.gz), which docs/predictor.md says.
SUBSET_AS_FULL = ("cv-extrapolate", "cv-extrapolate-75", "cv-shapes", "default-model", "eval", "neusight", "real-rows")
# NeuSight's held-out test folder as neusight.py reads it (CLASS.csv and the
# GPUs' spec files), made for the "neusight" recipe of the subset's rows.
NEUSIGHT_TEST = os.path.join("NeuSight", "scripts", "asplos", "data", "dataset", "test")
NEUSIGHT_TEST_CLASSES = {"bmm": ["bmm"], "linear": ["linear"], "elem": ["add", "gelu"],
                         "softmax": ["softmax"], "ln": ["ln"]}


def section_paragraphs(doc, heading):
    """The paragraphs of the indented code of DOC's section HEADING."""
    text = open(doc).read()
    level = len(heading.split(" ")[0])
    m = re.search("^" + re.escape(heading) + r"\n(.*?)(?=^#{1,%d} |\Z)" % level, text, re.S | re.M)
    if not m:
        fail(f"{doc} has no '{heading}' section")
    paragraphs, cur = [], []
    for line in m.group(1).split("\n") + [""]:
        if line.startswith("    "):
            cur.append(line[4:])
        elif cur:
            paragraphs.append(cur)
            cur = []
    return paragraphs


def shown_line(line):
    """A regex for a line of output as a doc shows it."""
    parts = []
    for tok in re.split(r"(\.\.\.|\s+)", line.strip()):
        if tok == "...":
            parts.append(".*?")
        elif tok.isspace():
            parts.append(r"\s+")
        else:
            parts.append(re.escape(tok))
    return re.compile("".join(parts))


def torchrun_for(a, recipe):
    """The directory to put first on PATH for a torchrun recipe, or a reason to skip."""
    if recipe == "torchrun":
        py, why = find_python(a.source)
        if py is None:
            return None, why
        run = os.path.join(os.path.dirname(py), "torchrun")
        if not os.path.exists(run):
            return None, f"no torchrun beside {py}"
        return os.path.dirname(run), None
    run = shutil.which("torchrun")
    if not run:
        return None, "torchrun not installed (scripts/setup-deps installs python3-torch)"
    helptext = subprocess.run([run, "--help"], capture_output=True, text=True, timeout=120).stdout
    if "--nproc-per-node" in helptext:
        return None, f"{run} is not torch 1.x (it takes --nproc-per-node: the torchrun recipe's)"
    return os.path.dirname(run), None


def check_slurm_outputs(tmp):
    """The Slurm recipe's files: a report and a trace per rank, the sim's
    times, the kernel table as CSV."""
    host = os.uname().nodename
    want = [f"run/r.{r}.{host}.json" for r in (0, 1)] + [f"run/t.{r}.grape" for r in (0, 1)]
    missing = [w for w in want if not os.path.exists(os.path.join(tmp, w))]
    sims = glob.glob(os.path.join(tmp, "run", "sim.*.json"))
    for w in want[:2]:
        if not missing and json.load(open(os.path.join(tmp, w))).get("rank") != int(w[6]):
            fail(f"{w} does not hold its rank")
    csv = open(os.path.join(tmp, "kernels.csv")).read().split("\n")
    if missing or len(sims) != 2 or not csv[0].startswith("name,") or len(csv) < 3:
        fail(f"the Slurm recipe left {missing} missing, {len(sims)} sim reports, kernels.csv "
             f"{csv[:3]}")


def check_neusight_data(tmp):
    """The full data set's layout: neusight/train/OP/GPU.csv.gz for every op of
    the repository's subset, each decompressing to the upstream file."""
    made = glob.glob(os.path.join(tmp, "neusight", "train", "*", "*.csv.gz"))
    ops = {os.path.basename(os.path.dirname(m)) for m in made}
    want = {"bmm", "linear", "add", "gelu", "softmax", "ln", "conv"}
    if not want <= ops:
        fail(f"the NeuSight recipe made no folder for {sorted(want - ops)}")
    for m in made:
        op, gpu = m.split(os.sep)[-2], os.path.basename(m)[:-len(".gz")]
        src = glob.glob(os.path.join(tmp, "NeuSight", "scripts", "asplos", "data", "dataset",
                                     "train", "collect", op, "p2.1.0", "*.csv"))
        src = [f for f in src if os.path.basename(f).replace(" ", "_") == gpu]
        if len(src) != 1 or gzip.open(m).read() != open(src[0], "rb").read():
            fail(f"{m} is not the upstream {op}/{gpu} gzipped")


def lay_out_neusight_test(tmp, source, py):
    """A stand-in for NeuSight's test folder (its layout, the subset's rows, the
    GPUs' spec files) and, given PY, .venv-frameworks/bin/python running it."""
    test = os.path.join(tmp, NEUSIGHT_TEST)
    shutil.copytree(os.path.join(source, "data", "neusight-subset", "devices"),
                    os.path.join(test, "device_configs"))
    for cls, ops in NEUSIGHT_TEST_CLASSES.items():
        with open(os.path.join(test, cls + ".csv"), "w") as out:
            for i, op in enumerate(ops):
                with gzip.open(os.path.join(source, "data", "neusight-subset", op + ".csv.gz"),
                               "rt") as f:
                    lines = f.read().splitlines(True)
                out.writelines(lines if i == 0 else lines[1:])
    if not py:
        return
    venv = os.path.join(tmp, ".venv-frameworks", "bin")
    os.makedirs(venv)
    with open(os.path.join(venv, "python"), "w") as f:
        f.write(f'#!/bin/sh\nexec "{py}" "$@"\n')
    os.chmod(os.path.join(venv, "python"), 0o755)


def check_default_model(tmp, build):
    """The model the recipe trained replaces data/default_model.txt of the
    folder (not the checkout's) and predicts with grape predict -m."""
    model = os.path.join(tmp, "data", "default_model.txt")
    if os.path.islink(model) or not os.path.exists(model):
        fail("the default model's recipe wrote no data/default_model.txt of its own")
    p = subprocess.run([os.path.join(build, "tools", "grape"), "predict", "-m", model, "--csv",
                        os.path.join(tmp, "data", "neusight-subset", "softmax.csv.gz")],
                       capture_output=True, text=True, timeout=60)
    rows = p.stdout.split("\n")
    if p.returncode != 0 or "predicted_ms" not in rows[0] or len(rows) < 3:
        fail("grape predict -m with the recipe's model", p)


def check_recipe(a):
    doc, heading, holds = RECIPES[a.recipe]
    doc = os.path.join(a.source, "docs", doc)
    paragraphs = section_paragraphs(doc, heading)
    output = [p for p in paragraphs if re.match(r"grape:|mode \w+: ", p[0])]
    shown = [l for p in output for l in p if l.strip() and l.strip() != "..."]
    cmds = [p for p in paragraphs if p not in output and holds in " ".join(p)]
    if len(cmds) != 1 or not (shown or a.recipe in PRINTS):
        fail(f"{doc} '{heading}': want one paragraph of commands holding {holds} and its output, "
             f"got {cmds} and {shown}")
    # A here-document or a variable set on its own line for the lines after
    # it: the paragraph is one script.
    if any("<<" in l or re.fullmatch(r"\w+=\S+", l) for l in cmds[0]):
        lines = ["set -e\n" + "\n".join(cmds[0])]
    else:
        lines = [l for l in "\n".join(cmds[0]).replace("\\\n", " ").split("\n") if l.strip()]
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPE_", "SIMCU_")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    # The documented setup: grape on PATH (as installed), the launcher's own.
    path = [os.path.join(a.build, "tools")]
    if a.recipe.startswith("torchrun"):
        where, why = torchrun_for(a, a.recipe)
        if why:
            print(f"skipped: {why}")
            return 77
        path.append(where)
    if a.recipe == "slurm":
        # Slurm's sbatch and srun on one node (tests/cli/slurm: what the recipe
        # relies on of them, SLURM_SUBMIT_DIR, SLURM_PROCID, the environment).
        path.insert(0, os.path.join(a.source, "tests", "cli", "slurm"))
    if a.recipe == "mpirun":
        if not shutil.which("mpirun") or a.job_mpi == "-":
            print("skipped: mpirun or an MPI compiler is not installed "
                  "(scripts/setup-deps installs openmpi-bin, libopenmpi-dev)")
            return 77
        if os.geteuid() == 0:  # as the recipe says
            env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    if a.recipe == "neusight":
        py = python_path(a.source)[0]   # any importable torch: a CUDA build is not needed
        try:
            found = subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0
        except OSError:
            found = False
        if not found:
            print(f"skipped: no importable torch at {py} (scripts/setup-deps --frameworks "
                  "installs it, or set GRAPE_TORCH_PYTHON)")
            return 77
    if a.recipe == "neusight-data":
        url = re.search(r"git clone (\S+)", " ".join(cmds[0])).group(1)
        try:
            subprocess.run(["git", "ls-remote", "--exit-code", url, "HEAD"], check=True,
                           capture_output=True, timeout=30)
        except (subprocess.SubprocessError, OSError):
            print(f"skipped: {url} cannot be reached (no network here)")
            return 77
    env["PATH"] = ":".join(path + [env.get("PATH", "/usr/bin:/bin")])
    errors = [shown_line(l) for l in shown if "error:" in l]
    printed = []
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(a.build, os.path.join(tmp, "build"))
        if a.recipe == "default-model":
            # The recipe writes data/default_model.txt: the folder's own, never
            # the checkout's.
            os.mkdir(os.path.join(tmp, "data"))
            for name in os.listdir(os.path.join(a.source, "data")):
                if name != "default_model.txt":
                    os.symlink(os.path.join(a.source, "data", name), os.path.join(tmp, "data", name))
        else:
            os.symlink(os.path.join(a.source, "data"), os.path.join(tmp, "data"))
        os.symlink(os.path.join(a.source, "bench"), os.path.join(tmp, "bench"))
        for name, prog in (("my_program", a.job), ("my_mpi_program", a.job_mpi)):
            if prog != "-":
                os.symlink(prog, os.path.join(tmp, name))
        if a.full_data:
            os.makedirs(os.path.join(tmp, "neusight"))
            os.symlink(os.path.abspath(a.full_data), os.path.join(tmp, "neusight", "train"))
        elif a.recipe in SUBSET_AS_FULL:
            for gz in glob.glob(os.path.join(a.source, "data", "neusight-subset", "*.csv.gz")):
                op = os.path.join(tmp, "neusight", "train", os.path.basename(gz)[:-len(".csv.gz")])
                os.makedirs(op)
                os.symlink(gz, os.path.join(op, "subset.csv.gz"))
        if a.recipe in ("neusight", "real-rows"):
            lay_out_neusight_test(tmp, a.source, py if a.recipe == "neusight" else None)
        for line in lines:
            p = subprocess.run(["bash", "-c", "set -o pipefail; " + line], capture_output=True,
                               text=True, env=env, cwd=tmp,
                               timeout=900 if a.recipe == "neusight-data" else 120)
            out = (p.stdout + p.stderr).split("\n")
            printed += [o.strip() for o in out]
            if p.returncode != 0 and not any(r.fullmatch(o.strip()) for r in errors for o in out):
                fail(f"{os.path.basename(doc)} line: {line}", p)
            if p.returncode == 0 and any(r.fullmatch(o.strip()) for r in errors for o in out):
                fail(f"{os.path.basename(doc)} line printed its error and exited 0: {line}", p)
            for pattern in re.findall(r"'([^']*%r[^']*)'", line):
                for rank in (0, 1):
                    if not os.path.exists(os.path.join(tmp, pattern.replace("%r", str(rank)))):
                        fail(f"{line}: wrote no {pattern} for rank {rank}", p)
        if a.recipe == "slurm":
            check_slurm_outputs(tmp)
        if a.recipe == "neusight-data":
            check_neusight_data(tmp)
        if a.recipe == "default-model":
            check_default_model(tmp, a.build)
            committed = os.path.join(a.source, "data", "default_model.txt")
            if a.full_data and open(committed, "rb").read() != open(
                    os.path.join(tmp, "data", "default_model.txt"), "rb").read():
                fail(f"the model trained on {a.full_data} is not the committed {committed}: "
                     "regenerate it as docs/predictor.md says")
        if a.recipe == "eval":
            for f in ("shapes.csv", "families.csv"):
                if not os.path.getsize(os.path.join(tmp, "grape-eval", f)):
                    fail(f"bench/predict/eval.sh left grape-eval/{f} empty")
            if (os.path.exists(os.path.join(a.build, "examples", "decode"))
                    and not re.search(r"^## run level: .*\n\n.*predicted on", "\n".join(printed), re.M)):
                fail("bench/predict/eval.sh printed no run-level prediction of decode:\n"
                     + "\n".join(printed)[-2000:])
        for r in PRINTS.get(a.recipe, []):
            if not re.search(r, "\n".join(printed), re.M):
                fail(f"{os.path.basename(doc)} '{heading}': nothing printed matches {r}:\n"
                     + "\n".join(printed)[-4000:])
        for l in shown:
            if not any(shown_line(l).fullmatch(o) for o in printed):
                fail(f"{os.path.basename(doc)} shows a line its commands do not print:\n  {l}\n"
                     "they printed:\n" + "\n".join(printed)[-4000:])
    print(f"{len(lines)} commands of {os.path.basename(doc)} '{heading}' ran as printed; "
          f"{len(shown)} lines of their output shown there were printed"
          + (f", {len(PRINTS[a.recipe])} patterns of theirs found" if a.recipe in PRINTS else ""))
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--readme")
    ap.add_argument("--build", required=True)
    ap.add_argument("--source", required=True)
    ap.add_argument("--preload", default="")
    ap.add_argument("--recipe", choices=sorted(RECIPES),
                    help="run a recipe of docs/ instead of the README's commands")
    ap.add_argument("--job", default="-", help="the program the multi-rank recipes name")
    ap.add_argument("--job-mpi", default="-", help="the MPI program the mpirun recipe names")
    ap.add_argument("--full-data", help="the full NeuSight set for neusight/train, in place of "
                    "the subset (the default model's must then equal data/default_model.txt)")
    a = ap.parse_args()
    if a.full_data and not os.path.isdir(a.full_data):
        print(f"skipped: no full data set at {a.full_data} (docs/predictor.md: The full "
              "NeuSight data set)")
        return 77
    if any(x and not x.endswith("libgrape.so") for x in a.preload.split(":")):
        print("skipped: a sanitizer build (the README's LD_PRELOAD line needs the normal build)")
        return 77
    if a.recipe and a.recipe != "predictor":
        return check_recipe(a)
    if not os.path.exists(os.path.join(a.build, "examples", "beam")):
        print("skipped: the README's examples need nvcc")
        return 77
    if a.recipe:
        return check_recipe(a)
    lines = using_it(a.readme)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("GRAPE_", "SIMCU_")) and k not in ("LD_LIBRARY_PATH", "LD_PRELOAD")}
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(a.build, os.path.join(tmp, "build"))
        os.symlink(os.path.join(a.source, "data"), os.path.join(tmp, "data"))

        def run(line):
            p = subprocess.run(["bash", "-c", "set -o pipefail; " + line], capture_output=True,
                               text=True, timeout=600, env=env, cwd=tmp)
            if p.returncode != 0:
                fail(f"README line: {line}", p)
            return p

        ran = 0
        for line in lines:
            if "..." in line or re.search(r"\[[^]]*\]", line):
                fail(f"README line is not a command to run as written: {line}")
            toolkit = [w for w in line.split() if w.startswith("/usr/local/cuda")]
            if toolkit and not all(os.path.exists(w) for w in toolkit):
                print(f"not run (no {toolkit[0]} here): {line}")
                continue
            p = run(line)
            ran += 1
            if "GRAPE_REPORT=stderr" in line:
                start = p.stderr.find("{")
                try:
                    rep, _ = json.JSONDecoder().raw_decode(p.stderr[start:])
                except ValueError:
                    fail(f"no JSON report on stderr from: {line}", p)
                if not rep.get("launches"):
                    fail(f"the plain LD_PRELOAD line ran no kernels: {line}", p)
        for out in ("report.json", "model.txt", "timings.csv", "timed.grape", "paths.json",
                    "timeline.json"):
            if not os.path.exists(os.path.join(tmp, out)):
                fail(f"the README's commands did not write {out}")
        # The timeline as a viewer reads it (tests/replay/check_timeline.py).
        sys.path.insert(0, os.path.join(a.source, "tests", "replay"))
        import check_timeline
        try:
            got = check_timeline.check(json.load(open(os.path.join(tmp, "timeline.json"))))
        except check_timeline.Broken as e:
            fail(f"the README's timeline.json breaks a trace-event rule: {e}")
        if got["flows"] == 0 or got["streams"] == 0:
            fail(f"the README's timeline.json has no stream rows or arrows: {got['streams']}, "
                 f"{got['flows']}")

        # A second traced run: inspect takes both traces.
        traced = [l for l in lines if l.startswith("GRAPE_TRACE=")]
        inspect = [l for l in lines if " inspect " in l]
        if len(traced) != 1 or len(inspect) != 1:
            fail(f"want one traced run and one inspect line, got {traced}, {inspect}")
        run(traced[0])
        traces = glob.glob(os.path.join(tmp, "run.*.grape"))
        p = run(inspect[0])
        if len(traces) != 2 or any(f"== {os.path.basename(t)} ==" not in p.stdout for t in traces):
            fail(f"grape inspect of {len(traces)} traces", p)
        print(f"{ran} of {len(lines)} README commands ran as written; inspect took 2 traces")
    return 0


if __name__ == "__main__":
    sys.exit(main())
