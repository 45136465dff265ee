#!/usr/bin/env python3
"""GPT-2 in PyTorch as a user would train it, the baseline of `rigel train run`.

The same model (rigel's parameter layout, src/train/gpt2.hpp), started from the
same weights (a step-0 checkpoint that `rigel train run --init-only` writes),
fed the same batches in the same order (rigel's DataLoader: batch k holds the
B*T tokens from position k*B*T, targets one further, wrapping to the start when
the next batch would run past the end), with the same optimizer (AdamW, decay
on the matrices only, fp32 master weights), schedule (linear warm-up, cosine to
a floor), clipping and accumulation. It computes as a PyTorch user would:
bf16 autocast, scaled_dot_product_attention (PyTorch picks its flash or cuDNN
kernel), fused AdamW, and optionally torch.compile.

It writes the same log as rigel, column for column (one CSV row per step: loss,
validation loss, learning rate, gradient norm, tokens/s, Tflop/s, MFU, peak
memory), with a JSON sidecar of the same stem, so reproduce/train_report.py
reads both and sets the runs side by side. --profile adds one more step, not
logged, under torch.profiler and writes its table of kernels.

    rigel train run --init-only --model gpt2 --checkpoint out/init.ckpt --data data/shakespeare/train.bin
    python3 scripts/gpt2_torch.py --init out/init.ckpt --data data/shakespeare/train.bin \\
        --val data/shakespeare/val.bin --steps 50 --compile \\
        --out out/2026-12-01_ededb02_train_gpt2_torch-compile.csv

Needs PyTorch with a CUDA device; the checkpoint and token readers and the log
writer below need only the standard library (tests/python/test_gpt2_torch.py).
"""
import argparse
import array
import csv
import io
import json
import math
import os
import platform
import secrets
import socket
import struct
import sys
import time

CHECKPOINT_MAGIC = b"RIGELCKP"
CHECKPOINT_VERSION = 1
CHECKPOINT_HEADER = 32
CHECKPOINT_FIXED = 112
TOKEN_MAGIC, TOKEN_VERSION, TOKEN_HEADER_INTS = 20240520, 1, 256
H200_DENSE_BF16 = 989.5e12  # the data sheet's rate, MFU's denominator (as rigel's log uses it)
# rigel's training log, column for column (src/cli/train_commands.cpp).
LOG_COLUMNS = ("run_id", "host", "device", "step", "loss", "val_loss", "lr", "grad_norm", "tokens_per_s", "tflops",
               "mfu", "peak_memory_gb", "elapsed_s", "checkpointed")
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# rigel's parameter tensors in buffer order: (name, shape given config, layered, decayed).
TENSORS = (
    ("wte", lambda c: (c["padded_vocab_size"], c["channels"]), False, True),
    ("wpe", lambda c: (c["max_seq_len"], c["channels"]), False, True),
    ("ln1w", lambda c: (c["channels"],), True, False),
    ("ln1b", lambda c: (c["channels"],), True, False),
    ("qkvw", lambda c: (3 * c["channels"], c["channels"]), True, True),
    ("qkvb", lambda c: (3 * c["channels"],), True, False),
    ("attprojw", lambda c: (c["channels"], c["channels"]), True, True),
    ("attprojb", lambda c: (c["channels"],), True, False),
    ("ln2w", lambda c: (c["channels"],), True, False),
    ("ln2b", lambda c: (c["channels"],), True, False),
    ("fcw", lambda c: (4 * c["channels"], c["channels"]), True, True),
    ("fcb", lambda c: (4 * c["channels"],), True, False),
    ("fcprojw", lambda c: (c["channels"], 4 * c["channels"]), True, True),
    ("fcprojb", lambda c: (c["channels"],), True, False),
    ("lnfw", lambda c: (c["channels"],), False, False),
    ("lnfb", lambda c: (c["channels"],), False, False),
)


class Failure(Exception):
    pass


if sys.byteorder != "little":
    raise SystemExit("gpt2_torch: rigel's files are little-endian; this machine is not")


