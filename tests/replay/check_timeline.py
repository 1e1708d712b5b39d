#!/usr/bin/env python3
"""Checks a `grape export --chrome` timeline against the rules of Chrome's
trace-event format that a viewer (Catapult's, Perfetto's) relies on, and
against what the timeline promises:

- the file is one JSON object with a traceEvents list and displayTimeUnit "ns";
- every process has one process_name, every track (pid, tid) that holds an
  event has one thread_name;
- complete slices ("X") on a track come in order and never overlap, compared
  in doubles as a viewer adds ts and dur, and none nests in the previous one
  at the display unit's precision (Catapult's bounds check); but on a
  thread's NVTX ranges row slices nest as pushed: each lies inside every
  open one or after it (start/end ranges, which need not nest, are not
  checked); instant events ("i", NVTX marks) sit on a named track;
- one track per stream: no two tracks of a process carry one stream's name,
  and every slice on a stream track is that stream's work;
- flow arrows: every id has exactly one start ("s") and one end ("f", bound to
  its enclosing slice with "bp":"e"), the start lies inside a call on a host
  row, the end inside device work on a stream row, and the work does not start
  before the call.

usage: check_timeline.py TIMELINE.json   (prints a summary; exit 1 on a broken rule)"""
import collections
import json
import sys


class Broken(Exception):
    pass


def catapult_nests(parent, child, unit):
    """Catapult's TimedEvent.bounds at the display unit's precision."""
    scale = 1000 if unit == "ms" else 1000000
    r = lambda us: round(us / 1000 * scale)
    return not r(child["ts"]) < r(parent["ts"]) and \
        not r(parent["ts"] + parent["dur"]) < r(child["ts"] + child["dur"])


def inside(ts, sl):
    """Strictly inside: at a slice's edge, where the previous one on its track
    may end, a viewer could bind a flow to either."""
    return sl["ts"] < ts < sl["ts"] + sl["dur"]


def enclosing(slices, ts):
    """The slice of a track (sorted, disjoint) that holds ts, or None."""
    lo, hi = 0, len(slices)
    while lo < hi:
        mid = (lo + hi) // 2
        if slices[mid]["ts"] <= ts:
            lo = mid + 1
        else:
            hi = mid
    for s in slices[max(0, lo - 2):lo]:
        if inside(ts, s):
            return s
    return None


def check_nested(key, name, sl):
    """Slices of an NVTX ranges row: in start order, each inside every open
    one (Catapult's bounds at ns precision) or after it."""
    open_ = []
    for cur in sl:
        while open_ and cur["ts"] >= open_[-1]["ts"] + open_[-1]["dur"]:
            open_.pop()
        if open_:
            top = open_[-1]
            if cur["ts"] < top["ts"] or cur["ts"] + cur["dur"] > top["ts"] + top["dur"] + 1e-9:
                raise Broken(f"track {key} ({name}): range {cur} overlaps {top} without nesting in it")
        open_.append(cur)


