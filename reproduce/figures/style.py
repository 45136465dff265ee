"""One look for every figure: fonts, sizes, the colours of own rungs, vendor
libraries and the CPU, rate axes with units, and byte-stable PNGs."""
import io
import math

# Own GPU rungs, the vendor library (cuBLAS/cuBLASLt, OpenBLAS), the CPU rungs.
OWN = "#3566a8"
VENDOR = "#c8443c"
CPU = "#8c8c8c"
CEILING = "#555555"
NOTE = "#666666"
DPI = 110

RC = {
    "font.family": "DejaVu Sans",  # ships with matplotlib, so every machine draws the same glyphs
    "font.size": 9,
    "axes.titlesize": 11,
    "axes.titleweight": "bold",
    "axes.labelsize": 9,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "legend.fontsize": 8,
    "legend.frameon": False,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": False,
    "svg.hashsalt": "rigel",
    "path.simplify": False,
}


def setup(matplotlib):
    matplotlib.rcParams.update(RC)


def save(fig, path, write_if_changed):
    """A PNG without a software or date stamp, rewritten only when its bytes change."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI, metadata={"Software": None})
    write_if_changed(path, buf.getvalue())


def rate_text(gflops, ops=False):
    """A rate in Gflop/s shown with the prefix that keeps it short."""
    unit = "op/s" if ops else "flop/s"
    for scale, prefix in ((1e6, "P"), (1e3, "T"), (1.0, "G")):
        if gflops >= scale:
            v = gflops / scale
            return f"{v:.3g} {prefix}{unit}" if v < 100 else f"{v:.0f} {prefix}{unit}"
    return f"{gflops * 1e3:.3g} M{unit}"


def rate_axis(axis, label):
    """A log axis in Gflop/s whose ticks read 1 Gflop/s, 10 Gflop/s, ..., 1 Pflop/s."""
    from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter
    lo, hi = axis.get_view_interval()
    decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
    axis.set_major_locator(FixedLocator([10.0 ** d for d in decades]))
    axis.set_major_formatter(FuncFormatter(lambda v, _: rate_text(v).replace(".0 ", " ")))
    axis.set_minor_formatter(NullFormatter())
    axis.set_label_text(label)
