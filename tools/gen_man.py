#!/usr/bin/env python3
"""gen_man.py GRAPE OUT: writes grape(1), the manual page, from the built
grape's own --help texts: `grape --help` for the list of commands, then
`grape COMMAND --help` for each, so that the page and the program cannot
disagree. Run at build time (tools/meson.build); installed under man1/.
"""
import subprocess
import sys


def roff_text(text):
    """Plain text as roff lines: backslashes doubled, lines that start with a
    dot or an apostrophe protected."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def helptext(grape, args):
    p = subprocess.run([grape] + args, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        sys.exit(f"gen_man.py: {' '.join([grape] + args)} exited {p.returncode}: {p.stderr}")
    return p.stdout


def main():
    grape, out = sys.argv[1:3]
    top = helptext(grape, ["--help"])
    version = helptext(grape, ["--version"]).split()[-1]
    commands = []
    in_list = False
    for line in top.splitlines():
        if line.strip() == "commands:":
            in_list = True
        elif in_list and line.startswith("  ") and line.strip():
            name, _, summary = line.strip().partition(" ")
            commands.append((name, summary.strip()))
        elif in_list and not line.strip():
            in_list = False
    if not commands:
        sys.exit("gen_man.py: grape --help lists no commands")
    page = [f'.TH GRAPE 1 "" "grape {version}" "User Commands"',
            ".SH NAME",
            "grape \\- transparent CUDA-graph replay for unmodified GPU programs",
            ".SH SYNOPSIS",
            ".B grape",
            ".I COMMAND",
            "[\\fIARGS\\fR...]",
            ".SH DESCRIPTION",
            "grape runs a program with libgrape.so preloaded (\\fBgrape run\\fR), which",
            "intercepts its CUDA launches, records each stream's work between",
            "synchronisation points, and replays recurring paths as CUDA graphs; it",
            "writes traces that the other commands inspect, replay, time and export,",
            "and predicts kernel times on GPUs. Without a GPU, everything runs on the",
            "simulated device installed with it. Options of the shim are environment",
            "variables (GRAPE_*), listed under \\fBrun\\fR below.",
            ".SH COMMANDS",
            ".nf",
            roff_text(top),
            ".fi"]
    for name, summary in commands:
        page += [f".SS {name}", roff_text(summary), ".PP", ".nf",
                 roff_text(helptext(grape, [name, "--help"])), ".fi"]
    page += [".SH FILES",
             ".TP",
             ".I LIBDIR/libgrape.so",
             "the shim that \\fBgrape run\\fR preloads (SONAME libgrape.so.0)",
             ".TP",
             ".I LIBDIR/grape/sim/",
             "the simulated device: libcuda.so.1 and libcudart.so.13, found relative to",
             "the grape program (GRAPE_SIM_DIR overrides)",
             ".TP",
             ".I DATADIR/grape/default_model.txt",
             "the predictor's default model, also built into the library",
             ".SH SEE ALSO",
             "The documentation of the project: docs/configuration.md (every GRAPE_*",
             "option), docs/trace-format.md, docs/predictor.md, docs/sim.md."]
    with open(out, "w") as f:
        f.write("\n".join(page) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
