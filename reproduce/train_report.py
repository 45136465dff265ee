"""rigel's GPT-2 training runs, from their committed logs: the README's and
docs/training.md's table of runs and the loss curves (docs/figures/loss_curves.png).

Reads every results/h200/*_train_<model>_<backend>.csv that `rigel train run
--out` writes (one row per step). A run that crossed several device calls
(stopped with --stop-after or --max-seconds and resumed) left one file per
call: the files of one model and backend are joined by step, a later run's
row replacing an earlier one of the same step.
"""
import math
import os
import re
from dataclasses import dataclass, field

import findings

LOG_NAME = re.compile(r"_train_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9]+)\.csv$")
COLUMNS = ("run_id", "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s")


@dataclass
class Run:
    model: str
    backend: str
    steps: dict = field(default_factory=dict)  # step -> {column: float}
    files: list = field(default_factory=list)

    @property
    def label(self):
        return f"{self.model} ({self.backend})"


def load(folder):
    """{(model, backend): Run}, each joined from its files in run order."""
    files = []
    if os.path.isdir(folder):
        for entry in sorted(os.scandir(folder), key=lambda e: e.name):
            m = LOG_NAME.search(entry.name)
            if not entry.is_file() or not m:
                continue
            rf = findings.read_result_file(entry.path)
            for col in COLUMNS:
                if not rf.table.has(col):
                    raise findings.FindingsError(f"{findings.shown_path(entry.path)}: not a training log "
                                                 f"(no column '{col}')")
            files.append((rf, m.group("model"), m.group("backend")))
    runs = {}
    for rf, model, backend in sorted(files, key=lambda x: findings.run_age(x[0])):
        run = runs.setdefault((model, backend), Run(model, backend))
        run.files.append(rf)
        t = rf.table
        for i in range(len(t.rows)):
            step = findings.parse_int(t.cell(i, "step"))
            run.steps[step] = {c: findings.typed(t, i, c) for c in COLUMNS[2:]}
    return runs


def runs_block(runs):
    if not runs:
        return ("No committed training log yet (`results/h200/*_train_<model>_<backend>.csv`, written by "
                "`rigel train run --out`).")
    lines = ["| model | backend | steps | last loss | last validation loss | median tokens/s | logs |",
             "|---|---|---|---|---|---|---|"]
    for run in sorted(runs.values(), key=lambda r: (r.model, r.backend)):
        steps = sorted(run.steps)
        last = run.steps[steps[-1]]
        vals = [run.steps[s]["val_loss"] for s in steps if not math.isnan(run.steps[s]["val_loss"])]
        rates = sorted(run.steps[s]["tokens_per_s"] for s in steps if not math.isnan(run.steps[s]["tokens_per_s"]))
        median = rates[len(rates) // 2] if rates else math.nan
        logs = ", ".join(findings.md_cell(f.name) for f in run.files)
        lines.append(f"| {run.model} | {run.backend} | {steps[-1]} | {last['loss']:.4f} | "
                     f"{f'{vals[-1]:.4f}' if vals else '-'} | {'-' if math.isnan(median) else f'{median:,.0f}'} | "
                     f"{logs} |")
    return "\n".join(lines)


def draw(plt, runs, path, write_if_changed, style):
    """The training loss of each run against its step, with its validation
    losses as points; nothing drawn (False) without a committed log."""
    if not runs:
        return False
    fig, ax = plt.subplots(figsize=(9, 5))
    colors = [style.OWN, style.VENDOR, style.CEILING, style.CPU]
    for i, run in enumerate(sorted(runs.values(), key=lambda r: (r.model, r.backend))):
        steps = sorted(run.steps)
        color = colors[i % len(colors)]
        ax.plot(steps, [run.steps[s]["loss"] for s in steps], color=color, linewidth=1.2, label=f"{run.label}: train")
        val = [(s, run.steps[s]["val_loss"]) for s in steps if not math.isnan(run.steps[s]["val_loss"])]
        if val:
            ax.plot([s for s, _ in val], [v for _, v in val], color=color, marker="o", linestyle="--",
                    markersize=4, linewidth=0.8, label=f"{run.label}: validation")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats per token)")
    ax.grid(color="#eeeeee", zorder=0)
    ax.legend(loc="upper right")
    ax.set_title("GPT-2 training on rigel: loss per step")
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True
