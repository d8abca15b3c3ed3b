# The compiler's pass tests: each .mlir file runs quiver-opt with one qv- pass (or a target's
# pipeline) and checks the output with FileCheck. ctest runs them (tests/compiler/lit.cmake),
# passing the tools' paths as lit parameters.
import os

import lit.formats

config.name = "quiver-passes"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".mlir", ".test"]
config.test_source_root = os.path.dirname(__file__)
config.excludes = ["Inputs"]


def tool(name):
    path = lit_config.params.get(name)
    if not path:
        lit_config.fatal("lit parameter '%s' is missing (run through ctest: tests/compiler/lit.cmake)" % name)
    return path


config.test_exec_root = lit_config.params.get("exec_root", os.path.join(config.test_source_root, "Output"))
config.substitutions.append(("%quiver-opt", tool("quiver_opt")))
config.substitutions.append(("%quiverc", tool("quiverc")))
config.substitutions.append(("%FileCheck", tool("filecheck")))
config.substitutions.append(("%kernels", tool("kernels_dir")))
config.environment["PATH"] = os.environ.get("PATH", "/usr/bin:/bin")
