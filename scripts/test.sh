#!/usr/bin/env bash
# The test command of README.md (and of CI, through .ci/run): install the build dependencies,
# configure with the default preset, build everything, run the whole test suite. Ends with
# ctest's summary and exits with ctest's status.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/bootstrap.sh
cmake --preset default
cmake --build --preset default -j2
exec ctest --preset default -j2
