"""Summarises a log of scripts/device-cli-timings.sh as a markdown table: per boundary and
backend, the median of the rounds of each --timings phase, and the ratio of the run's total
(read + label + summary + write) to the bare numpy read + write of the same round.

    python3 scripts/cli-table.py cli-timings.log
"""
import re
import statistics
import sys
from collections import defaultdict


def table(path):
    """Prints the markdown table of the log at `path`."""
    rows = defaultdict(lambda: defaultdict(list))
    bare = defaultdict(list)  # (round, boundary) -> total
    order = []
    current = None
    cuda_seen = defaultdict(int)
    pending_bare = None
    device, outputs = None, None
    for line in open(path):
        if line.startswith("GPU 0:"):
            device = line.split("(UUID")[0][len("GPU 0: "):].strip()
        if line.startswith("outputs equal"):
            outputs = line.strip()
        m = re.match(r"== round (\d+): bare numpy", line)
        if m:
            pending_bare = int(m.group(1))
            continue
        m = re.match(r"bare read ([\d.]+) write ([\d.]+) total ([\d.]+)", line)
        if m and pending_bare is not None:
            bare_line = (pending_bare, float(m.group(1)), float(m.group(2)), float(m.group(3)))
            continue
        m = re.match(r"== round (\d+): label \S+ --boundary (\w+) --backend (\w+)(.*)", line)
        if m:
            rnd, boundary, backend, rest = int(m.group(1)), m.group(2), m.group(3), m.group(4)
            if pending_bare is not None:
                bare[(rnd, boundary)] = bare_line
                pending_bare = None
            if "no output" in rest:
                backend += " (no output)"
            elif backend == "cuda":
                cuda_seen[(rnd, boundary)] += 1
                if rnd == 1 and cuda_seen[(rnd, boundary)] == 1 and boundary == "open":
                    backend += " (cold cache)"
            current = (boundary, backend, rnd)
            if (boundary, backend) not in order:
                order.append((boundary, backend))
            continue
        m = re.match(r"timings \(ms\): (.*)", line)
        if m and current:
            laps = dict((k, float(v)) for k, v in re.findall(r"(\w+) ([\d.]+)", m.group(1)))
            boundary, backend, rnd = current
            laps["round"] = rnd
            rows[(boundary, backend)]["runs"].append(laps)

    phases = ["read", "open", "label", "summary", "write", "total"]
    print(f"Device: {device}; milliseconds, medians over the rounds; the ratio is each run's total "
          "over the bare numpy read + write of its round (median, range).")
    print()
    print("| boundary | backend | runs | " + " | ".join(phases) + " | bare read + write | total / bare |")
    print("|---|---|---:|" + "---:|" * len(phases) + "---:|---:|")
    for boundary in ["open", "periodic"]:
        brs = [b for (r, bd), b in bare.items() if bd == boundary]
        if brs:
            med = statistics.median(b[3] for b in brs)
            print(f"| {boundary} | bare numpy | {len(brs)} | {statistics.median(b[1] for b in brs):.0f} | | | | "
                  f"{statistics.median(b[2] for b in brs):.0f} | {med:.0f} | {med:.0f} | 1.00 |")
        for key in order:
            if key[0] != boundary:
                continue
            runs = rows[key]["runs"]
            meds = [statistics.median(r.get(p, 0.0) for r in runs) for p in phases]
            ratios = [r["total"] / bare[(r["round"], boundary)][3] for r in runs if (r["round"], boundary) in bare]
            ratio = f"{statistics.median(ratios):.2f} ({min(ratios):.2f}–{max(ratios):.2f})" if ratios else ""
            b = statistics.median(bare[(r["round"], boundary)][3] for r in runs if (r["round"], boundary) in bare) if ratios else 0
            print(f"| {boundary} | {key[1]} | {len(runs)} | " + " | ".join(f"{v:.0f}" for v in meds) + f" | {b:.0f} | {ratio} |")
    if outputs:
        print()
        print(f"Check in the same run: {outputs}.")


if __name__ == "__main__":
    table(sys.argv[1])
