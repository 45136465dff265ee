#!/usr/bin/env python3
"""Runs rigel's GPU tests (ctest label gpu) on a machine that has the rigel
binary but no build tree: the H200 machine on a prebuilt visit.

scripts/stage_prebuilt.sh writes the tests as ctest describes them
(`ctest --show-only=json-v1 -L gpu`, with the build folder they were
configured in) into gpu_tests.json. Each test's command names binaries and
folders under that build folder; here they are mapped onto BUILD, the folder
the visit unpacked the binaries into. A test whose binary was not staged is
reported as not run, never as passed. Every test keeps its own timeout and skip
code; each verdict is logged as its test ends (a long test does not hold back
the verdicts of those that ended after it started), and the log ends with
ctest's summary line, which the visit script reads. Stopped by SIGTERM or
SIGINT (the visit's time limit), it still writes the verdicts it has, names
the tests it leaves unfinished, and exits 124.

Usage: run_gpu_tests.py TESTS_JSON --build BUILD [-j N] [--regex RE] [--log FILE]
"""
import argparse
import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import time


def properties(test):
    return {p["name"]: p["value"] for p in test.get("properties", [])}


def mapped(word, source_build, build):
    if word == source_build or word.startswith(source_build + "/"):
        return build + word[len(source_build):]
    return word


def run_one(test, source_build, build):
    props = properties(test)
    command = [mapped(w, source_build, build) for w in test["command"]]
    if not os.access(command[0], os.X_OK):
        return test["name"], "not run", f"{command[0]} was not staged", 0.0
    cwd = mapped(props.get("WORKING_DIRECTORY", build), source_build, build)
    os.makedirs(cwd, exist_ok=True)
    timeout = float(props.get("TIMEOUT", 1500))
    start = time.monotonic()
    try:
        done = subprocess.run(command, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              timeout=timeout, text=True, errors="replace")
    except subprocess.TimeoutExpired as e:
        out = e.stdout if isinstance(e.stdout, str) else (e.stdout or b"").decode(errors="replace")
        return test["name"], "timeout", out, time.monotonic() - start
    seconds = time.monotonic() - start
    if done.returncode == props.get("SKIP_RETURN_CODE", -1):
        return test["name"], "skipped", done.stdout, seconds
    return test["name"], "passed" if done.returncode == 0 else f"failed (rc {done.returncode})", done.stdout, seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tests_json")
    parser.add_argument("--build", required=True, help="the folder the staged binaries were unpacked into")
    parser.add_argument("-j", type=int, default=4, help="tests run at once (default 4)")
    parser.add_argument("--regex", default="", help="only tests whose names match (as ctest -R)")
    parser.add_argument("--log", default="-", help="where the outputs and the summary go (default stdout)")
    args = parser.parse_args()
    with open(args.tests_json) as f:
        staged = json.load(f)
    source_build = staged["build_dir"].rstrip("/")
    build = os.path.abspath(args.build)
    tests = [t for t in staged["tests"] if re.search(args.regex, t["name"])]
    if not tests:
        print(f"run_gpu_tests: no test in {args.tests_json} matches '{args.regex}'", file=sys.stderr)
        return 2
    log = sys.stdout if args.log == "-" else open(args.log, "w")
    results = []
    stopped = []

    def stop(signum, _frame):
        stopped.append(signal.Signals(signum).name)
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=args.j)
    futures = {pool.submit(run_one, t, source_build, build): t["name"] for t in tests}
    try:
        for future in concurrent.futures.as_completed(futures):
            name, verdict, output, seconds = future.result()
            results.append((name, verdict))
            print(f"==== {name}: {verdict} ({seconds:.1f} s)", file=log)
            if verdict != "passed":
                print(output.rstrip()[-6000:], file=log)
            log.flush()
    except KeyboardInterrupt:
        pass
    # From here on a stop would cut the summary short: it is written whole.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    unfinished = [futures[f] for f in futures if not f.done()]
    passed = sum(v == "passed" for _, v in results)
    failed = [n for n, v in results if v not in ("passed", "skipped", "not run")]
    not_run = [n for n, v in results if v == "not run"]
    percent = 100 * passed // len(tests)
    print(f"\n{percent}% tests passed, {len(failed)} tests failed out of {len(tests)}"
          + (f" ({len(not_run)} not run, their binaries not staged: {' '.join(not_run)})" if not_run else "")
          + (f" (stopped by {stopped[0]}; unfinished: {' '.join(unfinished)})" if stopped else ""), file=log)
    for name in failed:
        print(f"  {name}: {dict(results)[name]}", file=log)
    log.flush()
    if stopped:
        # The tests still running are the caller's to end (the visit kills what it started); the
        # pool's threads would wait for them.
        os._exit(124)
    pool.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
