"""rigel's GPT-2 training runs, from their committed logs: the README's and
docs/training.md's table of runs, rigel set beside PyTorch, and the loss
curves (docs/figures/loss_curves.png).

Reads every results/h200/*_train_<model>_<backend>.csv that `rigel train run
--out` writes (one row per step), and those scripts/gpt2_torch.py writes in
the same format (backend torch-eager or torch-compile). A run that crossed
several device calls (stopped with --stop-after or --max-seconds and resumed)
left one file per call: the files of one model and backend are joined by step,
a later run's row replacing an earlier one of the same step.

Every tokens/s figure is the median over steps 2..N (median_rate: step 1
holds the warm-up and torch.compile's compilation). Speed ratios between runs
are ratios of two such medians, timed one after the other, not paired
samples, and say so; they are printed to three decimals, and judged by
verdicts.meets_ratio on the same value.
"""
import datetime
import math
import os
import re
import statistics
from dataclasses import dataclass, field

import findings
from verdicts import meets_ratio

# A log whose name was taken in its folder (a second call of one commit on one day) is written as
# <name>_<run id>.csv (claim_stem, src/harness/report_io.cpp): the same log.
LOG_NAME = re.compile(r"_train_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9]+(?:-[a-z0-9]+)*)"
                      r"(?:_\d{8}T\d{6}Z-[0-9a-f]+(?:_\d+)?)?\.csv$")
