#!/usr/bin/env python3
"""check_readme.py --readme README.md --build BUILD --source SOURCE [--preload P]:
every command of the README's "Using it" section runs as written.
check_readme.py --recipe NAME --build BUILD --source SOURCE [--job P] [--job-mpi P]:
the same for another paragraph of commands of README.md or docs/ (RECIPES
below: torchrun, mpirun, Slurm, predictor.md's loop, its cross-validation
lines, the full data set's download, the default model's training, the
bench scripts, the fuzz recipes, ...), with the output the doc shows (or,
where it shows none, PRINTS). The long ones (LONG) are meson benchmarks;
check_doc_commands.py checks that every command of the docs is run here or
listed in NOT_RUN with why not.

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
# name: (doc in the checkout, section heading, a regex the paragraph of
# commands matches)
RECIPES = {
    "torchrun": ("docs/multi-rank.md", "### torchrun", "--nproc-per-node"),
    "torchrun-debian": ("docs/multi-rank.md", "### torchrun", "--nproc_per_node"),
    "mpirun": ("docs/multi-rank.md", "### mpirun (Open MPI)", "mpirun"),
    "predictor": ("docs/predictor.md", "## The loop: replayed timings → training → predictions",
                  "grape replay"),
    "slurm": ("docs/multi-rank.md", "### A job started without grape run (Slurm)", "sbatch"),
    "cv-extrapolate": ("docs/predictor.md", "### Beyond the training range (`grape train --cv "
                       "extrapolate`)", "the 50% split"),
    "cv-extrapolate-75": ("docs/predictor.md", "### Beyond the training range (`grape train --cv "
                          "extrapolate`)", r"GRAPE_CV_SPLIT=0\.75"),
    "cv-shapes": ("docs/predictor.md", "### Shapes like real models: alignment and shape families "
                  "(`--cv-families`)", "--cv-shapes"),
    "neusight-data": ("docs/predictor.md", "## The full NeuSight data set", "git clone"),
    "default-model": ("docs/predictor.md", "## Model file and the default model",
                      r"-o data/default_model\.txt"),
    "eval": ("docs/predictor.md", "### End to end (`bench/predict/eval.sh`)", r"eval\.sh"),
    "neusight": ("docs/predictor.md", "### Against NeuSight itself (`bench/predict/neusight.py`)",
                 "--epochs"),
    "neusight-full": ("docs/predictor.md", "### Against NeuSight itself (`bench/predict/neusight.py`)",
                      r"neusight\.py --test \S+$"),
    "real-rows": ("docs/predictor.md", "### Against NeuSight itself (`bench/predict/neusight.py`)",
                  r"real_rows\.py"),
    "e2e": ("docs/predictor.md", "### End to end: whole models against public measurements "
            "(`bench/predict/e2e.py`)", r"e2e\.py"),
    "demo": ("README.md", "## Quick start", r"^scripts/demo"),
    "torch-quick-start": ("README.md", "## Quick start", r"train_mlp\.py"),
    "nvtx": ("docs/configuration.md", "## NVTX ranges", "NVTX_INJECTION64_PATH"),
    "report-api": ("docs/configuration.md", "## `grape report`", "--table api"),
    "chunk-phase": ("docs/frameworks.md", "#### A step that never synchronises", "chunk_phase"),
    "concurrency": ("docs/concurrency.md", "## Measured on the simulated device",
                    r"bench/graph/concurrency\.py"),
    "bench-shim": ("docs/performance.md", "## Shim overhead per launch (bench/shim)", "bench-shim"),
    "prefill": ("docs/concurrency.md", "### The showcase: prefill, where concurrency pays",
                "bench-prefill"),
    "prefill-go": ("docs/concurrency.md", "### go mode on the showcase (measured on the sim)",
                   r"--go-only"),
    "grid": ("docs/graph-mode.md", "### The grid under the profiles", r"bench/graph/grid\.py"),
    "anchor-bounds": ("docs/graph-mode.md", "### Under the sourced profiles",
                      r"bench/graph/anchors\.py .*--cost"),
    "kernels-eval": ("docs/predictor.md", "### Public kernel-level timings (`bench/kernels/`)",
                     r"bench/kernels/eval\.py"),
    "sim": ("docs/sim.md", "# The simulated device", "build/examples/dynrnn"),
    "cuda-api": ("docs/sim.md", "## The API surface", r"cuda_api\.py --runtime"),
    "calibration": ("docs/sim.md", "## The device model and its calibration",
                    r"bench/gpu/concurrency\.cu"),
    "fuzz-cubin": ("docs/testing.md", "## Fuzzing (cubin/)", "fuzz_fatbin"),
    "fuzz-trace": ("docs/testing.md", "### Fuzzing (the trace reader)", "fuzz_trace"),
    "trace-format": ("docs/trace-format.md", "# The trace format (`GRAPE_TRACE`)",
                     r"grape inspect run"),
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
    "neusight-full": [r"^\| %s \| [\d.]+ / [\d.]+ .* 100 epochs, " % c
                      for c in ("bmm", "linear", "elem", "softmax", "ln")],
    "demo": [r"^decode: \d+ batches", r"^grape: mode graph: \d+ kernel launches",
             r"^grape: predicted on NVIDIA H100"],
    "torch-quick-start": [r"^trained 200 steps", r"^grape: mode graph: \d+ kernel launches"],
    "nvtx": [r'"nvtx":\{"clock":"simulated","ranges":\[\{"name":"batch","style":"PushPop"'],
    "report-api": [r"^grape: mode graph: \d+ kernel launches", r"^name,calls,"],
    "chunk-phase": [r"^chunk_phase: 200 steps of 31 kernels, no sync"],
    "concurrency": [r"^\| 60 \| safe \| [\d.]+ "],
    "bench-shim": [r"^\| route \| config \| instructions/launch \|",
                   r"^\| driver \| graph \| \d+ \| [+-]\d+ \|"],
    "prefill": [r"^End to end, --iters", r"^\| \w+ \| safe \| [\d.]+ "],
    "prefill-go": [r"^go on the persistent-GEMM regions",
                   r"^\| (default|fair) \| \d+ \| [\d.]+ \| [\d.]+ \| [\d.]+ \| [\d.]+x \|"],
    "anchor-bounds": [r"^\| `beam --iters 50` \| 2000 \| [\d.]+ \| [\d.]+ \| — \| [\d.]+ \| [\d.]+ \| \d+% \|",
                      r"^\| `decode` \| 8000 \| "],
    "grid": [r"^Checksums and kernels executed identical in all \d+ regimes\.",
             r"^decode: \d+ of \d+ regimes more than 2% slower than eager"],
    "kernels-eval": [r"^per-kernel MAPE %", r"^all +[\d.]+ \("],
    "sim": [r"^dynrnn: \d+ iterations", r"^mlp_train: 30 steps", r"^moe: 3 batches, \d+ steps, \d+ GEMMs"],
    "cuda-api": [r"^cudaError_t cudaDeviceSynchronize\(void\)$",
                 r"^cuArray3DCreate 3020 - cuArray3DCreate_v2$", r'"name": "cuArray3DCreate"'],
    "calibration": [r'^\{"set":"moe_E2_T16_N4096_K4096"'],
    "fuzz-cubin": [r"^Done \d+ runs in \d+ second"],
    "fuzz-trace": [r"^Done \d+ runs in \d+ second"],
    "trace-format": [r"^trace of \S+/beam \(pid \d+", r"^grape: replayed \d+ of \d+ paths"],
    # The one run of data/neusight-e2e, and its summary.
    "e2e": [r"^\| Tesla V100-PCIE-32GB \| GPT2-Large \| 4 \| 36 \| 728\.8 \| [\d.]+ \([\d.]+\) \| 3\.8 \| 5\.4 \|",
            r"^\| training GPUs \| 1 \| [\d.]+ \|"],
    # Both runs' tables: the default model's and the pooled one's.
    "real-rows": [r"^\| class \| GPUs \| regime \| half \|(.|\n)*^\| class \| GPUs \| regime \| half \|",
                  r"^\| bmm \| training \| known \| [01] \| \d+ \| [\d.]+ \| [\d.]+ \|"],
}
# The cross-validation recipes, the default model's training and the
# evaluations run on the full data set, neusight/train/OP/, minutes each; the
# test lays the repository's subset out there instead
# (neusight/train/OP/subset.csv.gz), which docs/predictor.md says.
SUBSET_AS_FULL = ("cv-extrapolate", "cv-extrapolate-75", "cv-shapes", "default-model", "eval",
                  "neusight", "neusight-full", "real-rows", "e2e")
# Recipes that take minutes to hours, run as meson benchmarks
# (meson test --benchmark): a line's time limit in seconds.
LONG = {"bench-shim": 1800, "concurrency": 1800, "prefill": 1800, "prefill-go": 1800, "grid": 3600,
        "neusight-full": 7200, "fuzz-cubin": 1800, "fuzz-trace": 1800, "demo": 3600}
# Recipes run in a copy of the checkout (they build in it, or write into
# tests/), not in an empty folder of links.
IN_A_COPY = ("demo", "fuzz-cubin", "fuzz-trace")
# Recipes run on nvcc's examples (build/examples/), skipped without them.
ON_EXAMPLES = ("predictor", "sim", "anchor-bounds", "bench-shim", "nvtx", "report-api", "concurrency", "prefill", "prefill-go",
               "grid", "trace-format", "demo")
# Files a recipe must leave in its folder.
WRITES = {"sim": ["report.json"], "chunk-phase": ["r.json"],
          "trace-format": ["timings.csv", "timed.grape", "paths.json", "timeline.json"]}
# Commands of the docs that no test runs, and why (a recipe skips them in
# its paragraph; check_doc_commands.py lists them with this reason).
NOT_RUN = {
    "scripts/setup-deps --frameworks": "downloads PyTorch's 3 GB from PyPI (.ci/run runs it, "
    "with --viewer; setup_frameworks_failed checks its failure)",
    "scripts/test": "the whole suite in two builds (.ci/run runs it)",
    "meson setup build && ninja -C build": "the build every test runs from",
    "meson test -C build --suite torch": "the torch_* tests themselves",
    "scripts/setup-deps --frameworks --viewer": "downloads PyTorch's 3 GB from PyPI and installs "
    "chromium (.ci/run runs it; setup_frameworks_failed and setup_viewer_failed check its failures)",
    "scripts/setup-deps --viewer": "installs chromium (as root) and fetches Catapult from GitHub "
    "(.ci/run runs it; setup_viewer_failed checks its failure)",
    "meson test -C build timeline_viewer trace_viewer_decode": "the viewer tests themselves",
    "python3 bench/under_load.py build-asan --suite all --skip-quiet":
        "the whole suite of build-asan under load, twice (about an hour; by hand)",
    "python3 bench/under_load.py build --suite all --skip-quiet":
        "the whole suite under load, twice (by hand)",
    "python3 bench/under_load.py build-tsan --suite threads":
        "the threads suite of build-tsan under load (by hand)",
}
# NeuSight's held-out test folder as neusight.py reads it (CLASS.csv and the
# GPUs' spec files), made for the "neusight" recipe of the subset's rows.
NEUSIGHT_TEST = os.path.join("NeuSight", "scripts", "asplos", "data", "dataset", "test")
NEUSIGHT_TEST_CLASSES = {"bmm": ["bmm"], "linear": ["linear"], "elem": ["add", "gelu"],
                         "softmax": ["softmax"], "ln": ["ln"]}


def code_blocks(text):
    """The code blocks of markdown TEXT: (first line number, lines, the
    fence's language or None). An indented block starts after a blank line
    (four spaces after a line of text continue it, as in a list item) and
    runs while its lines are indented; a fenced one runs between ``` lines."""
    blocks, cur, start, fence, blank = [], [], 0, None, True
    for n, line in enumerate(text.split("\n") + [""], 1):
        if fence is not None:
            if line.startswith("```"):
                blocks.append((start, cur, fence))
                cur, fence = [], None
            else:
                cur.append(line)
        elif line.startswith("```"):
            fence, start = line[3:].strip(), n + 1
        elif line.startswith("    ") and (cur or blank):
            if not cur:
                start = n
            cur.append(line[4:])
        elif cur:
            blocks.append((start, cur, None))
            cur = []
        blank = not line.strip()
    return blocks


def section_paragraphs(doc, heading):
    """The paragraphs of the indented code of DOC's section HEADING (up to
    the next heading)."""
    text = open(doc).read()
    m = re.search("^" + re.escape(heading) + r"\n(.*?)(?=^#+ |\Z)", text, re.S | re.M)
    if not m:
        fail(f"{doc} has no '{heading}' section")
    return [lines for _, lines, fence in code_blocks(m.group(1)) if fence is None]


def command_of(line):
    """LINE as a command: its trailing comment and extra spaces dropped."""
    return " ".join(re.sub(r"\s#\s.*$", "", line).split())


def recipe_paragraph(source, recipe):
    """RECIPE's doc, its section's paragraphs and its paragraph of commands."""
    doc, heading, holds = RECIPES[recipe]
    doc = os.path.join(source, doc)
    paragraphs = section_paragraphs(doc, heading)
    output = [p for p in paragraphs if re.match(r"grape:|mode \w+: ", p[0])]
    cmds = [p for p in paragraphs if p not in output and re.search(holds, " ".join(p))]
    return doc, output, cmds


def logical_lines(paragraph):
    """The commands of PARAGRAPH: lines ending in a backslash joined with the next."""
    return [l for l in "\n".join(paragraph).replace("\\\n", " ").split("\n") if l.strip()]


def copy_checkout(source, dest):
    """The checkout's files (tracked, and new ones git does not ignore) copied
    to DEST; False without git."""
    try:
        names = subprocess.run(["git", "-C", source, "ls-files", "-z", "--cached", "--others",
                                "--exclude-standard"], capture_output=True, check=True,
                               timeout=60).stdout.decode().split("\0")
    except (OSError, subprocess.SubprocessError):
        return False
    for name in filter(None, names):
        src = os.path.join(source, name)
        if os.path.isfile(src):
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, name))
    return True


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


