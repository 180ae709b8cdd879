"""Cap JAX's YNNPACK kernels to AVX2+FMA for the AVX2 peer runs.

Put this directory on PYTHONPATH (with the usual caps, see docs/performance.md):
`XLA_FLAGS=--xla_cpu_max_isa=AVX2` caps the code XLA
generates, but jaxlib 0.12 sends its matrix products to YNNPACK, which picks
its kernels from CPUID and so runs `dot_fp32_*_avx512` on an AVX-512 machine
whatever the flag says. An AVX2 machine (AMD Zen 3) would run YNNPACK's
`*_fma3` kernels. YNNPACK caches what the CPU supports in the function-local
static of `ynn::get_supported_arch_flags()`; after `import jax` this module
stores the flags an AVX2+FMA CPU reports there (sse2 | ssse3 | sse41 | avx |
f16c | avx2 | fma3 = 0x7f, ynnpack/base/arch.h) and marks the static as
initialized, so every later kernel choice is the one a Zen 3 gets.

Only active when SPECC_PEER_YNN_AVX2=1. Prints one line to stderr saying what
it did, or why it could not (then the run is not a valid AVX2 emulation), and
appends it to the file SPECC_PEER_YNN_LOG names, if any (the peer drivers
discard their workers' stderr).
"""
import os
import sys

AVX2_FMA3_FLAGS = 0x7F
FLAGS_SYMBOL = "_ZZN3ynn24get_supported_arch_flagsEvE5flags"
GUARD_SYMBOL = "_ZGVZN3ynn24get_supported_arch_flagsEvE5flags"


def _symbols(path):
    import subprocess

    out = subprocess.run(["nm", path], capture_output=True, text=True, check=True).stdout
    found = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[2] in (FLAGS_SYMBOL, GUARD_SYMBOL):
            found[parts[2]] = int(parts[0], 16)
    return found


def _load_base(path):
    real = os.path.realpath(path)
    with open("/proc/self/maps") as maps:
        for line in maps:
            fields = line.split()
            if len(fields) >= 6 and os.path.realpath(fields[5]) == real and int(fields[2], 16) == 0:
                return int(fields[0].split("-")[0], 16)
    return None


def _cap_ynnpack():
    import ctypes

    import jaxlib

    path = os.path.join(os.path.dirname(jaxlib.__file__), "libjax_common.so")
    base = _load_base(path)
    if base is None:
        return "libjax_common.so is not mapped"
    syms = _symbols(path)
    if set(syms) != {FLAGS_SYMBOL, GUARD_SYMBOL}:
        return "YNNPACK's arch-flags static not found in libjax_common.so"
    flags = ctypes.c_uint64.from_address(base + syms[FLAGS_SYMBOL])
    guard = ctypes.c_uint8.from_address(base + syms[GUARD_SYMBOL])
    before = flags.value if guard.value else None
    flags.value = AVX2_FMA3_FLAGS
    guard.value = 1
    return "YNNPACK arch flags %s -> 0x%x (AVX2+FMA)" % (
        "unset" if before is None else hex(before), AVX2_FMA3_FLAGS)


class _AfterJaxImport:
    """A meta-path finder that runs the cap once `jax` has been imported."""

    def find_spec(self, name, path=None, target=None):
        if name != "jax":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(name)
        if spec is None or spec.loader is None:
            return spec
        exec_module = spec.loader.exec_module

        def exec_and_cap(module):
            exec_module(module)
            try:
                msg = _cap_ynnpack()
            except Exception as e:  # report, never break the peer
                msg = "failed: %r" % (e,)
            print("specc avx2_peers: " + msg, file=sys.stderr)
            log = os.environ.get("SPECC_PEER_YNN_LOG")
            if log:
                with open(log, "a") as f:
                    f.write("%d %s\n" % (os.getpid(), msg))

        spec.loader.exec_module = exec_and_cap
        return spec


if os.environ.get("SPECC_PEER_YNN_AVX2") == "1":
    sys.meta_path.insert(0, _AfterJaxImport())