RIGEL_BACKEND = "cuda"  # the backend PyTorch's runs are set beside
TORCH_PREFIX = "torch-"  # scripts/gpt2_torch.py's backends: torch-eager, torch-compile
VENDOR_BACKEND = "cuda-vendor"  # rigel's loop on cuBLASLt and cuDNN, for comparison (rigel train run --backend)
COLUMNS = ("run_id", "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "elapsed_s")
OPTIONAL = ("peak_memory_gb",)  # NaN where a log lacks it (the host reference's)


@dataclass
class Run:
    model: str
    backend: str
    steps: dict = field(default_factory=dict)  # step -> {column: float}
    files: list = field(default_factory=list)
    history: list = field(default_factory=list)  # every file of this model and backend, older runs' too

    @property
    def label(self):
        return f"{self.model} ({self.backend})"


def named_files(folder, pattern, columns, what):
    """[(file, model, backend)] of the files in `folder` whose names `pattern`
    matches (its groups name the model and backend), each read with its
    sidecar and refused as not `what` when it lacks one of `columns`."""
    return [(rf, m.group("model"), m.group("backend"))
            for rf, m in findings.matching_files(folder, pattern, columns, what)]


def load(folder):
    """{(model, backend): Run}: the newest run of each, joined from its files
    in run order. A file whose first step is 1 starts a new run (a fresh
    `rigel train run`); one that starts later continues the run before it (a
    resume)."""
    files = named_files(folder, LOG_NAME, COLUMNS, "a training log")
    runs = {}
    for rf, model, backend in sorted(files, key=lambda x: findings.run_age(x[0])):
        steps = file_steps(rf)
        old = runs.get((model, backend))
        if old is None or (steps and min(steps) == 1):
            runs[(model, backend)] = Run(model, backend, history=old.history if old else [])
        run = runs[(model, backend)]
        run.files.append(rf)
        run.history.append(rf)
        run.steps.update(steps)
    return runs


def file_steps(rf):
    """{step: {column: float}} of one log file."""
    t = rf.table
    return {findings.parse_int(t.cell(i, "step")): {c: findings.typed(t, i, c) for c in COLUMNS[2:] + OPTIONAL}
            for i in range(len(t.rows))}


def runs_block(runs):
    if not runs:
        return ("No committed training log yet (`results/h200/*_train_<model>_<backend>.csv`, written by "
                "`rigel train run --out`).")
    lines = ["| model | backend | steps | last loss | last validation loss | median tokens/s (steps 2..N) | logs |",
             "|---|---|---|---|---|---|---|"]
    for run in sorted(runs.values(), key=lambda r: (r.model, r.backend)):
        steps = sorted(run.steps)
        last = run.steps[steps[-1]]
        vals = [run.steps[s]["val_loss"] for s in steps if not math.isnan(run.steps[s]["val_loss"])]
        median = median_rate(run)
        logs = ", ".join(findings.md_cell(f.name) for f in run.files)
        lines.append(f"| {run.model} | {run.backend} | {steps[-1]} | {last['loss']:.4f} | "
                     f"{f'{vals[-1]:.4f}' if vals else '-'} | {'-' if math.isnan(median) else f'{median:,.0f}'} | "
                     f"{logs} |")
    return "\n".join(lines)


@dataclass
class Comparison:
    """rigel's cuda run and PyTorch's runs of one model from one call of
    `scripts/h200_visit.sh train_compare` (rigel's run first, the others
    back to back after it, all of one commit)."""
    model: str
    commit: str
    runs: dict = field(default_factory=dict)  # backend -> Run, joined from this call's files only
    last_end: object = None  # when the call's latest file ended (datetime), None if unknown


# The sidecars name no call, so a call is told by its files' run ids (each starts with the UTC time
# its run began): within a call each run starts at most this long after the one before it ended (the
# profile run and each process's start-up lie between).
CALL_GAP_S = 600


def run_start(rf):
    """When a log's run began, from its run id (20261202T100000Z-...); None if unreadable."""
    rid = rf.side("run_id") or rf.table.cell(0, "run_id")
    try:
        return datetime.datetime.strptime(rid[:16], "%Y%m%dT%H%M%SZ")
    except ValueError:
        return None


def run_end(rf, steps):
    """When a log's run ended: its start plus its last step's elapsed_s."""
    start = run_start(rf)
    elapsed = [v["elapsed_s"] for v in steps.values() if not math.isnan(v["elapsed_s"])]
    return start + datetime.timedelta(seconds=max(elapsed, default=0.0)) if start else None


def comparisons(runs):
    """The Comparisons the runs hold, one per call: a fresh rigel cuda run
    (from step 1) opens a call; a later file of the same model and commit
    joins it when it began within CALL_GAP_S of the call's latest file's end
    and does not start its backend afresh a second time (a resumed file, from
    a later step, continues its backend's run). Kept: calls with a PyTorch or
    cuda-vendor run beside rigel's. A file whose sidecar names no commit (or
    "unknown") cannot be placed in a call and is left out."""
    files = []  # (run age, model, backend, file)
    for run in runs.values():
        if run.backend not in (RIGEL_BACKEND, VENDOR_BACKEND) and not run.backend.startswith(TORCH_PREFIX):
            continue
        files += [(findings.run_age(rf), run.model, run.backend, rf) for rf in run.history]
    calls, current = [], {}  # current: model -> the call files may still join
    for _, model, backend, rf in sorted(files, key=lambda x: x[0]):  # in run order, so a later file's step wins
        commit = rf.side("git_commit")
        if not commit or commit == "unknown":
            continue
        steps = file_steps(rf)
        fresh = bool(steps) and min(steps) == 1
        c = current.get(model)
        start = run_start(rf)
        # Without a readable time on either side only the commit and the fresh-run rule decide.
        near = (c is not None and (c.last_end is None or start is None
                                   or (start - c.last_end).total_seconds() <= CALL_GAP_S))
        if backend == RIGEL_BACKEND and fresh:
            c = current[model] = Comparison(model, commit)
            calls.append(c)
        elif c is None or c.commit != commit or not near or (fresh and backend in c.runs):
            current.pop(model, None)  # a run of no call with rigel's: it closes the one before
            continue
        part = c.runs.setdefault(backend, Run(model, backend))
        part.files.append(rf)
        part.steps.update(steps)
        end = run_end(rf, steps)
        if end is not None:
            c.last_end = max(c.last_end, end) if c.last_end is not None else end
    found = [c for c in calls
             if RIGEL_BACKEND in c.runs and any(b.startswith(TORCH_PREFIX) or b == VENDOR_BACKEND for b in c.runs)]
    return sorted(found, key=lambda c: findings.run_age(c.runs[RIGEL_BACKEND].files[0]))  # the oldest first


def median_rate(run):
    """The median tokens/s over steps 2..N (step 1 holds the warm-up, and
    torch.compile's compilation); NaN without such a step."""
    return median_of_steps(run.steps)


def median_of_steps(steps):
    """median_rate of {step: {column: value}}: every tokens/s figure in the
    report is this one."""
    rates = [v["tokens_per_s"] for s, v in steps.items() if s >= 2 and not math.isnan(v["tokens_per_s"])]
    return statistics.median(rates) if rates else math.nan


def speed_ratio_text(ratio):
    """A speed ratio of two medians: three decimals, so that it never reads
    as on the other side of a target than its verdict puts it."""
    return "-" if math.isnan(ratio) else f"{ratio:.3f}x"


def largest_loss_gap(run, rigel):
    """(largest |loss - rigel's loss| over the steps both logged, its step);
    (NaN, None) without a common step."""
    best = (math.nan, None)
    for s in sorted(set(run.steps) & set(rigel.steps)):
        d = abs(run.steps[s]["loss"] - rigel.steps[s]["loss"])
        if not math.isnan(d) and (best[1] is None or d > best[0]):
            best = (d, s)
    return best


def largest_peak(run):
    """(the run's largest peak_memory_gb or NaN, whether it is device-wide):
    the device's memory in use at the end of a step (rigel's log, and
    gpt2_torch.py's whose sidecar says so); older PyTorch logs held the
    caching allocator's peak instead."""
    peaks = [v["peak_memory_gb"] for v in run.steps.values() if not math.isnan(v["peak_memory_gb"])]
    device_wide = run.backend == RIGEL_BACKEND or all(rf.side("peak_memory") for rf in run.files)
    return (max(peaks) if peaks else math.nan), device_wide


def peak_text(run):
    """The run's largest peak, the allocator's marked as such."""
    peak, device_wide = largest_peak(run)
    if math.isnan(peak):
        return "-"
    return f"{peak:.2f}" + ("" if device_wide else " (allocator's peak)")


def last_val_loss(run):
    """The run's last validation loss, NaN without one."""
    vals = [run.steps[s]["val_loss"] for s in sorted(run.steps) if not math.isnan(run.steps[s]["val_loss"])]
    return vals[-1] if vals else math.nan


def compare_block(runs):
    """The train-compare block: per Comparison, a table of its backends (rigel's
    first) by speed, rigel's speed against each, and how far the losses part."""
    found = comparisons(runs)
    if not found:
        return ("No committed PyTorch training log from the same call as a rigel cuda run yet "
                "(`results/h200/*_train_<model>_torch-eager.csv` and `_torch-compile.csv`, written by "
                "`scripts/gpt2_torch.py` in `scripts/h200_visit.sh train_compare`).")
    out = ["rigel's cuda backend and PyTorch ran back to back in one call on the same GPU, from the same step-0 "
           "weights on the same batches; tokens/s is the median over steps 2..N (step 1 holds the warm-up and "
           "torch.compile's compilation)."]
    for c in found:
        rigel = c.runs[RIGEL_BACKEND]
        rigel_rate = median_rate(rigel)
        devices = sorted({rf.table.cell(0, "device") for r in c.runs.values() for rf in r.files} - {""})
        out += ["", f"{findings.md_cell(c.model)}, commit {findings.md_cell(c.commit[:7])}"
                + (f", {findings.md_cell(', '.join(devices))}" if devices else "") + ":", "",
                "| backend | steps | median tokens/s (steps 2..N) | rigel / this backend (ratio of medians, unpaired) | "
                "final loss | "
                "largest loss difference to rigel | last validation loss | peak memory (GB) | log |",
                "|---|---|---|---|---|---|---|---|---|"]
        for backend in [RIGEL_BACKEND] + sorted(b for b in c.runs if b != RIGEL_BACKEND):
            run = c.runs[backend]
            steps = sorted(run.steps)
            rate = median_rate(run)
            ratio = rigel_rate / rate if rate > 0 and not math.isnan(rigel_rate) else math.nan
            if backend == RIGEL_BACKEND:
                gap = "-"
            else:
                d, at = largest_loss_gap(run, rigel)
                gap = "-" if at is None else f"{d:.4f} (step {at})"
            final = run.steps[steps[-1]]["loss"]
            val = last_val_loss(run)
            out.append(f"| {findings.md_cell(backend)} | {steps[-1]} | "
                       f"{'-' if math.isnan(rate) else f'{rate:,.0f}'} | "
                       f"{speed_ratio_text(ratio)} | "
                       f"{'-' if math.isnan(final) else f'{final:.4f}'} | {gap} | "
                       f"{'-' if math.isnan(val) else f'{val:.4f}'} | {peak_text(run)} | "
                       f"{', '.join(findings.md_cell(f.name) for f in run.files)} |")
    return "\n".join(out)


# The training issue's targets on one call (same weights, batches and GPU): rigel's tokens/s against each
# PyTorch mode, the last validation loss within 2 % of PyTorch's, and peak memory no more than PyTorch's.
SPEED_TARGETS = (("torch-compile", 1.10), ("torch-eager", 1.40))
VAL_LOSS_TOLERANCE = 0.02


def peak_gb(run):
    """The run's largest device-wide peak memory, NaN where the log holds none
    or only the caching allocator's peak (not comparable with rigel's)."""
    peak, device_wide = largest_peak(run)
    return peak if device_wide else math.nan


def targets(runs):
    """(the comparison judged, [(target, measured, met)]) on the newest comparison that holds rigel and both
    PyTorch modes; (None, []) where there is none."""
    found = [c for c in comparisons(runs) if all(b in c.runs for b, _ in SPEED_TARGETS)]
    if not found:
        return None, []
    c = found[-1]
    rigel = c.runs[RIGEL_BACKEND]
    rigel_rate = median_rate(rigel)
    out = []
    for backend, need in SPEED_TARGETS:
        rate = median_rate(c.runs[backend])
        ratio = rigel_rate / rate if rate > 0 and not math.isnan(rigel_rate) else math.nan
        out.append((f"tokens/s >= {need:.2f}x {backend}",
                    "-" if math.isnan(ratio) else f"{speed_ratio_text(ratio)} ({rigel_rate:,.0f} / {rate:,.0f}; "
                                                  "ratio of medians, unpaired)",
                    meets_ratio(ratio, need)))
    mine = last_val_loss(rigel)
    theirs = {b: last_val_loss(c.runs[b]) for b, _ in SPEED_TARGETS}
    gaps = [abs(mine - v) / v for v in theirs.values() if not math.isnan(v) and v > 0]
    val_ok = not math.isnan(mine) and len(gaps) == len(theirs) and max(gaps) <= VAL_LOSS_TOLERANCE
    out.append((f"last validation loss within {VAL_LOSS_TOLERANCE:.0%} of PyTorch's",
                f"rigel {mine:.4f}; " + "; ".join(f"{b} {v:.4f}" for b, v in theirs.items())
                + (f" (largest difference {max(gaps):.3%})" if gaps else ""), val_ok))
    my_peak = peak_gb(rigel)
    peaks = {b: peak_gb(c.runs[b]) for b, _ in SPEED_TARGETS}
    comparable = not math.isnan(my_peak) and all(not math.isnan(v) for v in peaks.values())
    out.append(("peak device memory no more than PyTorch's",
                f"rigel {my_peak:.2f} GB; " + "; ".join(f"{b} {v:.2f} GB" for b, v in peaks.items()),
                (my_peak <= min(peaks.values())) if comparable else None))
    return c, out


def targets_block(runs):
    """The training targets, judged on the newest comparison that holds rigel
    and both PyTorch modes: one row per target with what was measured."""
    c, ts = targets(runs)
    if c is None:
        return ("No call yet with rigel, PyTorch eager and torch.compile side by side "
                "(`scripts/h200_visit.sh train_compare` with `TORCH_MODES=\"compile eager\"`).")
    lines = [f"The training targets on one call ({findings.md_cell(c.model)}, commit {findings.md_cell(c.commit[:7])}, "
             f"logs {', '.join(findings.md_cell(f.name) for r in c.runs.values() for f in r.files)}):", "",
             "| target | measured | verdict |", "|---|---|---|"]
    lines += [f"| {t} | {m} | "
              + ("not comparable (an allocator-only peak)" if ok is None else ("met" if ok else "**not met**")) + " |"
              for t, m, ok in ts]
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


PROFILE_NAME = re.compile(r"_profile_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9-]+)\.csv$")
PROFILE_COLUMNS = ("phase", "kind", "calls", "ms_per_step", "share", "tflops", "steps")


def profile_files(folder):
    """[(file, model, backend)] of every committed step profile, each checked for its columns."""
    return named_files(folder, PROFILE_NAME, PROFILE_COLUMNS, "a step profile")


def phase_times(rf):
    """{phase: (row index, ms per step)} of one profile."""
    t = rf.table
    return {t.cell(i, "phase"): (i, findings.typed(t, i, "ms_per_step")) for i in range(len(t.rows))}


def profile_block(folder):
    """The newest `rigel train run --profile` table of rigel's kernels
    (results/h200/*_profile_<model>_cuda.csv): where the device's time goes in
    one step, the slowest phase first; beside it, where a profile of the same
    commit ran with cuBLASLt and cuDNN in their place (cuda-vendor), their times
    per phase."""
    files = profile_files(folder)
    mine = [f for f in files if f[2] == RIGEL_BACKEND]
    if not mine:
        return ("No committed step profile yet (`results/h200/*_profile_<model>_cuda.csv`, written by "
                "`rigel train run --profile --out`).")
    newest, model, _ = max(mine, key=lambda f: findings.run_age(f[0]))
    commit = newest.side("git_commit")
    vendors = [f for f in files if f[2] == VENDOR_BACKEND and f[1] == model and f[0].side("git_commit") == commit]
    vendor = max(vendors, key=lambda f: findings.run_age(f[0]))[0] if vendors else None
    t = newest.table
    order = sorted(range(len(t.rows)), key=lambda i: -findings.typed(t, i, "ms_per_step"))
    total = sum(findings.typed(t, i, "ms_per_step") for i in order)
    steps = findings.parse_int(t.cell(order[0], "steps")) if order else 0
    head = (f"From {findings.md_cell(newest.name)} (commit {findings.md_cell(commit[:7])}, "
            f"{findings.md_cell(newest.env('gpu_name'))}): device time per step, averaged over {steps} steps, "
            f"{total:.1f} ms in all; each GEMM named as in `rigel gemm bench --suite gpt2`.")
    if vendor is None:
        lines = [head, "", "| phase | kind | calls per step | ms per step | share | Tflop/s |",
                 "|---|---|---|---|---|---|"]
    else:
        v_times = phase_times(vendor)
        v_total = sum(ms for _, ms in v_times.values())
        lines = [head + f" Beside it, {findings.md_cell(vendor.name)}: the same loop with cuBLASLt's matmuls and "
                 f"cuDNN's attention (`--backend cuda-vendor`), {v_total:.1f} ms in all; rigel's own kernels (the "
                 "other phases) run in both.", "",
                 "| phase | kind | calls per step | ms per step | share | Tflop/s | cuda-vendor ms | rigel / vendor |",
                 "|---|---|---|---|---|---|---|---|"]
    for i in order:
        rate = findings.typed(t, i, "tflops")
        ms = findings.typed(t, i, "ms_per_step")
        line = (f"| {findings.md_cell(t.cell(i, 'phase'))} | {t.cell(i, 'kind')} | {t.cell(i, 'calls')} | "
                f"{ms:.3f} | {100 * findings.typed(t, i, 'share'):.1f} % | {'-' if math.isnan(rate) else f'{rate:.0f}'} |")
        if vendor is not None:
            vm = v_times.get(t.cell(i, "phase"), (None, math.nan))[1]
            line += f" {'-' if math.isnan(vm) else f'{vm:.3f}'} | {'-' if math.isnan(vm) or vm <= 0 else f'{ms / vm:.2f}x'} |"
        lines.append(line)
    return "\n".join(lines)


FULL_NAME = re.compile(r"_train_full_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9]+(?:-[a-z0-9]+)*)\.csv$")
SAMPLES_SUFFIX = "_samples.txt"  # beside the log: <stem of the log>_samples.txt


def load_full(folder):
    """The newest run over the whole corpus (`scripts/h200_visit.sh
    train_full`, files ..._train_full_<model>_<backend>.csv), joined from its
    files as load() joins them; None when there is none."""
    files = named_files(folder, FULL_NAME, COLUMNS, "a training log")
    run = None
    for rf, model, backend in sorted(files, key=lambda x: findings.run_age(x[0])):
        steps = file_steps(rf)
        if run is None or (steps and min(steps) == 1) or (run.model, run.backend) != (model, backend):
            run = Run(model, backend)
        run.files.append(rf)
        run.steps.update(steps)
    return run


def samples_of(folder, run):
    """The samples text written beside the run's last log (its stem with
    _samples.txt), or None."""
    stem = run.files[-1].name[:-len(".csv")]
    stem = stem[:stem.rindex("_train_full_")] + "_train_full"
    path = os.path.join(folder, stem + SAMPLES_SUFFIX)
    if not os.path.isfile(path):
        return None, None
    with open(path, encoding="utf-8") as f:
        return os.path.basename(path), f.read()


def full_block(folder):
    """One training run over the whole corpus: its losses along the way, its
    rate, and the samples from its last checkpoint, quoted as written."""
    run = load_full(folder)
    if run is None:
        return ("No committed run over the corpus yet (`results/h200/*_train_full_<model>_<backend>.csv`, written "
                "by `scripts/h200_visit.sh train_full`).")
    steps = sorted(run.steps)
    vals = [(s, run.steps[s]["val_loss"]) for s in steps if not math.isnan(run.steps[s]["val_loss"])]
    median = median_rate(run)
    elapsed = run.steps[steps[-1]]["elapsed_s"]
    best = min(vals, key=lambda v: v[1]) if vals else None
    commit = run.files[-1].side("git_commit")[:7]
    lines = [f"{run.model} on {run.backend}, commit {findings.md_cell(commit)}, "
             f"{findings.md_cell(run.files[-1].table.cell(0, 'device'))}: {steps[-1]} steps in {elapsed:,.0f} s "
             f"(median {median:,.0f} tokens/s over steps 2..{steps[-1]}); logs "
             + ", ".join(findings.md_cell(f.name) for f in run.files) + ".", "",
             "| step | training loss | validation loss | learning rate | gradient norm |", "|---|---|---|---|---|"]
    shown = [s for s, _ in vals] or steps[-1:]
    if steps[0] not in shown:
        shown = [steps[0]] + shown
    # At most a dozen rows: the first step, then evenly spaced validations, and the last.
    if len(shown) > 12:
        pick = {shown[0], shown[-1]} | {shown[round(i * (len(shown) - 1) / 10)] for i in range(11)}
        shown = sorted(pick)
    for s in shown:
        r = run.steps[s]
        val = "-" if math.isnan(r["val_loss"]) else f"{r['val_loss']:.4f}"
        lines.append(f"| {s} | {r['loss']:.4f} | {val} | {r['lr']:.3g} | {r['grad_norm']:.3f} |")
    if best:
        lines += ["", f"Lowest validation loss {best[1]:.4f} at step {best[0]}; the last, {vals[-1][1]:.4f} at step "
                  f"{vals[-1][0]}. The curves: docs/figures/full_run.png."]
    name, text = samples_of(folder, run)
    if text:
        # The model emits many newlines in a row: runs of blank lines shown as one.
        shown_text = re.sub(r"\n(?:[ \t]*\n){2,}", "\n\n", text.strip("\n"))
        lines += ["", f"Samples from the last checkpoint, on rigel's kernels ({findings.md_cell(name)}; runs of blank "
                  "lines shown as one):", "", "```text", shown_text, "```"]
    return "\n".join(lines)


def draw_full(plt, folder, path, write_if_changed, style):
    """The run over the corpus: training loss per step (and its 25-step
    mean) with the validation losses; nothing drawn (False) without one."""
    run = load_full(folder)
    if run is None:
        return False
    steps = sorted(run.steps)
    loss = [run.steps[s]["loss"] for s in steps]
    fig, ax = plt.subplots(figsize=(9, 5))
    ax.plot(steps, loss, color=style.OWN, alpha=0.3, linewidth=0.8, label="training loss, per step")
    w = 25
    if len(loss) > w:
        mean = [sum(loss[i - w + 1:i + 1]) / w for i in range(w - 1, len(loss))]
        ax.plot(steps[w - 1:], mean, color=style.OWN, linewidth=1.5, label=f"training loss, mean of {w} steps")
    val = [(s, run.steps[s]["val_loss"]) for s in steps if not math.isnan(run.steps[s]["val_loss"])]
    if val:
        ax.plot([s for s, _ in val], [v for _, v in val], color=style.VENDOR, marker="o", linestyle="--",
                markersize=4, linewidth=0.8, label="validation loss")
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy loss (nats per token)")
    ax.grid(color="#eeeeee", zorder=0)
    ax.legend(loc="upper right")
    ax.set_title(f"{run.model} on rigel's kernels, over the corpus (commit {run.files[-1].side('git_commit')[:7]})")
    fig.tight_layout()
    style.save(fig, path, write_if_changed)
    plt.close(fig)
    return True


# ---- the deterministic mode (scripts/h200_visit.sh train_det) ---------------------------------------

DET_NAME = re.compile(r"_train_det_(?P<run>a|b|r|r2|default)_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9]+)\.csv$")
DET_RUNS = ("a", "b", "r", "r2", "default")


def det_block(folder):
    """The newest train_det visit's runs (one commit): two deterministic runs
    from the same weights, one stopped after step 4 and resumed (r, then r2),
    and a default run beside them. Whether the logged losses and gradient norms
    of the runs agree at every step (the byte-for-byte comparison of their
    checkpoints is the visit's own, in its summary), and the deterministic
    mode's tokens/s over the default run's, back to back in one call (not
    paired samples)."""
    by_commit = {}
    for rf, m in findings.matching_files(folder, DET_NAME, COLUMNS, "a training log"):
        by_commit.setdefault(rf.side("git_commit"), {})[m.group("run")] = rf
    complete = [(max(findings.run_age(f) for f in files.values()), commit, files)
                for commit, files in by_commit.items() if all(r in files for r in DET_RUNS)]
    if not complete:
        return ("Not measured yet: no committed run of `scripts/h200_visit.sh train_det` "
                "(`results/h200/*_train_det_<run>_<model>_cuda.csv`).")
    _, commit, files = max(complete, key=lambda x: x[0])
    steps = {r: file_steps(files[r]) for r in DET_RUNS}
    resumed = dict(steps["r"])
    resumed.update(steps["r2"])

    def agree(x, y):
        cols = ("loss", "grad_norm")
        return sorted(x) == sorted(y) and all(x[s][c] == y[s][c] for s in x for c in cols)

    det_rate, default_rate = median_of_steps(steps["a"]), median_of_steps(steps["default"])
    lines = [f"From `scripts/h200_visit.sh train_det` at commit {commit[:7]} ({findings.md_cell(files['a'].env('gpu_name'))}): "
             f"{len(steps['a'])} steps of GPT-2 small at 16 x 1024 tokens.",
             "",
             "| comparison | losses and gradient norms, as logged |",
             "|---|---|",
             f"| two deterministic runs from the same weights | {'equal at every step' if agree(steps['a'], steps['b']) else '**differ**'} |",
             f"| stopped after step {max(steps['r'])} and resumed, against the straight run | "
             f"{'equal at every step' if agree(resumed, steps['a']) else '**differ**'} |",
             f"| the default mode (atomics), from the same weights | "
             f"{'equal at every step' if agree(steps['default'], steps['a']) else 'differ (as expected of atomic sums)'} |",
             "",
             f"Median tokens/s over steps 2..N: deterministic {det_rate:,.0f}, default {default_rate:,.0f}: "
             f"the deterministic mode at {speed_ratio_text(det_rate / default_rate)} (ratio of medians, unpaired: "
             "back to back in one call). Logs: "
             + ", ".join(files[r].name for r in DET_RUNS) + "."]
    return "\n".join(lines)



DGELU_NAME = re.compile(r"_train_dgelu_(?P<form>fused|split)_(?P<round>\d+)_(?P<model>[a-z0-9]+)_(?P<backend>[a-z0-9]+)\.csv$")


def dgelu_block(folder):
    """The newest train_dgelu visit's runs (one commit): in each round, a run
    with GELU's backward fused into the MLP's dX product (the cuda backend's
    default) and one with it in a pass of its own (--split-dgelu), from the same
    weights, back to back. Each round's ratio of the two runs' median tokens/s,
    and the median of those ratios: rounds alternate the two forms (A B A B), so
    a clock that drifts across the call moves both sides of a round alike."""
    by_commit = {}
    for rf, m in findings.matching_files(folder, DGELU_NAME, COLUMNS, "a training log"):
        by_commit.setdefault(rf.side("git_commit"), {})[(m.group("form"), int(m.group("round")))] = rf
    complete = []
    for commit, files in by_commit.items():
        rounds = sorted(r for f, r in files if f == "fused" and ("split", r) in files)
        if rounds:
            complete.append((max(findings.run_age(f) for f in files.values()), commit, files, rounds))
    if not complete:
        return ("Not measured yet: no committed run of `scripts/h200_visit.sh train_dgelu` "
                "(`*_train_dgelu_<fused|split>_<round>_<model>_cuda.csv`).")
    _, commit, files, rounds = max(complete, key=lambda x: x[0])
    first = files[("fused", rounds[0])]
    lines = [f"From `scripts/h200_visit.sh train_dgelu` at commit {commit[:7]} "
             f"({findings.md_cell(first.env('gpu_name'))}): GPT-2 small at 16 x 1024 tokens a step, "
             f"{len(file_steps(first))} steps a run, each round's two runs from the same weights, back to back.",
             "",
             "| round | fused into dX (tokens/s) | split (tokens/s) | fused / split |",
             "|---|---|---|---|"]
    ratios = []
    for r in rounds:
        fused = median_of_steps(file_steps(files[("fused", r)]))
        split = median_of_steps(file_steps(files[("split", r)]))
        ratios.append(fused / split)
        lines.append(f"| {r} | {fused:,.0f} | {split:,.0f} | {speed_ratio_text(fused / split)} |")
    lines += ["",
              f"Median over the rounds of fused / split: {speed_ratio_text(statistics.median(ratios))} "
              f"(each side the median tokens/s over steps 2..N of its run). Logs: "
              + ", ".join(files[(f, r)].name for r in rounds for f in ("fused", "split")) + "."]
    return "\n".join(lines)
