# lit configuration of the fi test suite (dialect, verifiers, C API, examples).
import os

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "FI"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".c", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.fi_obj_root, "test")
# Runtime and GPU tests run under ctest, not lit; C API sources are compiled by CMake.
config.excludes = ["CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "runtime", "gpu",
                   "common"]

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%fi_src_root", config.fi_src_root))
config.substitutions.append(("%fi_obj_root", config.fi_obj_root))

# The sanitizer stage (scripts/sanitize.sh) runs the suite with an instrumented fi-opt and
# runtime: its options and the preloaded ASan runtime reach every process.
llvm_config.with_system_environment(["HOME", "INCLUDE", "LIB", "TMP", "TEMP", "ASAN_OPTIONS",
                                     "UBSAN_OPTIONS", "LD_PRELOAD"])
llvm_config.use_default_substitutions()

# FileCheck, not, count come from LLVM's tools directory; fi's tools from the build.
tool_dirs = [config.fi_tools_dir, config.llvm_tools_dir]
tools = [
    "fi-opt",
    ToolSubst("fi-capi-test", unresolved="ignore"),
    "mlir-opt",
]
llvm_config.add_tool_substitutions(tools, tool_dirs)
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.fi_tools_dir, append_path=True)

# FiPlugin.so (tools/fi-plugin): fi loaded into the stock mlir-opt.
fi_plugin = os.path.join(config.fi_obj_root, "lib", "FiPlugin.so")
if os.path.exists(fi_plugin):
    config.available_features.add("fi-plugin")
    config.substitutions.append(("%fi_plugin", fi_plugin))

# The variant kernels' bitcode (built with the CUDA backend by clang): the tests of the
# NVPTX path of variants need it.
if config.fi_variant_bitcode and os.path.exists(config.fi_variant_bitcode):
    config.available_features.add("fi-variant-bitcode")
    config.substitutions.append(("%fi_variant_bitcode", config.fi_variant_bitcode))
    config.substitutions.append(("%fi_cuda_toolkit", config.fi_cuda_toolkit))