def check(doc):
    """Returns a summary dict; raises Broken with the first broken rule."""
    if not isinstance(doc, dict) or not isinstance(doc.get("traceEvents"), list):
        raise Broken("not a JSON object with a traceEvents list")
    unit = doc.get("displayTimeUnit", "ms")
    if unit != "ns":
        raise Broken(f"displayTimeUnit {unit!r}: sub-microsecond slices nest at that precision")
    ev = doc["traceEvents"]
    procs = collections.Counter()
    names = {}
    tracks = collections.defaultdict(list)
    flows = collections.defaultdict(list)
    instants = []
    for e in ev:
        ph = e.get("ph")
        if ph not in ("X", "M", "s", "f", "i") or not isinstance(e.get("pid"), int) or \
                not isinstance(e.get("tid"), int):
            raise Broken(f"event of an unexpected phase or without integer pid/tid: {e}")
        if ph == "M" and e["name"] == "process_name":
            procs[e["pid"]] += 1
        elif ph == "M" and e["name"] == "thread_name":
            key = (e["pid"], e["tid"])
            if key in names:
                raise Broken(f"track {key} named twice")
            names[key] = e["args"]["name"]
        elif ph == "X":
            if not (e["ts"] >= 0 and e["dur"] >= 0):
                raise Broken(f"slice with a negative start or duration: {e}")
            tracks[(e["pid"], e["tid"])].append(e)
        elif ph in ("s", "f"):
            flows[e["id"]].append(e)
        elif ph == "i":
            instants.append(e)
    for pid, n in procs.items():
        if n != 1:
            raise Broken(f"process {pid} named {n} times")
    used = set(tracks) | {(e["pid"], e["tid"]) for f in flows.values() for e in f} | \
        {(e["pid"], e["tid"]) for e in instants}
    for key in used:
        if key[0] not in procs:
            raise Broken(f"process {key[0]} has no process_name")
        if key not in names:
            raise Broken(f"track {key} has no thread_name")
    # Slices in order, disjoint, none nested at display precision.
    nvtx_tracks = {k for k, n in names.items() if ": NVTX " in n}
    for key, sl in tracks.items():
        if key in nvtx_tracks:
            if "start/end" not in names[key]:
                check_nested(key, names[key], sl)
            continue
        for prev, cur in zip(sl, sl[1:]):
            if cur["ts"] < prev["ts"] + prev["dur"] or catapult_nests(prev, cur, unit):
                raise Broken(f"track {key} ({names.get(key)}): slice {cur} starts before "
                             f"{prev} ends, or nests in it")
    # One track per stream, holding that stream's work only.
    streams = {}
    for key, name in names.items():
        if not name.startswith("stream"):
            continue
        if (key[0], name) in streams:
            raise Broken(f"two tracks for {name} in process {key[0]}")
        streams[(key[0], name)] = key
        for s in tracks.get(key, []):
            want = "0x1" if name == "stream (legacy default)" else name.split()[-1]
            if s["args"].get("stream") != want:
                raise Broken(f"{name} holds work of stream {s['args'].get('stream')}: {s}")
    stream_tracks = set(streams.values())
    # Flows: one start on a host call, one end on device work, in causal order.
    for fid, pair in flows.items():
        phases = sorted(e["ph"] for e in pair)
        if phases != ["f", "s"]:
            raise Broken(f"flow {fid}: phases {phases}, want one 's' and one 'f'")
        s = next(e for e in pair if e["ph"] == "s")
        f = next(e for e in pair if e["ph"] == "f")
        if f.get("bp") != "e":
            raise Broken(f"flow {fid}: its end does not bind to the enclosing slice (bp 'e')")
        src, dst = (s["pid"], s["tid"]), (f["pid"], f["tid"])
        if src in stream_tracks or dst not in stream_tracks:
            raise Broken(f"flow {fid} goes from {names.get(src)} to {names.get(dst)}: want a "
                         "host row to a stream")
        call, work = enclosing(tracks.get(src, []), s["ts"]), enclosing(tracks.get(dst, []), f["ts"])
        if call is None or work is None:
            raise Broken(f"flow {fid}: an end lies in no slice, or on a slice's edge ({s}, {f})")
        if work["ts"] < call["ts"]:
            raise Broken(f"flow {fid}: device work {work} starts before its call {call}")
    host = sum(len(sl) for k, sl in tracks.items() if k not in stream_tracks and k not in nvtx_tracks)
    return {"processes": len(procs), "streams": len(streams), "flows": len(flows),
            "host_slices": host, "instants": instants,
            "nvtx_slices": sum(len(tracks.get(k, [])) for k in nvtx_tracks),
            "device_slices": sum(len(tracks.get(k, [])) for k in stream_tracks),
            "tracks": tracks, "names": names}


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    try:
        got = check(json.load(open(sys.argv[1])))
    except (Broken, ValueError, KeyError, TypeError) as e:
        sys.exit(f"{sys.argv[1]}: {e}")
    print(f"{sys.argv[1]}: {got['processes']} processes, {got['streams']} streams, "
          f"{got['host_slices']} calls and submissions, {got['device_slices']} device slices, "
          f"{got['flows']} arrows: every rule holds")


if __name__ == "__main__":
    main()
