#!/usr/bin/env python3
"""The toolchain's version gates, run half: which images the CUDA driver loads
and runs on this machine's GPU.

Each case is one small kernel (it stores 42 for the host to read; the sm_90a
ones also execute wgmma.fence, an sm_90a-only instruction), assembled here by
ptxas into a cubin for one target, or handed to the driver as PTX text to
compile at load time (JIT). The driver API (libcuda, through ctypes) loads it
(cuModuleLoadData), and where that succeeds launches it and reads the value
back. Each answer stands beside what NVIDIA's documentation predicts: a cubin
runs on devices of its major version with an equal or higher minor (sm_80 code
does not run on sm_90); PTX is compiled at load time for the device when its
target is not above the device's; an "a" target's code runs on that exact
architecture only; the driver takes PTX ISA versions up to the one its CUDA
version introduced.

    scripts/driver_gates.py [--out DIR] [--commit SHA] [--ptxas PATH]

writes DIR/<date>_<commit>_driver_gates.csv with a JSON sidecar and prints one
line per case. Exit 77 without a GPU or a ptxas.
"""
import argparse
import ctypes
import os
import platform
import socket
import subprocess
import sys
import tempfile

import version_gates as vg

SKIPPED = 77

KERNEL = """.version {version}
.target {target}
.address_size 64

.visible .entry gate(.param .u64 out_param)
{{
    .reg .b64 out;
    .reg .b32 v;
    ld.param.u64 out, [out_param];
    cvta.to.global.u64 out, out;
    {extra}
    mov.b32 v, 42;
    st.global.b32 [out], v;
    ret;
}}
"""


def kernel(target, version):
    extra = "wgmma.fence.sync.aligned;" if target.endswith("a") and target.startswith("sm_90") else ""
    return KERNEL.format(target=target, version=version, extra=extra)


# (name, form, target, PTX ISA version, the documented expectation on an sm_90 device, why)
CASES = (
    ("cubin sm_90a", "cubin", "sm_90a", "8.0", True, "a cubin for the device's exact architecture"),
    ("cubin sm_90", "cubin", "sm_90", "8.0", True, "a cubin for the device's architecture"),
    ("cubin sm_80", "cubin", "sm_80", "8.0", False, "a cubin runs only on its own major version (8.x code on 9.0: no)"),
    ("cubin sm_89", "cubin", "sm_89", "8.0", False, "a cubin runs only on its own major version"),
    ("cubin sm_100a", "cubin", "sm_100a", "8.6", False, "a cubin of a later architecture"),
    ("cubin sm_120a", "cubin", "sm_120a", "8.7", False, "a cubin of a later architecture"),
    ("PTX sm_80, version 7.8", "ptx", "sm_80", "7.8", True, "PTX of an earlier target is compiled for the device"),
    ("PTX sm_90, version 8.0", "ptx", "sm_90", "8.0", True, "PTX of the device's target"),
    ("PTX sm_90a, version 8.0", "ptx", "sm_90a", "8.0", True,
     "PTX of the device's accelerated target, on that exact architecture"),
    ("PTX sm_90, version 9.0", "ptx", "sm_90", "9.0", True, "PTX ISA 9.0 is CUDA 13.0's"),
    ("PTX sm_90, version 9.1", "ptx", "sm_90", "9.1", False,
     "PTX ISA 9.1 came with CUDA 13.1: a CUDA 13.0 driver does not know it"),
    ("PTX sm_100a, version 8.6", "ptx", "sm_100a", "8.6", False, "PTX of a target above the device's"),
)