def lay_out_checkout(tmp, a):
    """TMP as a checkout with its build: `build` a link to the build tree, and
    links to the checkout's own files and folders (data/'s, for the default
    model's recipe, which writes data/default_model.txt of its own)."""
    os.symlink(a.build, os.path.join(tmp, "build"))
    if a.recipe == "default-model":
        os.mkdir(os.path.join(tmp, "data"))
        for name in os.listdir(os.path.join(a.source, "data")):
            if name != "default_model.txt":
                os.symlink(os.path.join(a.source, "data", name), os.path.join(tmp, "data", name))
    for name in os.listdir(a.source):
        if not (name.startswith((".", "build")) or name in ("neusight", "NeuSight")
                or os.path.lexists(os.path.join(tmp, name))):
            os.symlink(os.path.join(a.source, name), os.path.join(tmp, name))


def venv_python(tmp, py):
    """.venv-frameworks/bin/python of TMP running PY, as setup-deps --frameworks makes it."""
    venv = os.path.join(tmp, ".venv-frameworks", "bin")
    os.makedirs(venv)
    with open(os.path.join(venv, "python"), "w") as f:
        f.write(f'#!/bin/sh\nexec "{py}" "$@"\n')
    os.chmod(os.path.join(venv, "python"), 0o755)


def lay_out_neusight_test(tmp, source):
    """A stand-in for NeuSight's test folder: its layout, the subset's rows,
    the GPUs' spec files."""
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
    heading, holds = RECIPES[a.recipe][1:]
    doc, output, cmds = recipe_paragraph(a.source, a.recipe)
    shown = [l for p in output for l in p if l.strip() and l.strip() != "..."]
    if len(cmds) != 1 or not (shown or a.recipe in PRINTS):
        fail(f"{doc} '{heading}': want one paragraph of commands holding {holds} and its output, "
             f"got {cmds} and {shown}")
    # A here-document or a variable set on its own line for the lines after
    # it: the paragraph is one script.
    if any("<<" in l or re.fullmatch(r"\w+=\S+", l) for l in cmds[0]):
        lines = ["set -e\n" + "\n".join(cmds[0])]
    else:
        lines = [l for l in logical_lines(cmds[0]) if command_of(l) not in NOT_RUN]
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
    if a.recipe in ON_EXAMPLES and not os.path.exists(os.path.join(a.build, "examples", "beam")):
        print("skipped: the recipe runs nvcc's examples (build/examples/), not built here")
        return 77
    needs = {"chunk-phase": os.path.join(a.build, "tests", "interpose", "chunk_phase"),
             "calibration": shutil.which("nvcc"), "fuzz-cubin": shutil.which("clang"),
             "fuzz-trace": shutil.which("clang"), "cuda-api": "/usr/local/cuda/include/cuda.h"}
    if a.recipe in needs and not (needs[a.recipe] and os.path.exists(needs[a.recipe])):
        print(f"skipped: the recipe needs {needs[a.recipe] or 'nvcc or clang on PATH'}")
        return 77
    py = None
    if a.recipe == "torch-quick-start":
        py, why = find_python(a.source)   # PyTorch's CUDA build, as the torch_* tests
        if py is None:
            print(f"skipped: {why}")
            return 77
    if a.recipe in ("neusight", "neusight-full"):
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
        if a.recipe in IN_A_COPY:
            if not copy_checkout(a.source, tmp):
                print(f"skipped: {a.source} is not a git checkout (the recipe runs in a copy of one)")
                return 77
        else:
            lay_out_checkout(tmp, a)
        if py:
            venv_python(tmp, py)
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
        if a.recipe in ("neusight", "neusight-full", "real-rows", "e2e"):
            lay_out_neusight_test(tmp, a.source)
        if a.recipe == "e2e":
            # One run's model-level measurement and operator graph, in place
            # of NeuSight's label/, results/ and summary/ folders.
            shutil.copytree(os.path.join(a.source, "data", "neusight-e2e", "scripts"),
                            os.path.join(tmp, "NeuSight", "scripts"), dirs_exist_ok=True)
        for line in lines:
            p = subprocess.run(["bash", "-c", "set -o pipefail; " + line], capture_output=True,
                               text=True, env=env, cwd=tmp,
                               timeout=LONG.get(a.recipe, 900 if a.recipe == "neusight-data" else 120))
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
        missing = [f for f in WRITES.get(a.recipe, []) if not os.path.exists(os.path.join(tmp, f))]
        if missing:
            fail(f"{os.path.basename(doc)} '{heading}': the commands wrote no {', '.join(missing)}")
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
    if a.recipe:
        return check_recipe(a)
    if not os.path.exists(os.path.join(a.build, "examples", "beam")):
        print("skipped: the README's examples need nvcc")
        return 77
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
