#!/usr/bin/env python3
"""The results of scripts/bench-appswitch.sh runs, as a table or as a plot.

    appswitch-results.py table RESULTS
    appswitch-results.py plot RESULTS OUT.svg [TITLE]

RESULTS holds one line per set-up and key length, as bench-appswitch.sh writes them
(`RESULTS=FILE`): `LABEL KEY_BYTES {closed-loop mcload JSON} {open-loop mcload JSON}`.

- `table`: a Markdown row per line: closed-loop requests/s, p50 and p99; open-loop p50, p99,
  p99.9 and requests lost.
- `plot`: an SVG with one panel per key length and loop (closed, open); in each, one line per
  set-up through its p50, p95, p99 and p99.9 latency, on a logarithmic scale. Plain SVG, no
  plotting library.
"""

import json
import math
import sys

PERCENTILES = [("p50", "p50_us"), ("p95", "p95_us"), ("p99", "p99_us"), ("p99.9", "p999_us")]
COLOURS = {"floor": "#6b7280", "twemproxy": "#d97706", "appswitch": "#2563eb"}
NAMES = {"floor": "clients hash (floor)", "twemproxy": "twemproxy", "appswitch": "AppSwitch"}


def lines(path):
    """Each run of the file: (label, key bytes, closed-loop report, open-loop report)."""
    for line in open(path):
        if not line.strip():
            continue
        label, k, rest = line.split(" ", 2)
        a, b = rest.strip().split("} {")
        yield label, int(k), json.loads(a + "}"), json.loads("{" + b)


def load(path):
    runs = {}  # (loop, key bytes) -> {label: json}
    for label, k, closed, open_ in lines(path):
        runs.setdefault(("closed", k), {})[label] = closed
        runs.setdefault(("open", k), {})[label] = open_
    return runs


def table(results):
    for label, k, closed, open_ in lines(results):
        print(f"| {label} | {k} | {closed['requests_per_s']:.0f}, {closed['p50_us']:.0f} / "
              f"{closed['p99_us']:.0f} | {open_['p50_us']:.0f} / {open_['p99_us']:.0f} / "
              f"{open_['p999_us']:.0f}, {open_['lost']} |")


def plot(results, out, title="memcached request latency"):
    runs = load(results)
    panels = sorted(runs, key=lambda p: (p[0] != "closed", p[1]))
    values = [r[key] for p in panels for r in runs[p].values() for _, key in PERCENTILES]
    lo = 10 ** math.floor(math.log10(max(1.0, min(values))))
    hi = 10 ** math.ceil(math.log10(max(values)))
    pw, ph, margin_l, margin_t, gap = 260, 200, 60, 50, 40
    cols = len({p[1] for p in panels})
    rows = len({p[0] for p in panels})
    width = margin_l + cols * (pw + gap) + 150
    height = margin_t + rows * (ph + gap + 20) + 20
    svg = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'font-family="sans-serif" font-size="11">',
           f'<rect width="{width}" height="{height}" fill="white"/>',
           f'<text x="{margin_l}" y="22" font-size="15">{title}</text>']

    def y_of(v):
        return ph - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) * ph

    keys = sorted({p[1] for p in panels})
    loops = [lp for lp in ("closed", "open") if any(p[0] == lp for p in panels)]
    for (loop, k) in panels:
        col, row = keys.index(k), loops.index(loop)
        x0 = margin_l + col * (pw + gap)
        y0 = margin_t + row * (ph + gap + 20)
        svg.append(f'<g transform="translate({x0},{y0})">')
        svg.append(f'<rect width="{pw}" height="{ph}" fill="none" stroke="#999"/>')
        svg.append(f'<text x="0" y="-8">{loop} loop, {k}-byte keys</text>')
        decade = lo
        while decade <= hi:
            y = y_of(decade)
            svg.append(f'<line x1="0" x2="{pw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eee"/>')
            label = f"{decade / 1000:g} ms" if decade >= 1000 else f"{decade:g} us"
            svg.append(f'<text x="-6" y="{y + 4:.1f}" text-anchor="end">{label}</text>')
            decade *= 10
        xs = [pw * (i + 0.5) / len(PERCENTILES) for i in range(len(PERCENTILES))]
        for x, (name, _) in zip(xs, PERCENTILES):
            svg.append(f'<text x="{x:.1f}" y="{ph + 14}" text-anchor="middle">{name}</text>')
        for label, r in runs[(loop, k)].items():
            colour = COLOURS.get(label, "black")
            pts = [(x, y_of(max(r[key], lo))) for x, (_, key) in zip(xs, PERCENTILES)]
            path = " ".join(f"{x:.1f},{y:.1f}" for x, y in pts)
            svg.append(f'<polyline points="{path}" fill="none" stroke="{colour}" '
                       f'stroke-width="2"/>')
            for x, y in pts:
                svg.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="3" fill="{colour}"/>')
        svg.append("</g>")
    lx = margin_l + cols * (pw + gap)
    for i, label in enumerate(l for l in COLOURS if any(l in runs[p] for p in panels)):
        y = margin_t + 10 + i * 18
        svg.append(f'<line x1="{lx}" x2="{lx + 20}" y1="{y}" y2="{y}" '
                   f'stroke="{COLOURS[label]}" stroke-width="2"/>')
        svg.append(f'<text x="{lx + 26}" y="{y + 4}">{NAMES[label]}</text>')
    svg.append("</svg>")
    with open(out, "w") as f:
        f.write("\n".join(svg) + "\n")


if __name__ == "__main__":
    what, args = sys.argv[1], sys.argv[2:]
    {"table": table, "plot": plot}[what](*args)