class Driver:
    """The few driver-API calls the cases need."""

    def __init__(self):
        self.cu = ctypes.CDLL("libcuda.so.1")
        self.check(self.cu.cuInit(0), "cuInit")
        dev = ctypes.c_int()
        self.check(self.cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
        self.dev = dev
        self.ctx = ctypes.c_void_p()
        self.check(self.cu.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), dev), "cuDevicePrimaryCtxRetain")
        self.check(self.cu.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")
        name = ctypes.create_string_buffer(256)
        self.cu.cuDeviceGetName(name, 256, dev)
        self.name = name.value.decode()
        major, minor, version = ctypes.c_int(), ctypes.c_int(), ctypes.c_int()
        self.cu.cuDeviceGetAttribute(ctypes.byref(major), 75, dev)  # COMPUTE_CAPABILITY_MAJOR
        self.cu.cuDeviceGetAttribute(ctypes.byref(minor), 76, dev)  # COMPUTE_CAPABILITY_MINOR
        self.cu.cuDriverGetVersion(ctypes.byref(version))
        self.cc = f"{major.value}.{minor.value}"
        self.driver = f"{version.value // 1000}.{version.value % 1000 // 10}"

    def error(self, code):
        s = ctypes.c_char_p()
        self.cu.cuGetErrorName(code, ctypes.byref(s))
        return s.value.decode() if s.value else f"CUresult {code}"

    def check(self, code, what):
        if code != 0:
            raise RuntimeError(f"{what}: {self.error(code)}")

    def load_and_run(self, image):
        """(loaded, ran, value, message): cuModuleLoadData, then one launch of
        `gate` (128 threads) and the value it stored."""
        mod = ctypes.c_void_p()
        rc = self.cu.cuModuleLoadData(ctypes.byref(mod), ctypes.c_char_p(image))
        if rc != 0:
            return False, False, None, self.error(rc)
        try:
            fn = ctypes.c_void_p()
            self.check(self.cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"gate"), "cuModuleGetFunction")
            dptr = ctypes.c_uint64()
            self.check(self.cu.cuMemAlloc_v2(ctypes.byref(dptr), ctypes.c_size_t(4)), "cuMemAlloc")
            try:
                self.check(self.cu.cuMemsetD32_v2(dptr, ctypes.c_uint(0xFFFFFFFF), ctypes.c_size_t(1)), "cuMemsetD32")
                arg = ctypes.c_uint64(dptr.value)
                params = (ctypes.c_void_p * 1)(ctypes.cast(ctypes.pointer(arg), ctypes.c_void_p))
                rc = self.cu.cuLaunchKernel(fn, 1, 1, 1, 128, 1, 1, 0, None, params, None)
                if rc == 0:
                    rc = self.cu.cuCtxSynchronize()
                if rc != 0:
                    return True, False, None, self.error(rc)
                out = ctypes.c_uint32()
                self.check(self.cu.cuMemcpyDtoH_v2(ctypes.byref(out), dptr, ctypes.c_size_t(4)), "cuMemcpyDtoH")
                return True, out.value == 42, out.value, ""
            finally:
                self.cu.cuMemFree_v2(dptr)
        finally:
            self.cu.cuModuleUnload(mod)


def image_of(form, target, version, ptxas, work):
    """The bytes the driver gets (a cubin, or PTX text with its NUL), or the
    assembler's refusal."""
    text = kernel(target, version)
    if form == "ptx":
        return text.encode() + b"\0", ""
    src, cubin = os.path.join(work, "gate.ptx"), os.path.join(work, "gate.cubin")
    with open(src, "w") as f:
        f.write(text)
    r = subprocess.run([ptxas, f"-arch={target}", src, "-o", cubin], capture_output=True, text=True)
    if r.returncode != 0:
        return None, vg.first_message(r.stderr)
    with open(cubin, "rb") as f:
        return f.read(), ""


HEADER = ["run_id", "host", "device", "compute_capability", "driver", "case", "form", "target", "ptx_version",
          "loaded", "ran", "value", "documented", "agrees", "message", "why"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the CSV and its JSON sidecar (none: print only)")
    ap.add_argument("--commit", help="the commit to name the files after (default: this checkout's HEAD)")
    ap.add_argument("--ptxas", help="the ptxas that assembles the cubins")
    args = ap.parse_args(argv)
    ptxas = vg.find_ptxas(args.ptxas)
    if ptxas is None:
        print("driver_gates: no ptxas found: skipped", file=sys.stderr)
        return SKIPPED
    try:
        drv = Driver()
    except (OSError, RuntimeError) as e:
        print(f"driver_gates: no CUDA device ({e}): skipped", file=sys.stderr)
        return SKIPPED
    run_id, host = vg.make_run_id(), socket.gethostname() or "unknown"
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name, form, target, version, expected, why in CASES:
            image, refusal = image_of(form, target, version, ptxas, work)
            if image is None:
                loaded, ran, value, message = False, False, None, "ptxas: " + refusal
            else:
                loaded, ran, value, message = drv.load_and_run(image)
            rows.append([run_id, host, drv.name, drv.cc, drv.driver, name, form, target, version, int(loaded),
                         int(ran), "" if value is None else value, int(expected), int(ran == expected), message, why])
            print(f"{name:<26} {'loaded' if loaded else 'refused':<8} {'ran (42)' if ran else '':<9} "
                  f"{'' if ran == expected else 'DISAGREES '}{message}")
    commit, dirty = (args.commit, False) if args.commit else vg.default_commit()
    side = {"run_id": run_id, "what": "driver_gates", "tool": "scripts/driver_gates.py", "git_commit": commit,
            "git_dirty": dirty, "ptxas": ptxas, "ptxas_version": vg.ptxas_version(ptxas), "driver": drv.driver,
            "environment": {"host": host, "gpu_name": drv.name, "compute_capability": drv.cc,
                            "os": platform.platform(), "python": platform.python_version()}}
    if args.out:
        vg.write_run(args.out, "driver_gates", HEADER, rows, side)
    return 0


if __name__ == "__main__":
    sys.exit(main())
