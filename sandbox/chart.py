# The chart helper a program in the sandbox imports as `chart` (see
# runner.go: the runner serves it to `import chart` when nothing else of
# that name is on the path). It draws a chart twice: as data, a JSON spec
# in SPEC_DIR that the host reads, checks and may show natively (a Slack
# chart people can hover), and as a PNG through matplotlib, which the
# host shows where the native chart cannot carry the data.
#
#   import chart
#   chart.line(["W1", "W2", "W3"], {"sign-ups": [120, 135, 160]}, title="Weekly sign-ups")
#   chart.bar(regions, {"2024": a, "2025": b}, title="Revenue by region", y_label="EUR")
#   chart.area(months, {"users": u}, title="Active users")
#   chart.pie(["iOS", "Android", "Web"], [40, 35, 25], title="Sign-ups by platform")
#
# Each returns the PNG's file name. The host never trusts the spec: it
# checks its size, its schema and its text again.

import json
import math
import os
import re

SPEC_DIR = ".sandpiper-charts"
# Bounds of what a spec holds; a chart past them is drawn as a PNG only
# (the spec says why).
MAX_SPEC_BYTES = 64 << 10
MAX_POINTS = 1000
MAX_SERIES = 50
TEXT_CHARS = 200

_names = set()


def line(x, series, title="", x_label="", y_label="", name=None):
    """A line chart: x the categories, series {name: values} (or one list)."""
    return _chart("line", x, series, title, x_label, y_label, name)


def bar(x, series, title="", x_label="", y_label="", name=None):
    """A bar chart, bars grouped by category when there are several series."""
    return _chart("bar", x, series, title, x_label, y_label, name)


def area(x, series, title="", x_label="", y_label="", name=None):
    """An area chart: each series filled, the first at the back."""
    return _chart("area", x, series, title, x_label, y_label, name)


def pie(labels, values, title="", name=None):
    """A pie chart of positive values."""
    return _chart("pie", labels, {"value": values}, title, "", "", name)


def _label(v):
    if hasattr(v, "strftime"):
        try:
            if getattr(v, "hour", 0) == 0 and getattr(v, "minute", 0) == 0 and getattr(v, "second", 0) == 0:
                return v.strftime("%Y-%m-%d")
        except Exception:
            pass
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    return _text(v)


def _text(v):
    s = " ".join(str(v).split())
    return s[:TEXT_CHARS]


def _number(v, where):
    try:
        f = float(v)
    except (TypeError, ValueError):
        raise ValueError("chart: %s is %r, not a number" % (where, v)) from None
    if not math.isfinite(f):
        raise ValueError("chart: %s is %r; every value must be a finite number" % (where, v))
    return f


def _slug(s):
    s = re.sub(r"[^A-Za-z0-9]+", "-", s).strip("-").lower()[:60]
    return s or "chart"


def _chart(kind, x, series, title, x_label, y_label, name):
    categories = [_label(v) for v in list(x)]
    if not categories:
        raise ValueError("chart: no categories to plot")
    if not isinstance(series, dict):
        series = {_text(y_label) or "value": series}
    if not series:
        raise ValueError("chart: no series to plot")
    data = []
    for k, values in series.items():
        values = list(values)
        if len(values) != len(categories):
            raise ValueError("chart: series %r has %d values for %d categories" % (k, len(values), len(categories)))
        data.append({"name": _text(k), "values": [_number(v, "a value of %r" % k) for v in values]})
    if kind == "pie" and any(v <= 0 for v in data[0]["values"]):
        raise ValueError("chart: a pie's values must all be greater than 0")
    title = _text(title)
    stem = _slug(name or title or kind)
    png = stem + ".png"
    n = 2
    while png in _names:
        png = "%s-%d.png" % (stem, n)
        n += 1
    _names.add(png)
    image = _draw(kind, categories, data, title, _text(x_label), _text(y_label), png)
    spec = {"version": 1, "type": kind, "title": title, "x_label": _text(x_label), "y_label": _text(y_label),
            "categories": categories, "series": data, "image": image}
    points = len(categories) * len(data)
    out = json.dumps(spec, ensure_ascii=False, allow_nan=False)
    if points > MAX_POINTS or len(data) > MAX_SERIES or len(out.encode("utf-8")) > MAX_SPEC_BYTES:
        spec = {"version": 1, "type": kind, "title": title, "image": image,
                "too_large": "%d series of %d points" % (len(data), len(categories))}
        out = json.dumps(spec, ensure_ascii=False)
    os.makedirs(SPEC_DIR, exist_ok=True)
    with open(os.path.join(SPEC_DIR, _stem(png) + ".json"), "w", encoding="utf-8") as f:
        f.write(out)
    return png


def _stem(png):
    return png[: -len(".png")]


def _draw(kind, categories, data, title, x_label, y_label, png):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        import sys

        print("chart: no PNG (%s: %s)" % (type(e).__name__, e), file=sys.stderr)
        return ""
    fig, ax = plt.subplots(figsize=(8, 4.5))
    try:
        xs = list(range(len(categories)))
        if kind == "pie":
            ax.pie(data[0]["values"], labels=categories, autopct="%1.0f%%")
            ax.axis("equal")
        elif kind == "bar":
            w = 0.8 / len(data)
            for i, s in enumerate(data):
                ax.bar([x - 0.4 + w * (i + 0.5) for x in xs], s["values"], w, label=s["name"])
        else:
            for s in data:
                if kind == "area":
                    ax.fill_between(xs, s["values"], alpha=0.4, label=s["name"])
                ax.plot(xs, s["values"], label=s["name"])
        if kind != "pie":
            step = max(1, len(xs) // 12)
            ax.set_xticks(xs[::step], categories[::step], rotation=30 if step > 1 or len(xs) > 6 else 0, ha="right" if len(xs) > 6 else "center")
            ax.set_xlabel(x_label)
            ax.set_ylabel(y_label)
            if len(data) > 1:
                ax.legend()
        if title:
            ax.set_title(title)
        fig.savefig(png, dpi=150, bbox_inches="tight", metadata={"Title": title or kind + " chart"})
    finally:
        plt.close(fig)
    return png
