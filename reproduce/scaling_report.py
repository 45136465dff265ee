"""Data-parallel GPT-2 on several GPUs, from the logs `scripts/h200_visit.sh
dist_node` commits as results/h200/<date>_<commit>_dist_<what>_gpt2_cuda.csv
(`rigel train run --out` under `rigel launch`, one row per step, the sidecar
naming the ranks, the batch, the sequence length, the accumulation per rank and
whether the run was deterministic): FINDINGS.md's section "Data-parallel
training across the node's GPUs".

- Scaling: runs of one commit and one geometry (batch x seq x accumulation a
  rank, not deterministic) on N ranks; each run's median tokens/s over its steps
  after the first WARMUP_STEPS, and the efficiency tokens/s(N) / (N x
  tokens/s(1)), judged against TARGET_EFFICIENCY at 8 ranks with 16,384 tokens
  per GPU per step.
- The same global batch: a run of N ranks beside one process accumulating N
  times as many micro-batches (the same data in the same order), the largest
  loss difference over their common steps; deterministic pairs should agree in
  every printed digit.

Logs whose sidecars lack the geometry (those written before it was recorded)
are left out."""
import re
import statistics

import findings

DIST_NAME = re.compile(r"_dist_(?P<what>[a-z0-9_]+)_gpt2_cuda\.csv$")
COLUMNS = ("run_id", "step", "loss", "tokens_per_s")
WARMUP_STEPS = 3  # the first steps carry the kernels' first launches and NCCL's set-up
TARGET_EFFICIENCY = 0.95
TARGET_RANKS = 8
TARGET_TOKENS_PER_GPU = 16384


def side_int(f, key):
    v = findings.parse_number(f.side(key))
    return int(v) if v is not None and v == int(v) else None


class DistRun:
    def __init__(self, f, what):
        self.file = f
        self.what = what
        self.commit = f.side("git_commit")[:7]
        self.ranks = side_int(f, "ranks")
        self.batch = side_int(f, "batch")
        self.seq = side_int(f, "seq")
        self.accumulation = side_int(f, "accumulation")
        self.deterministic = f.side("deterministic") == "true"
        self.sharded = f.side("optimizer_state").startswith("sharded")
        t = f.table
        self.loss = {}
        self.rate = {}
        for i in range(len(t.rows)):
            step = findings.parse_int(t.cell(i, "step"))
            for col, into in (("loss", self.loss), ("tokens_per_s", self.rate)):
                v = findings.parse_number(t.cell(i, col))
                if v is not None:
                    into[step] = v

    @property
    def complete(self):
        return None not in (self.ranks, self.batch, self.seq, self.accumulation)

    @property
    def tokens_per_rank_step(self):
        return self.batch * self.seq * self.accumulation

    def median_rate(self):
        steady = [r for s, r in self.rate.items() if s > WARMUP_STEPS]
        return statistics.median(steady) if steady else None


def load(folder):
    runs = []
    for rf, m in findings.matching_files(folder, DIST_NAME, COLUMNS, "a training log"):
        run = DistRun(rf, m.group("what"))
        if run.complete:
            runs.append(run)
    return runs


def scaling(runs):
    """{(commit, batch, seq, accumulation): {ranks: (median tokens/s, run)}}, the newest run of each size;
    scaling runs only (their log's name begins with scale), never deterministic ones."""
    out = {}
    for r in sorted(runs, key=lambda r: findings.run_age(r.file)):
        rate = r.median_rate()
        if not r.what.startswith("scale") or r.deterministic or rate is None:
            continue
        out.setdefault((r.commit, r.batch, r.seq, r.accumulation), {})[r.ranks] = (rate, r)
    return out


def target(runs):
    """(target, measured, met) for the scaling target, from the newest commit whose runs at 16,384 tokens per
    GPU per step hold 1 and TARGET_RANKS ranks; met None where none does."""
    text = (f"data-parallel efficiency >= {TARGET_EFFICIENCY} at {TARGET_RANKS} GPUs, "
            f"{TARGET_TOKENS_PER_GPU:,} tokens per GPU per step")
    found = [(key, by_ranks) for key, by_ranks in scaling(runs).items()
             if 1 in by_ranks and TARGET_RANKS in by_ranks and key[1] * key[2] * key[3] == TARGET_TOKENS_PER_GPU]
    if not found:
        return text, "not measured (no machine with several GPUs yet)", None
    key, by_ranks = max(found, key=lambda kv: findings.run_age(kv[1][TARGET_RANKS][1].file))
    eff = by_ranks[TARGET_RANKS][0] / (TARGET_RANKS * by_ranks[1][0])
    return text, f"{eff:.3f} (commit {findings.md_cell(key[0])})", eff >= TARGET_EFFICIENCY