def read_checkpoint(path):
    """(config dict, step, fp32 parameters as an array('f')) of a rigel checkpoint
    (layout: src/train/checkpoint.hpp). The checksum is rigel's to check; this
    reader checks the magic, the version and that the sizes agree with the file."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Failure(f"checkpoint {path} cannot be read ({e.strerror})") from None
    if len(data) < CHECKPOINT_HEADER + CHECKPOINT_FIXED or data[:8] != CHECKPOINT_MAGIC:
        raise Failure(f"{path} is not a rigel checkpoint")
    version, payload_bytes, _checksum = struct.unpack_from("<QQQ", data, 8)
    if version != CHECKPOINT_VERSION:
        raise Failure(f"{path} is checkpoint version {version}; this script reads {CHECKPOINT_VERSION}")
    if CHECKPOINT_HEADER + payload_bytes != len(data):
        raise Failure(f"{path} is truncated or padded: {len(data)} bytes, the header says "
                      f"{CHECKPOINT_HEADER + payload_bytes}")
    fields = struct.unpack_from("<6iqQQQqq4QQ", data, CHECKPOINT_HEADER)
    keys = ("layers", "heads", "channels", "max_seq_len", "vocab_size", "padded_vocab_size")
    config = dict(zip(keys, fields[:6]))
    step, n_params, n_m, n_v = fields[6:10]
    options_bytes = fields[-1]
    if n_m != n_params or n_v != n_params or \
            CHECKPOINT_FIXED + 12 * n_params + options_bytes != payload_bytes:
        raise Failure(f"{path}: its sizes do not agree")
    if n_params != parameter_count(config):
        raise Failure(f"{path}: {n_params} parameters, but its model has {parameter_count(config)}")
    start = CHECKPOINT_HEADER + CHECKPOINT_FIXED
    params = array.array("f", data[start:start + 4 * n_params])
    return config, step, params


def parameter_count(config):
    total = 0
    for _, shape, layered, _ in TENSORS:
        total += math.prod(shape(config)) * (config["layers"] if layered else 1)
    return total


def read_tokens(path, vocab_size):
    """The tokens of a token file (llm.c's format, as rigel reads it)."""
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise Failure(f"token file {path} cannot be read ({e.strerror})") from None
    if len(data) < 4 * TOKEN_HEADER_INTS:
        raise Failure(f"{path} is shorter than a token file's header")
    magic, version, count = struct.unpack_from("<3i", data, 0)
    if magic != TOKEN_MAGIC or version != TOKEN_VERSION or count < 2 or \
            len(data) != 4 * TOKEN_HEADER_INTS + 2 * count:
        raise Failure(f"{path} is not a version-1 token file of the size its header says")
    tokens = array.array("H", data[4 * TOKEN_HEADER_INTS:])
    if max(tokens) >= vocab_size:
        raise Failure(f"{path} holds token {max(tokens)}, outside the vocabulary of {vocab_size}")
    return tokens


def batch_positions(count, batch, seq, n_tokens):
    """The first token position of each of `count` batches, as rigel's
    DataLoader takes them from its start: consecutive windows of B*T tokens,
    back to 0 when the next batch (and its one extra target) would not fit."""
    span = batch * seq
    if n_tokens < span + 1:
        raise Failure(f"the file holds {n_tokens} tokens, a batch needs {span + 1}")
    out, pos = [], 0
    for _ in range(count):
        out.append(pos)
        pos += span
        if pos + span + 1 > n_tokens:
            pos = 0
    return out


def learning_rate(step, max_lr, warmup, total, final_fraction):
    """rigel's schedule (src/train/optimizer.hpp), step 0-based."""
    if step < warmup:
        return max_lr * (step + 1) / warmup
    min_lr = max_lr * final_fraction
    if step >= total or total <= warmup:
        return min_lr
    ratio = (step - warmup) / (total - warmup)
    return min_lr + 0.5 * (1.0 + math.cos(math.pi * ratio)) * (max_lr - min_lr)


def training_flops_per_token(config, seq):
    return 6.0 * parameter_count(config) + 12.0 * config["layers"] * seq * config["channels"]


# ---- the log and its sidecar (standard library) -------------------------------------------


def make_run_id(now=None):
    """A run id as rigel makes one: the UTC time, then six random hex digits
    (20261201T143330Z-2e276f)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now)) + "-%06x" % secrets.randbits(24)


def num(v):
    """A number as rigel's log writes it (%.6g); "" for none or a non-finite one."""
    if v is None or not math.isfinite(v):
        return ""
    return "%.6g" % v


def default_commit(root=REPO_ROOT):
    """The commit of the tree this script belongs to: COMMIT at its root (an
    export by scripts/stage_visit.sh), else .visit/COMMIT, else "unknown"."""
    for path in (os.path.join(root, "COMMIT"), os.path.join(root, ".visit", "COMMIT")):
        try:
            with open(path) as f:
                commit = f.read().strip()
        except OSError:
            continue
        if commit:
            return commit
    return "unknown"


def host_facts():
    """The host's part of a sidecar's `environment`, as strings under rigel's keys."""
    facts = {"os": "unknown", "kernel": f"{platform.system()} {platform.release()}", "cpu_model": "unknown",
             "cpu_cores": str(os.cpu_count() or 0), "python_version": platform.python_version()}
    for path, key, field in (("/etc/os-release", "os", "PRETTY_NAME="), ("/proc/cpuinfo", "cpu_model", "model name")):
        try:
            with open(path) as f:
                for line in f:
                    if line.startswith(field):
                        facts[key] = line.split("=" if key == "os" else ":", 1)[1].strip().strip('"')
                        break
        except OSError:
            pass
    return facts


def log_records(run, rows):
    """The log's CSV records, header first: rigel's columns, one record per step
    row (a dict of numbers; val_loss None where none was measured)."""
    out = [list(LOG_COLUMNS)]
    for r in rows:
        out.append([run["run_id"], run["host"], run["device"], str(r["step"]), num(r["loss"]), num(r["val_loss"]),
                    num(r["lr"]), num(r["grad_norm"]), num(r["tokens_per_s"]), num(r["tflops"]), num(r["mfu"]),
                    num(r["peak_memory_gb"]), num(r["elapsed_s"]), "0"])
    return out


def sidecar(run, csv_name, n_rows, complete, interrupted=False):
    """The log's JSON sidecar: the keys reproduce/findings.py requires (run_id,
    git_commit, environment), those of rigel's own, then this run's settings."""
    return {"run_id": run["run_id"], "what": "train_log", "csv": csv_name, "tool": "gpt2_torch.py",
            "torch_version": run["torch_version"], "cuda_version": run["cuda_version"],
            "git_commit": run["git_commit"], "complete": complete, "interrupted": interrupted, "rows": n_rows,
            "model": run["model"], "backend": "torch-" + run["mode"], "mode": run["mode"], "batch": run["batch"],
            "seq": run["seq"], "accumulation": run["accumulation"], "steps": run["steps"],
            "peak_memory": "device memory in use (total - free) at the end of a step, at its largest",
            "allocator_peak_gb": run.get("allocator_peak_gb"), "environment": run["environment"]}


def write_atomic(path, text):
    """`text` into `path` through a temporary file beside it, so that a reader
    sees the old file or the new one, never a part."""
    tmp = f"{path}.tmp.{os.getpid()}"
    try:
        with open(tmp, "w", newline="") as f:
            f.write(text)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def write_log(path, run, rows, complete, interrupted=False):
    """The log CSV at `path` and its sidecar <stem>.json beside it, each written
    whole; returns the sidecar's path."""
    buf = io.StringIO()
    csv.writer(buf, lineterminator="\n").writerows(log_records(run, rows))
    side_path = os.path.splitext(path)[0] + ".json"
    write_atomic(path, buf.getvalue())
    write_atomic(side_path, json.dumps(sidecar(run, os.path.basename(path), len(rows), complete, interrupted),
                                       indent=2) + "\n")
    return side_path


def profile_table(averages, row_limit=40):
    """The profiler's averaged events as a table, sorted by their time on the
    device: the key is device_time_total in newer PyTorch, cuda_time_total in
    older ones."""
    keys = ["device_time_total", "cuda_time_total"]
    if len(averages) and not hasattr(averages[0], "device_time_total"):
        keys.reverse()
    try:
        return averages.table(sort_by=keys[0], row_limit=row_limit)
    except (AttributeError, KeyError, ValueError):
        return averages.table(sort_by=keys[1], row_limit=row_limit)


# ---- the model (needs torch) --------------------------------------------------------------


def build(torch, config, params, device):
    """The parameters as named fp32 tensors on the device, cut from rigel's flat buffer."""
    flat = torch.tensor(params, dtype=torch.float32).to(device)
    named, offset = {}, 0
    for name, shape, layered, decayed in TENSORS:
        s = shape(config)
        n = math.prod(s)
        for layer in range(config["layers"] if layered else 1):
            key = f"{name}.{layer}" if layered else name
            named[key] = (torch.nn.Parameter(flat[offset:offset + n].view(*s).clone()), decayed)
            offset += n
    return named


def forward(torch, F, p, config, idx, targets):
    B, T = idx.shape
    C, H = config["channels"], config["heads"]
    x = p["wte"][idx] + p["wpe"][:T]
    for l in range(config["layers"]):
        h = F.layer_norm(x, (C,), p[f"ln1w.{l}"], p[f"ln1b.{l}"], 1e-5)
        qkv = F.linear(h, p[f"qkvw.{l}"], p[f"qkvb.{l}"])
        q, k, v = qkv.view(B, T, 3, H, C // H).permute(2, 0, 3, 1, 4)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + F.linear(y, p[f"attprojw.{l}"], p[f"attprojb.{l}"])
        h = F.layer_norm(x, (C,), p[f"ln2w.{l}"], p[f"ln2b.{l}"], 1e-5)
        h = F.gelu(F.linear(h, p[f"fcw.{l}"], p[f"fcb.{l}"]), approximate="tanh")
        x = x + F.linear(h, p[f"fcprojw.{l}"], p[f"fcprojb.{l}"])
    x = F.layer_norm(x, (C,), p["lnfw"], p["lnfb"], 1e-5)
    logits = F.linear(x, p["wte"])[..., :config["vocab_size"]]
    return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def environment(torch):
    """The sidecar's `environment`: the host's facts, the device's and PyTorch's."""
    props = torch.cuda.get_device_properties(0)
    env = host_facts()
    env.update({"gpu_name": torch.cuda.get_device_name(0),
                "gpu_compute_capability": f"{props.major}.{props.minor}",
                "gpu_sm_count": str(props.multi_processor_count), "gpu_memory_bytes": str(props.total_memory),
                "torch_version": str(torch.__version__), "cuda_runtime_version": str(torch.version.cuda),
                "cudnn_version": str(torch.backends.cudnn.version())})
    return env


def train(args):
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        raise Failure("PyTorch is not installed for " + sys.executable) from None
    if not torch.cuda.is_available():
        raise Failure("no CUDA device: the baseline runs on the GPU")
    config, step0, params = read_checkpoint(args.init)
    if step0 != 0:
        raise Failure(f"{args.init} is at step {step0}; start from a step-0 checkpoint (rigel train run --init-only)")
    if args.seq > config["max_seq_len"]:
        raise Failure(f"--seq {args.seq} exceeds the model's context of {config['max_seq_len']}")
    train_tokens = read_tokens(args.data, config["vocab_size"])
    val_tokens = read_tokens(args.val, config["vocab_size"]) if args.val else None
    device = torch.device("cuda")
    named = build(torch, config, params, device)
    p = {k: v for k, (v, _) in named.items()}
    groups = [{"params": [v for v, d in named.values() if d], "weight_decay": args.weight_decay},
              {"params": [v for v, d in named.values() if not d], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_fn = forward
    if args.compile:
        step_fn = torch.compile(forward, fullgraph=False)

    B, T, A = args.batch, args.seq, args.accumulation
    train_t = torch.tensor(train_tokens, dtype=torch.int64)
    # One batch further for the profiled step after the logged ones.
    positions = batch_positions((args.steps + 1) * A, B, T, len(train_tokens))
    mode = "compile" if args.compile else "eager"
    run = {"run_id": make_run_id(), "host": socket.gethostname() or "unknown",
           "device": torch.cuda.get_device_name(0), "git_commit": args.commit or default_commit(),
           "torch_version": str(torch.__version__), "cuda_version": str(torch.version.cuda), "mode": mode,
           "model": args.model, "batch": B, "seq": T, "accumulation": A, "steps": args.steps,
           "environment": environment(torch)}

    def batch_at(tokens, pos):
        window = tokens[pos:pos + B * T + 1]
        return (window[:-1].view(B, T).to(device, non_blocking=True),
                window[1:].view(B, T).to(device, non_blocking=True))

    def val_loss():
        vt = torch.tensor(val_tokens, dtype=torch.int64)
        losses = []
        with torch.no_grad(), torch.autocast("cuda", dtype=torch.bfloat16):
            for pos in batch_positions(args.val_batches, B, T, len(val_tokens)):
                x, y = batch_at(vt, pos)
                losses.append(step_fn(torch, F, p, config, x, y).item())
        return sum(losses) / len(losses)

    def train_step(step, lr):
        """One optimizer step (1-based) on its batches: (loss, gradient norm) as tensors."""
        for g in opt.param_groups:
            g["lr"] = lr
        opt.zero_grad(set_to_none=True)
        loss_sum = 0.0
        for a in range(A):
            x, y = batch_at(train_t, positions[(step - 1) * A + a])
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(torch, F, p, config, x, y) / A
            loss.backward()
            loss_sum += loss.detach()
        norm = torch.nn.utils.clip_grad_norm_(p.values(), args.clip if args.clip > 0 else float("inf"))
        opt.step()
        return loss_sum, norm

    flops_per_token = training_flops_per_token(config, T)
    rows, start, peak = [], time.time(), 0.0
    torch.cuda.reset_peak_memory_stats()
    try:
        for step in range(1, args.steps + 1):
            torch.cuda.synchronize()
            t0 = time.time()
            lr = learning_rate(step - 1, args.lr, args.warmup, args.steps, args.final_lr_fraction)
            loss_sum, norm = train_step(step, lr)
            torch.cuda.synchronize()
            seconds = time.time() - t0
            tokens_per_s = B * T * A / seconds
            last = step == args.steps
            vl = val_loss() if val_tokens is not None and (last or (args.val_every and step % args.val_every == 0)) \
                else None
            # The device's memory in use, all of it (the CUDA context and the
            # caching allocator's reserve included), at the end of the step:
            # what rigel's log reports. The allocator's own peak goes to the
            # sidecar beside it.
            free, total = torch.cuda.mem_get_info()
            peak = max(peak, (total - free) / 1e9)
            run["allocator_peak_gb"] = torch.cuda.max_memory_allocated() / 1e9
            row = {"step": step, "loss": float(loss_sum), "val_loss": vl, "lr": lr, "grad_norm": float(norm),
                   "tokens_per_s": tokens_per_s, "tflops": flops_per_token * tokens_per_s / 1e12,
                   "mfu": flops_per_token * tokens_per_s / H200_DENSE_BF16, "peak_memory_gb": peak,
                   "elapsed_s": time.time() - start}
            rows.append(row)
            print(f"step {step:5d}/{args.steps}  loss {row['loss']:.4f}" +
                  ("" if vl is None else f"  val {vl:.4f}") +
                  f"  lr {lr:.3g}  norm {row['grad_norm']:.3f}  {tokens_per_s:.0f} tok/s  "
                  f"MFU {100 * row['mfu']:.1f} %  peak {peak:.2f} GB", flush=True)
            if args.out:  # after every step, as rigel does: a run cut short keeps its rows
                write_log(args.out, run, rows, complete=last)
    except KeyboardInterrupt:
        if args.out and rows:
            write_log(args.out, run, rows, complete=False, interrupted=True)
        raise Failure(f"interrupted after {len(rows)} step(s)" +
                      (f"; kept them in {args.out}" if args.out and rows else "")) from None
    if args.out:
        print(f"gpt2_torch: wrote {len(rows)} row(s) in {args.out} and "
              f"{os.path.basename(os.path.splitext(args.out)[0])}.json", file=sys.stderr)
    if args.profile:
        from torch.profiler import ProfilerActivity, profile
        lr = learning_rate(args.steps, args.lr, args.warmup, args.steps, args.final_lr_fraction)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            train_step(args.steps + 1, lr)
            torch.cuda.synchronize()
        write_atomic(args.profile,
                     f"One training step of gpt2_torch.py ({mode}, {run['device']}, batch {B} x seq {T} x "
                     f"accumulation {A}, run {run['run_id']}), after the {args.steps} logged steps; "
                     "sorted by time on the device.\n\n" + profile_table(prof.key_averages()) + "\n")
        print(f"gpt2_torch: wrote the profile of one more step to {args.profile}", file=sys.stderr)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--init", required=True, help="a step-0 rigel checkpoint (rigel train run --init-only)")
    ap.add_argument("--data", required=True)
    ap.add_argument("--val")
    ap.add_argument("--model", default="gpt2", help="the model's name in the log's sidecar (rigel's --model)")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--accumulation", type=int, default=1)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--lr", type=float, default=6e-4)
    ap.add_argument("--warmup", type=int, default=0)
    ap.add_argument("--final-lr-fraction", type=float, default=0.1)
    ap.add_argument("--weight-decay", type=float, default=0.1)
    ap.add_argument("--clip", type=float, default=1.0)
    ap.add_argument("--val-every", type=int, default=0)
    ap.add_argument("--val-batches", type=int, default=4)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model's step")
    ap.add_argument("--out", help="the log CSV (rigel's columns; its sidecar <stem>.json goes beside it)")
    ap.add_argument("--commit", help="the git commit the sidecar names (default: COMMIT at the tree's root, "
                                     "else .visit/COMMIT, else 'unknown')")
    ap.add_argument("--profile", metavar="FILE",
                    help="after the logged steps, profile one more step (torch.profiler, CPU and CUDA) and "
                         "write its table of kernels to FILE")
    args = ap.parse_args(argv)
    for name in ("batch", "seq", "accumulation", "steps", "val_batches"):
        if getattr(args, name) < 1:
            print(f"gpt2_torch: error: --{name.replace('_', '-')} must be at least 1", file=sys.stderr)
            return 2
    for name, path in (("--out", args.out), ("--profile", args.profile)):
        if path and not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            print(f"gpt2_torch: error: {name} {path}: its folder does not exist", file=sys.stderr)
            return 2
    try:
        train(args)
    except Failure as e:
        print(f"gpt2_torch: error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