SAME_BATCH = re.compile(r"^same_(?P<mode>[a-z]+)_n\d+$")


def same_batch_pairs(runs):
    """[(several ranks' run, one process's run)]: logs named same_<mode>_n<N> of one commit, mode and global
    batch (ranks x batch x seq x accumulation), the newest of each. The mode is the visit's (replicated,
    shard, det): the one process of a sharded pair keeps the whole optimizer state, as one process does."""
    newest = {}
    for r in sorted(runs, key=lambda r: findings.run_age(r.file)):
        m = SAME_BATCH.match(r.what)
        if m:
            newest[(r.commit, m.group("mode"), r.batch, r.seq, r.ranks * r.accumulation, r.ranks)] = r
    pairs = []
    for key, r in newest.items():
        if r.ranks > 1:
            one = newest.get(key[:-1] + (1,))
            if one is not None:
                pairs.append((r, one))
    return sorted(pairs, key=lambda p: (p[0].commit, p[0].deterministic, p[0].sharded, p[0].ranks))


def section(runs):
    groups = scaling(runs)
    pairs = same_batch_pairs(runs)
    if not any(len(v) >= 2 for v in groups.values()) and not pairs:
        return ""
    out = ["## Data-parallel training across the node's GPUs", "",
           "GPT-2 small on rigel's kernels, one process per GPU (`rigel launch --nproc N -- rigel train run`), "
           "the gradients summed by NCCL in buckets overlapped with the backward pass (docs/multi_gpu.md). From "
           "`scripts/h200_visit.sh dist_node`'s logs (results/h200/*_dist_*_gpt2_cuda.csv).", ""]
    for (commit, batch, seq, acc), by_ranks in sorted(groups.items()):
        if len(by_ranks) < 2:
            continue
        per_gpu = batch * seq * acc
        out += [f"Scaling, commit {findings.md_cell(commit)}, {per_gpu:,} tokens per GPU per step (batch {batch} "
                f"x sequence {seq} x accumulation {acc}); tokens/s is the median over the steps after the first "
                f"{WARMUP_STEPS}, all ranks' tokens:", "",
                "| ranks | tokens/s | per GPU | efficiency | log |", "|---|---|---|---|---|"]
        base = by_ranks.get(1)
        for n, (rate, r) in sorted(by_ranks.items()):
            eff = f"{rate / (n * base[0]):.3f}" if base else "-"
            out.append(f"| {n} | {rate:,.0f} | {rate / n:,.0f} | {eff} | {findings.md_cell(r.file.name)} |")
        at = by_ranks.get(TARGET_RANKS)
        if base and at and per_gpu == TARGET_TOKENS_PER_GPU:
            eff = at[0] / (TARGET_RANKS * base[0])
            verdict = "met" if eff >= TARGET_EFFICIENCY else "**not met**"
            out += ["", f"Target: efficiency >= {TARGET_EFFICIENCY} at {TARGET_RANKS} GPUs with "
                        f"{TARGET_TOKENS_PER_GPU:,} tokens per GPU per step: {eff:.3f}, {verdict}."]
        out.append("")
    if pairs:
        out += ["The same global batch on N GPUs and in one process accumulating N times as many micro-batches "
                "(the same data in the same order), loss by loss over their common steps:", "",
                "| commit | mode | optimizer state | ranks | tokens a step | steps | largest loss difference | "
                "losses identical | logs |", "|---|---|---|---|---|---|---|---|---|"]
        for r, one in pairs:
            common = sorted(set(r.loss) & set(one.loss))
            if not common:
                continue
            diff = max(abs(r.loss[s] - one.loss[s]) for s in common)
            same = all(r.loss[s] == one.loss[s] for s in common)
            out.append(f"| {findings.md_cell(r.commit)} | {'deterministic' if r.deterministic else 'default'} | "
                       f"{'ZeRO stage 1' if r.sharded else 'replicated'} | {r.ranks} | "
                       f"{r.tokens_per_rank_step * r.ranks:,} | {len(common)} | {diff:.2g} | "
                       f"{'yes' if same else 'no'} | {findings.md_cell(r.file.name)}, "
                       f"{findings.md_cell(one.file.name)} |")
        out += ["", "A deterministic pair's checkpoints are compared byte for byte by the visit itself (its summary "
                    "line); the losses above are summed over the ranks by NCCL and printed to 6 digits."]
    return "\n".join(out).rstrip("\n") + "\n"
